//! E041 `tool-name-characters`: tool names use only the characters `A-Z a-z 0-9 _ . -`.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain E041` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that tool names use only the characters `A-Z a-z 0-9 _ . -`.\n\nWhy: tool names travel in URL paths (`POST {server.url}/tools/{name}`) and, prefixed, into AI model APIs that accept only letters, digits, `_` and `-`.\n\nExample:\n    \"name\": \"forum search\"\n\nFix: write it as `forum.search` or `forum_search`.";

crate::rules::fixture_test!("tool_name_characters.json", ToolNameCharacters);

/// Whether the tool name `name`, at `at`, uses only allowed characters; when not, an E041 in
/// `errors` names each other character once and writes the name with `_` in their place.
pub(crate) fn check(name: &str, at: &Pointer, errors: &mut Vec<Diagnostic>) -> bool {
    let mut bad: Vec<char> = Vec::new();
    for c in name.chars().filter(|c| !allowed(*c)) {
        if !bad.contains(&c) {
            bad.push(c);
        }
    }
    if bad.is_empty() {
        return true;
    }
    let shown = bad.iter().map(|c| crate::suggest::describe_char(*c)).collect::<Vec<_>>().join(", ");
    let them = if bad.len() == 1 { "a character that is" } else { "characters that are" };
    let fixed: String = name.chars().map(|c| if allowed(c) { c } else { '_' }).collect();
    errors.push(
        Diagnostic::at(
            Code::ToolNameCharacters,
            at.clone(),
            format!("tool name {name:?} has {them} not allowed: {shown}"),
        )
        .with_help(format!("tool names use only A-Z a-z 0-9 _ . -; write {fixed:?}")),
    );
    false
}

/// `A-Z a-z 0-9 _ . -`.
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}
