//! B001 `brief-shape`: the brief has the shape the format gives it: `brief` an object,
//! `brief.metrics` an array of objects, each metric with `key`, `tool` and `valuePath` strings,
//! an optional `args` object and an optional `unit` string.
//!
//! Raised wherever the brief is read, by [`crate::fields::Object`]'s readers with the codes
//! [`crate::fields::BRIEF`], which report a missing member, a wrong type and a blank string
//! alike with this code (in the manifest proper they are E010, E011 and E012).

/// What `servio explain B001` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks the shape of the brief: `brief` is an object, `brief.metrics` an array of objects, and each metric has `key`, `tool` and `valuePath` strings, optional `args` object and optional `unit` string.\n\nWhy: a brief that fails validation is ignored in full, so that a typo costs collection instead of producing a silently wrong series.\n\nExample:\n    \"brief\": { \"metrics\": { \"key\": \"sales.revenue.daily\" } }\n\nFix: write `metrics` as an array: \"metrics\": [ { \"key\": ..., \"tool\": ..., \"valuePath\": ... } ].";

crate::rules::fixture_test!("brief_shape.json", BriefShape);
