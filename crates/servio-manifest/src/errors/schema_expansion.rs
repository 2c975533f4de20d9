//! E054 `schema-expansion`: each `input_schema`, with its references unfolded, reaches at most
//! [`crate::schema::MAX_EXPANSION`] (10,000) subschemas through its references.
//!
//! Counted in `schema/graph.rs` (the schema as a graph, its references as edges), which
//! [`crate::schema::check_input_schema`] asks when the schema has references; the
//! [`diagnostic`] and its [`message`] are here, the message shared with
//! [`crate::schema::ArgumentValidator::new`], which refuses such a schema.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::{MAX_EXPANSION, grouped};

/// What `servio explain E054` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that each input_schema, with every `$ref` and `$dynamicRef` unfolded, reaches at most 10,000 subschemas through its references. A subschema is counted once for each reference that reaches it; a reference back to a subschema it is already inside (a recursive schema, such as a tree whose nodes refer to the node definition) counts once, since what it costs follows the arguments. Subschemas written out in the schema are not counted: the manifest's size bounds them. The error is at the `$ref` of the schema's own properties (the first on the way from the root) whose unfolding passed the bound.\n\nWhy: the platform validates a tool's arguments against its schema before every call, and a schema whose references each refer twice to the next definition doubles the work at every level: 30 levels, 2.5 KB of manifest, are two billion evaluations per call. Independently of this rule, validating one set of arguments is refused when it would take more than 100,000 subschema evaluations (\"the arguments would take more than 100,000 schema evaluations to validate\"), so that a recursive schema with very deep arguments cannot hold the platform either.\n\nExample:\n    \"$defs\": { \"d0\": { \"allOf\": [ { \"$ref\": \"#/$defs/d1\" }, { \"$ref\": \"#/$defs/d1\" } ] }, \"d1\": { \"allOf\": [ { \"$ref\": \"#/$defs/d2\" }, { \"$ref\": \"#/$defs/d2\" } ] }, ... }\n\nFix: refer to a shared definition once where it applies (two references to the same subschema side by side check the same thing twice); write a deep structure as a recursive definition rather than one definition per level.";

crate::rules::fixture_test!("schema_expansion.json", SchemaExpansion);

/// E054 at the `$ref` whose unfolding passed [`MAX_EXPANSION`].
pub(crate) fn diagnostic(pointer: Pointer) -> Diagnostic {
    Diagnostic::at(Code::SchemaExpansion, pointer, message()).with_help(
        "each reference evaluates its subschema again: refer to a shared definition once where it applies, \
         and write deep structures as one recursive definition",
    )
}

/// What is wrong, without where.
pub(crate) fn message() -> String {
    format!(
        "this `$ref` unfolds the schema to more than {} subschemas: every call's arguments would be checked \
         against each of them",
        grouped(MAX_EXPANSION)
    )
}
