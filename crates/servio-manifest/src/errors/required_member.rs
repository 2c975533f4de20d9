//! E010 `required-member`: every required member is present.
//!
//! Raised wherever the manifest is read, by [`crate::fields::Object::required`] and the readers
//! built on it, with the codes [`crate::fields::MANIFEST`]; in the brief the same reader
//! reports B001 (`brief-shape`) instead.

/// What `servio explain E010` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that every required member is present: `name`, `version`, `server`, `server.url`, `auth`, `auth.type`, `tools`, and each tool's `name`, `description` and `input_schema` (and, in a brief, `metrics` and each metric's `key`, `tool` and `valuePath`).\n\nWhy: the platform cannot show, authenticate or call a site without them.\n\nExample:\n    { \"name\": \"Forum\", \"server\": { \"url\": \"https://forum.example.com/api\" } }\n\nFix: add the member the message names, at the pointer it gives.";

crate::rules::fixture_test!("required_member.json", RequiredMember);
