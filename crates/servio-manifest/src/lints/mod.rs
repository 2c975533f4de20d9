//! Lints: warnings that leave the manifest valid. One file per lint; each file's doc says
//! what it checks and why, and `servio explain CODE` prints the full text from
//! [`crate::rules`].

pub(crate) mod default_valid;
pub(crate) mod description_vague;
pub(crate) mod metric_key_granularity;
pub(crate) mod prefixed_name_length;
pub(crate) mod property_description;
pub(crate) mod required_in_properties;
pub(crate) mod tool_name_convention;
pub(crate) mod tools_empty;
pub(crate) mod unknown_field;
pub(crate) mod version_semver;

use crate::diagnostic::Diagnostic;
use crate::schema::{Keywords, SchemaPath};

/// The lints that look inside an `input_schema`, for one subschema; called from the walk
/// that `crate::schema::check_input_schema` makes anyway.
pub(crate) fn schema_lints(schema: &Keywords<'_>, path: &SchemaPath<'_>, warnings: &mut Vec<Diagnostic>) {
    property_description::check(schema, path, warnings);
    required_in_properties::check(schema, path, warnings);
    default_valid::check(schema, path, warnings);
}
