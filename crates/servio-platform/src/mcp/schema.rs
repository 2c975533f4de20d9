//! Tool input schemas in the form MCP clients accept (interpretation §9). JSON Schema lets any
//! subschema be `true` (anything) or `false` (nothing), but the MCP schema wants an object for
//! each property, and the TypeScript SDK rejects a whole `tools/list` when one property is a
//! boolean. So a boolean in a place that holds named or listed subschemas (`properties`,
//! `patternProperties`, `$defs`, `definitions`, `dependentSchemas`, `allOf`, `anyOf`,
//! `oneOf`, `prefixItems`) is offered as the object that means the same: `{}` for `true`,
//! `{"not": {}}` for `false`. Booleans under single-schema keywords stay as they are:
//! `"additionalProperties": false` is valid there, and some clients look for it literally. The
//! site still validates against its own schema; only what MCP clients read changes.

use serde_json::{Map, Value, json};

/// Keywords whose value is an object of subschemas by name.
const NAMED: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

/// Keywords whose value is an array of subschemas.
const LISTED: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value is one subschema.
const SINGLE: &[&str] = &[
    "additionalProperties",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
];

/// `schema` as offered to MCP clients: an object (anything else offers the empty schema, as
/// before), with the boolean subschemas described above as objects.
pub fn offered(schema: &Value) -> Map<String, Value> {
    let Value::Object(schema) = schema else { return Map::new() };
    let mut offered = Value::Object(schema.clone());
    let mut pending: Vec<&mut Value> = vec![&mut offered];
    while let Some(value) = pending.pop() {
        let Value::Object(subschema) = value else { continue };
        for (keyword, value) in subschema.iter_mut() {
            let keyword = keyword.as_str();
            if NAMED.contains(&keyword) {
                if let Value::Object(named) = value {
                    for each in named.values_mut() {
                        as_object(each);
                        pending.push(each);
                    }
                }
            } else if LISTED.contains(&keyword) || keyword == "items" && value.is_array() {
                // `items` as an array is draft 2019-09's and earlier's `prefixItems`.
                if let Value::Array(listed) = value {
                    for each in listed.iter_mut() {
                        as_object(each);
                        pending.push(each);
                    }
                }
            } else if SINGLE.contains(&keyword) {
                pending.push(value);
            }
        }
    }
    match offered {
        Value::Object(offered) => offered,
        _ => Map::new(),
    }
}

/// A boolean subschema as the object that means the same.
fn as_object(subschema: &mut Value) {
    match subschema {
        Value::Bool(true) => *subschema = json!({}),
        Value::Bool(false) => *subschema = json!({ "not": {} }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::offered;

    #[test]
    fn boolean_properties_become_objects_of_the_same_meaning() {
        let schema = json!({
            "type": "object",
            "properties": {
                "anything": true,
                "nothing": false,
                "nested": { "type": "object", "properties": { "deep": true }, "additionalProperties": false },
                "list": { "type": "array", "items": { "properties": { "x": false } }, "prefixItems": [true, false] },
                "either": { "anyOf": [false, { "type": "string" }] }
            },
            "$defs": { "any": true },
            "additionalProperties": false
        });
        let want = json!({
            "type": "object",
            "properties": {
                "anything": {},
                "nothing": { "not": {} },
                "nested": { "type": "object", "properties": { "deep": {} }, "additionalProperties": false },
                "list": { "type": "array", "items": { "properties": { "x": { "not": {} } } }, "prefixItems": [{}, { "not": {} }] },
                "either": { "anyOf": [{ "not": {} }, { "type": "string" }] }
            },
            "$defs": { "any": {} },
            "additionalProperties": false
        });
        assert_eq!(serde_json::Value::Object(offered(&schema)), want);
    }

    /// Property names that are keywords are names, not keywords: only schemas are rewritten.
    #[test]
    fn only_schemas_are_rewritten() {
        let schema = json!({
            "properties": { "properties": { "type": "object" }, "not": true },
            "const": { "properties": { "a": true } },
            "enum": [{ "allOf": [true] }],
            "default": { "anyOf": [false] }
        });
        let got = serde_json::Value::Object(offered(&schema));
        assert_eq!(got["properties"]["not"], json!({}));
        assert_eq!(got["properties"]["properties"], json!({ "type": "object" }));
        for data in ["const", "enum", "default"] {
            assert_eq!(got[data], schema[data], "{data} is data, not a schema");
        }
    }

    #[test]
    fn anything_but_an_object_offers_the_empty_schema() {
        for schema in [json!(true), json!(false), json!([]), json!(null)] {
            assert!(offered(&schema).is_empty(), "{schema}");
        }
    }
}
