//! Lints (`W` codes): warnings that leave the manifest valid. One file per lint, named as its
//! code's name (`W008` `tools-empty` is `tools_empty.rs`): its doc says what it checks, its
//! `EXPLANATION` is what `servio explain CODE` prints, and beside it `tools_empty.json` is a
//! manifest that raises it, whose diagnostics are a snapshot (`snapshots/`, by
//! [`crate::rules::fixture_test!`]). A new lint is that file, its fixture, a line here and a row
//! in [`crate::rules`]; `xtask`'s tidy tests hold the names. Errors are in [`crate::errors`],
//! the brief's errors in [`crate::brief_errors`], laid out alike.

pub(crate) mod default_valid;
pub(crate) mod description_vague;
pub(crate) mod hidden_text;
pub(crate) mod metric_key_granularity;
pub(crate) mod prefixed_name_length;
pub(crate) mod property_description;
pub(crate) mod required_in_properties;
pub(crate) mod tool_name_convention;
pub(crate) mod tools_empty;
pub(crate) mod unknown_field;
pub(crate) mod version_semver;

use crate::diagnostic::Diagnostic;
use crate::schema::{Keywords, PatternSteps, SchemaPath};

/// The lints that look inside an `input_schema`, for one subschema; called from the walk
/// that `crate::schema::check_input_schema` makes anyway.
pub(crate) fn schema_lints(
    schema: &Keywords<'_>,
    path: &SchemaPath<'_>,
    warnings: &mut Vec<Diagnostic>,
    pattern_steps: &mut PatternSteps,
) {
    property_description::check(schema, path, warnings);
    required_in_properties::check(schema, path, warnings);
    default_valid::check(schema, path, warnings, pattern_steps);
}
