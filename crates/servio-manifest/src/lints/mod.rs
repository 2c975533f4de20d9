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

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::schema::for_each_subschema;

/// The lints that look inside an `input_schema`, in one walk over its subschemas.
pub(crate) fn schema_lints(schema: &Value, at: &Pointer, warnings: &mut Vec<Diagnostic>) {
    let mut path = at.as_str().to_owned();
    for_each_subschema(schema, &mut path, &mut |sub, path| {
        property_description::check(sub, path, warnings);
        required_in_properties::check(sub, path, warnings);
        default_valid::check(sub, path, warnings);
    });
}
