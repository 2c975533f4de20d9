//! W004 `property-description`: a property without a `description`.
//!
//! The AI uses property descriptions to choose argument values. A property that is only a
//! `$ref` is left alone: its description lives where it points. Checked on each property's
//! own schema as the walk reaches it, so no property is looked up twice.

use crate::diagnostic::Diagnostic;
use crate::rules::Code;
use crate::schema::{Keywords, SchemaPath};

/// What `servio explain W004` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a property in an input_schema has no `description`.\n\nWhy: the AI uses property descriptions to choose correct argument values.\n\nExample:\n    \"sort\": { \"type\": \"string\", \"enum\": [\"relevance\", \"date\"] }\n\nFix: add \"description\": \"Sort order for results\".";

crate::rules::fixture_test!("property_description.json", PropertyDescription);

pub(crate) fn check(schema: &Keywords<'_>, path: &SchemaPath<'_>, warnings: &mut Vec<Diagnostic>) {
    if schema.described || schema.has_ref {
        return;
    }
    let Some(name) = path.property_name() else {
        return;
    };
    warnings.push(
        Diagnostic::at_key(Code::PropertyDescription, path.pointer(), format!("property `{name}` has no description"))
            .with_help("add \"description\": what the value means and which values are good"),
    );
}
