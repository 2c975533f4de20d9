//! W004 `property-description`: a property without a `description`.
//!
//! The AI uses property descriptions to choose argument values. A property that is only a
//! `$ref` is left alone: its description lives where it points.

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

pub(crate) fn check(schema: &Map<String, Value>, path: &str, warnings: &mut Vec<Diagnostic>) {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return;
    };
    for (name, property) in properties {
        let Value::Object(property) = property else {
            continue;
        };
        if property.contains_key("description") || property.contains_key("$ref") {
            continue;
        }
        let at = Pointer::parse(path)
            .unwrap_or_default()
            .child("properties")
            .child(name);
        warnings.push(
            Diagnostic::at_key(
                Code::PropertyDescription,
                at,
                format!("property `{name}` has no description"),
            )
            .with_help("add \"description\": what the value means and which values are good"),
        );
    }
}
