//! W011 `hidden-text`: a string or member name holds characters a person does not see.
//!
//! Unicode tag characters spell text that browsers draw as nothing but models read;
//! bidirectional controls reorder what is drawn; zero-width characters take no room
//! (interpretation §9, [`crate::hidden`]). They leave a manifest valid, but whoever reviews
//! it, or approves a change to it, should see everything an AI will read.

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::hidden;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W011` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a string or a member name anywhere in the manifest holds characters a person does not see: Unicode tag characters (U+E0000 to U+E007F, which spell ASCII text invisibly), bidirectional controls (U+202A to U+202E, U+2066 to U+2069) or zero-width characters (U+200B to U+200D, U+2060, U+FEFF). The warning decodes what tag characters spell and names the others.\n\nWhy: an AI client reads every character of a description or a schema, while the person who reviews the manifest, or approves a change to it, sees none of these. Text hidden so can instruct a model behind the user's back; platforms show it to users when they approve a change.\n\nExample:\n    \"description\": \"Summarise sales for a date range.\\u{E0069}\\u{E0067}...\"  (tag characters spelling \"ignore previous instructions\")\n\nFix: remove the hidden characters; write what the AI should know where people can read it.";

crate::rules::fixture_test!("hidden_text.json", HiddenText);

/// How much of what a run spells a warning quotes: enough to read its intent.
const QUOTED: usize = 120;

/// How many values the walk looks at between two looks at its [`crate::Abandon`].
const BETWEEN_LOOKS: usize = 4096;

/// Warns at every string and member name of `document` that holds hidden characters; stops
/// early once `abandon` is set (the check is given up then, and its warnings with it).
pub(crate) fn check(document: &Value, abandon: &crate::Abandon, warnings: &mut Vec<Diagnostic>) {
    // An explicit stack: nesting is bounded by the parser, but not by much.
    let mut stack = vec![(Pointer::root(), document)];
    let mut seen = 0usize;
    while let Some((at, value)) = stack.pop() {
        seen += 1;
        if seen.is_multiple_of(BETWEEN_LOOKS) && abandon.is_set() {
            return;
        }
        match value {
            Value::String(text) => {
                if let Some(what) = hidden::summary(text) {
                    warnings.push(diagnostic(Diagnostic::at(Code::HiddenText, at, message("string", &what))));
                }
            }
            Value::Array(items) => stack.extend(items.iter().enumerate().map(|(i, item)| (at.index(i), item))),
            Value::Object(members) => {
                for (name, member) in members {
                    let member_at = at.child(name);
                    if let Some(what) = hidden::summary(name) {
                        let key =
                            Diagnostic::at_key(Code::HiddenText, member_at.clone(), message("member name", &what));
                        warnings.push(diagnostic(key));
                    }
                    stack.push((member_at, member));
                }
            }
            _ => {}
        }
    }
}

fn message(what: &str, hidden: &str) -> String {
    let mut quoted: String = hidden.chars().take(QUOTED).collect();
    if quoted.len() < hidden.len() {
        quoted.push('…');
    }
    format!("{what} holds characters a person does not see: {quoted}")
}

fn diagnostic(diagnostic: Diagnostic) -> Diagnostic {
    diagnostic.with_help("remove them: an AI reads what the person approving the manifest cannot see")
}
