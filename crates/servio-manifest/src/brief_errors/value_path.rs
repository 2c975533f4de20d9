//! B040 `value-path`: each `valuePath` is a dotted path: non-empty segments separated by
//! `.`, where a segment of digits indexes an array; not JSONPath.
//!
//! The grammar is [`crate::value::ValuePath::parse`]'s, which `servio brief extract` shares.

use crate::diagnostic::{Diagnostic, Fix};
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::value::ValuePath;

/// What `servio explain B040` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that `valuePath` is a dotted path: non-empty segments separated by `.`, where a segment of digits indexes an array. It is not JSONPath: a leading `$`, brackets and `*` are errors.\n\nWhy: a selection the platform cannot audit is a selection it cannot trust.\n\nExample:\n    \"valuePath\": \"$.data.rows[0].count\"\n\nFix: write data.rows.0.count.";

crate::rules::fixture_test!("value_path.json", ValuePath);

/// The `valuePath` `text`, at `at`, parsed; a B040 in `errors` when it does not parse.
pub(crate) fn check(text: &str, at: Pointer, errors: &mut Vec<Diagnostic>) -> Option<ValuePath> {
    match ValuePath::parse(text) {
        Ok(path) => Some(path),
        Err(e) => {
            let diagnostic = Diagnostic::at(Code::ValuePath, at, e.message).with_help_opt(e.help);
            errors.push(match e.rewrite {
                Some(path) => diagnostic.with_fix(Fix::Replace(path.into())),
                None => diagnostic,
            });
            None
        }
    }
}
