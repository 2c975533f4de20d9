//! W006 `default-valid`: a `default` must validate against the schema it sits in.
//!
//! Defaults are shown to the AI as good values; a default of the wrong type teaches it to
//! send wrong arguments.

use crate::diagnostic::Diagnostic;
use crate::rules::Code;
use crate::schema::{Keywords, PatternSteps, SchemaPath, default_is_valid_within};

/// What `servio explain W006` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a `default` does not validate against the schema it sits in.\n\nWhy: defaults are shown to the AI as a good value; a default of the wrong type teaches it to send wrong arguments.\n\nExample:\n    \"limit\": { \"type\": \"integer\", \"default\": \"10\" }\n\nFix: write \"default\": 10.";

crate::rules::fixture_test!("default_valid.json", DefaultValid);

/// W006 for `schema`'s default, matched against its patterns within the check's
/// `pattern_steps`.
pub(crate) fn check(
    schema: &Keywords<'_>,
    path: &SchemaPath<'_>,
    warnings: &mut Vec<Diagnostic>,
    pattern_steps: &mut PatternSteps,
) {
    let Some(default) = schema.default else {
        return;
    };
    if default_is_valid_within(schema, default, pattern_steps) == Some(false) {
        warnings.push(
            Diagnostic::at(
                Code::DefaultValid,
                path.pointer().child("default"),
                format!("default {default} does not match its own schema"),
            )
            .with_help("change the default, or the schema, so that the one fits the other"),
        );
    }
}
