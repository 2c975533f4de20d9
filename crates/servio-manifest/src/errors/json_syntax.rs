//! E001 `json-syntax`: the manifest is syntactically valid JSON (RFC 8259).
//!
//! Raised by the parser ([`crate::json::parse`]), whose error [`crate::check`] turns into this
//! diagnostic; [`help`] says what to do about the commonest mistakes.

/// What `servio explain E001` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that the manifest is syntactically valid JSON (RFC 8259).\n\nWhy: nothing else can be read from a document that does not parse. JSON allows no comments, no trailing commas and no single quotes.\n\nExample:\n    { \"name\": \"Forum\", }\n\nFix: remove the trailing comma, quote every member name with double quotes, and check that every bracket is closed.";

crate::rules::fixture_test!("json_syntax.json", JsonSyntax);

/// The help for the parser's `message`, for the mistakes people make most: a trailing comma,
/// an unquoted name, a document that ends early, single quotes or comments, a second value.
pub(crate) fn help(message: &str) -> Option<String> {
    Some(
        match message {
            "trailing comma" => "remove this comma: JSON allows none after the last member or element",
            m if m.starts_with("key must be a string") => "member names need double quotes: \"name\"",
            m if m.starts_with("EOF while parsing") => "the document ends early: close every { and [",
            m if m.starts_with("expected value") => "single quotes, comments and bare words are not JSON",
            "trailing characters" => "a manifest is exactly one JSON object",
            _ => return None,
        }
        .to_owned(),
    )
}
