//! E053 `schema-ref`: every `$ref` and `$dynamicRef` of an `input_schema` resolves inside
//! that same schema or to a bundled draft 2020-12 meta-schema.
//!
//! Raised in `schema/refs.rs`, whose index of the schema's resources, anchors and references
//! resolves each reference once, for this rule, for E054's count and for compiling argument
//! validators.

/// What `servio explain E053` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that every `$ref` and `$dynamicRef` in an input_schema resolves inside that same input_schema (a `#/...` path, an `$anchor`, or an `$id` declared within it) or to one of the JSON Schema draft 2020-12 meta-schemas.\n\nWhy: the platform never fetches a schema from the network, so a reference to another document could never be followed when the tool is called: every call of the tool would fail.\n\nExample:\n    \"address\": { \"$ref\": \"https://example.com/schemas/address.json\" }\n\nFix: copy the referenced schema into the input_schema's `$defs` and refer to it there: \"$defs\": { \"address\": { ... } } and \"$ref\": \"#/$defs/address\".";

crate::rules::fixture_test!("schema_ref.json", SchemaRef);
