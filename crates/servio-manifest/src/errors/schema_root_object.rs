//! E051 `schema-root-object`: each `input_schema` is an object whose root `type` is "object".
//!
//! Checked first in [`crate::schema::check_input_schema`]: a schema that is not an object is
//! not walked any further.

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::kind_of;

/// What `servio explain E051` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that each `input_schema` is an object whose root `type` is \"object\".\n\nWhy: tool arguments are sent as one JSON object; a schema for anything else cannot describe them.\n\nExample:\n    \"input_schema\": { \"type\": \"array\", \"items\": { \"type\": \"string\" } }\n\nFix: wrap the arguments in an object: { \"type\": \"object\", \"properties\": { \"items\": { \"type\": \"array\", ... } } }.";

crate::rules::fixture_test!("schema_root_object.json", SchemaRootObject);

/// The members of the `input_schema` `schema`, at `at`, when it is an object; an E051 in `out`
/// when it is not, or when its root `type` is missing or other than "object".
pub(crate) fn check<'a>(schema: &'a Value, at: &Pointer, out: &mut Vec<Diagnostic>) -> Option<&'a Map<String, Value>> {
    let Some(object) = schema.as_object() else {
        out.push(
            Diagnostic::at(
                Code::SchemaRootObject,
                at.clone(),
                format!("input_schema must be an object, found {}", kind_of(schema)),
            )
            .with_help("write { \"type\": \"object\", \"properties\": { ... } }"),
        );
        return None;
    };
    match object.get("type") {
        None => out.push(
            Diagnostic::missing(Code::SchemaRootObject, at, "type", "input_schema has no root `type`")
                .with_help("add \"type\": \"object\": tool arguments are always one JSON object"),
        ),
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => out.push(
            Diagnostic::at(
                Code::SchemaRootObject,
                at.child("type"),
                format!("input_schema root `type` must be \"object\", found {other}"),
            )
            .with_help("tool arguments are sent as one JSON object; wrap other values in a property"),
        ),
    }
    Some(object)
}
