//! E012 `blank-string`: required strings are not empty or only white space.
//!
//! Raised wherever a required string is read, by [`crate::fields::Object::required_str`] with
//! the codes [`crate::fields::MANIFEST`]; in the brief the same reader reports B001
//! (`brief-shape`) instead.

/// What `servio explain E012` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that required strings are not empty and not only white space.\n\nWhy: an empty name or description is as good as a missing one, and harder to spot.\n\nExample:\n    \"name\": \"   \"\n\nFix: write the text, or remove the tool if it is a placeholder.";

crate::rules::fixture_test!("blank_string.json", BlankString);
