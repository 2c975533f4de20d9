//! W005 `required-in-properties`: a `required` name missing from `properties`.
//!
//! Usually a typo: the AI is told to send an argument it knows nothing about.

use crate::diagnostic::Diagnostic;
use crate::rules::Code;
use crate::schema::{Keywords, SchemaPath};

/// What `servio explain W005` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a name listed in `required` is not defined in the same schema's `properties`.\n\nWhy: usually a typo; the AI is told to send an argument it knows nothing about.\n\nExample:\n    \"properties\": { \"query\": {...} }, \"required\": [\"qeury\"]\n\nFix: correct the name, or define the property.";

crate::rules::fixture_test!("required_in_properties.json", RequiredInProperties);

pub(crate) fn check(schema: &Keywords<'_>, path: &SchemaPath<'_>, warnings: &mut Vec<Diagnostic>) {
    let Some(required) = schema.required else {
        return;
    };
    let properties = schema.properties;
    for (i, name) in required.iter().enumerate() {
        let Some(name) = name.as_str() else { continue };
        if properties.is_some_and(|p| p.contains_key(name)) {
            continue;
        }
        let known: Vec<&str> = properties.map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
        let help = match crate::suggest::closest(name, &known) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!("define `{name}` under `properties`, or remove it from `required`"),
        };
        let at = path.pointer().child("required").index(i);
        warnings.push(
            Diagnostic::at(
                Code::RequiredInProperties,
                at,
                format!("required name `{name}` is not defined in `properties`"),
            )
            .with_help(help),
        );
    }
}
