//! E011 `member-type`: each known member has the JSON type the format gives it.
//!
//! Raised wherever the manifest is read, by [`crate::fields::Object`]'s readers with the codes
//! [`crate::fields::MANIFEST`], and for each entry of `auth.scopes` by `crate::validate`'s
//! reading of `auth`; in the brief the same readers report B001 (`brief-shape`) instead.

/// What `servio explain E011` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that each known member has the JSON type the format gives it: strings for names, URLs and descriptions, an object for `server`, `auth` and each tool, an array for `tools` and `auth.scopes`.\n\nWhy: a number where a string belongs is almost always a mistake that would show up later as a confusing failure.\n\nExample:\n    \"version\": 2\n\nFix: write the value with the type the message names, for instance \"version\": \"2.0.0\".";

crate::rules::fixture_test!("member_type.json", MemberType);
