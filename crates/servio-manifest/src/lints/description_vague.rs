//! W003 `description-vague`: a tool description of fewer than 5 words.
//!
//! The AI decides when and how to use a tool from its description; "Search threads" does not
//! say what is searched, what comes back or which filters exist.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W003` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a tool description has fewer than 5 words.\n\nWhy: the AI reads the description to decide when and how to use the tool.\n\nExample:\n    \"description\": \"Search threads\"\n\nFix: say what the tool does and returns: \"Search forum threads by keyword. Returns matching threads with title, author, date, and reply count.\"";

crate::rules::fixture_test!("description_vague.json", DescriptionVague);

const MIN_WORDS: usize = 5;

pub(crate) fn check(description: &str, at: &Pointer, warnings: &mut Vec<Diagnostic>) {
    // Counting stops at the threshold: descriptions can be long, and only short ones matter.
    let words = description.split_whitespace().take(MIN_WORDS).count();
    if words < MIN_WORDS {
        warnings.push(
            Diagnostic::at(
                Code::DescriptionVague,
                at.clone(),
                format!(
                    "tool description has {words} word{}, too few to guide an AI",
                    if words == 1 { "" } else { "s" }
                ),
            )
            .with_help("say what the tool does, what it returns and which filters it supports"),
        );
    }
}
