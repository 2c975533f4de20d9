//! W005 `required-in-properties`: a `required` name missing from `properties`.
//!
//! Usually a typo: the AI is told to send an argument it knows nothing about.

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

pub(crate) fn check(schema: &Map<String, Value>, path: &str, warnings: &mut Vec<Diagnostic>) {
    let Some(Value::Array(required)) = schema.get("required") else {
        return;
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for (i, name) in required.iter().enumerate() {
        let Some(name) = name.as_str() else { continue };
        if properties.is_some_and(|p| p.contains_key(name)) {
            continue;
        }
        let known: Vec<&str> = properties
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let help = match crate::suggest::closest(name, &known) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!("define `{name}` under `properties`, or remove it from `required`"),
        };
        let at = Pointer::parse(path)
            .unwrap_or_default()
            .child("required")
            .index(i);
        warnings.push(
            Diagnostic::at(
                Code::RequiredNotInProperties,
                at,
                format!("required name `{name}` is not defined in `properties`"),
            )
            .with_help(help),
        );
    }
}
