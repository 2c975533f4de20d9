//! E052 `schema-supported-type`: every `type` in an `input_schema`, in any subschema, is one of the
//! supported types ([`crate::schema::SUPPORTED_TYPES`]); in a type array each entry is checked
//! on its own.
//!
//! [`check`] is called on each subschema during the walk [`crate::schema::check_input_schema`]
//! makes anyway.

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::{SUPPORTED_TYPES, SchemaPath, kind_of};

/// What `servio explain E052` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that every `type` in an `input_schema` (in any subschema: properties, items, allOf, $defs and the rest) is one of `string`, `number`, `integer`, `boolean`, `array`, `object`. In a type array each unsupported entry is reported on its own.\n\nWhy: these are the types the format supports; `null` and misspellings such as `int` or `strng` are not understood by AI clients.\n\nExample:\n    \"limit\": { \"type\": \"int\" }\n\nFix: use \"integer\" (or \"number\" for fractions); make a property optional by leaving it out of `required` instead of allowing null.";

crate::rules::fixture_test!("schema_supported_type.json", SchemaSupportedType);

/// Every `type` of the subschema at `path` names a supported type; in an array each entry on
/// its own.
pub(crate) fn check(type_: Option<&Value>, path: &SchemaPath<'_>, out: &mut Vec<Diagnostic>) {
    let at = || path.pointer().child("type");
    match type_ {
        Some(Value::String(name)) if !SUPPORTED_TYPES.contains(&name.as_str()) => {
            out.push(unsupported_type(at(), name));
        }
        Some(Value::Array(names)) => {
            for (i, name) in names.iter().enumerate() {
                match name.as_str() {
                    Some(n) if SUPPORTED_TYPES.contains(&n) => {}
                    Some(n) => out.push(unsupported_type(at().index(i), n)),
                    None => out.push(Diagnostic::at(
                        Code::SchemaSupportedType,
                        at().index(i),
                        format!("a `type` entry must be a type name, found {}", kind_of(name)),
                    )),
                }
            }
        }
        Some(other @ (Value::Number(_) | Value::Bool(_) | Value::Null | Value::Object(_))) => {
            out.push(Diagnostic::at(
                Code::SchemaSupportedType,
                at(),
                format!("`type` must be a type name, found {}", kind_of(other)),
            ));
        }
        _ => {}
    }
}

fn unsupported_type(pointer: Pointer, name: &str) -> Diagnostic {
    let suggestion = match name {
        "int" | "long" | "Integer" | "INTEGER" => Some("integer"),
        "float" | "double" | "decimal" | "Number" => Some("number"),
        "bool" | "Boolean" => Some("boolean"),
        "str" | "String" | "text" => Some("string"),
        "list" | "Array" => Some("array"),
        "dict" | "map" | "Object" => Some("object"),
        "null" => None,
        _ => crate::suggest::closest(name, &SUPPORTED_TYPES),
    };
    let help = match (name, suggestion) {
        ("null", _) => {
            "the format does not support null: leave the property out of `required` to make it optional".to_owned()
        }
        (_, Some(s)) => format!("did you mean \"{s}\"?"),
        (_, None) => format!("supported types: {}", SUPPORTED_TYPES.join(", ")),
    };
    Diagnostic::at(Code::SchemaSupportedType, pointer, format!("unsupported type \"{name}\"")).with_help(help)
}
