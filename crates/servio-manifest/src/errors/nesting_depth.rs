//! E004 `nesting-depth`: arrays and objects are nested at most [`crate::json::MAX_DEPTH`] (128)
//! levels deep.
//!
//! Raised by the parser ([`crate::json::parse`]), which stops at that depth, before the
//! document could exhaust its stack; [`crate::check`] turns its error into this diagnostic.

/// What `servio explain E004` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that arrays and objects are nested at most 128 levels deep (the top-level object is level 1).\n\nWhy: deep nesting is how a document exhausts a parser's stack; no real manifest needs it.\n\nExample:\n    { \"a\": [[[[[[ ... 130 levels ... ]]]]]] }\n\nFix: flatten the structure; an input_schema can use `$defs` and `$ref` instead of nesting.";

crate::rules::fixture_test!("nesting_depth.json", NestingDepth);
