//! E053: every `$ref` and `$dynamicRef` of an `input_schema` resolves inside that same schema
//! (a `#` pointer, an `$anchor` or `$dynamicAnchor`, or an `$id` declared within it) or to one
//! of the bundled draft 2020-12 meta-schemas (interpretation §2).
//!
//! The platform never fetches a schema, so a reference to anything else could never be
//! followed when a tool is called: every call would fail. Saying so here, at the `$ref`,
//! turns that into a problem the site owner sees before publishing.
//!
//! References are resolved as JSON Schema resolves them: against the base URI of the nearest
//! enclosing `$id` (the root's default base is `json-schema:///`, as in the `jsonschema`
//! crate), with the fragment either a JSON Pointer into that resource or an anchor name.

use std::collections::HashMap;

use serde_json::Value;
use url::Url;

use super::{SCHEMA_ARRAY_KEYWORDS, SCHEMA_KEYWORDS, SCHEMA_MAP_KEYWORDS};
use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// The base URI of a schema without `$id`, as the `jsonschema` crate gives it.
const DEFAULT_BASE: &str = "json-schema:///";

/// The draft 2020-12 meta-schemas bundled with the validator; a reference to one of these is
/// resolved without fetching anything.
const META_SCHEMAS: [&str; 9] = [
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/meta/core",
    "https://json-schema.org/draft/2020-12/meta/applicator",
    "https://json-schema.org/draft/2020-12/meta/unevaluated",
    "https://json-schema.org/draft/2020-12/meta/validation",
    "https://json-schema.org/draft/2020-12/meta/meta-data",
    "https://json-schema.org/draft/2020-12/meta/format-annotation",
    "https://json-schema.org/draft/2020-12/meta/format-assertion",
    "https://json-schema.org/draft/2020-12/meta/content",
];

/// The keywords that refer to another schema.
const REFERENCE_KEYWORDS: [&str; 2] = ["$ref", "$dynamicRef"];

/// Checks every reference in `schema` (the `input_schema` at `at`), appending an E053 for each
/// one that does not resolve. Answers the index, for the count of the schema's expansion.
pub(super) fn check<'a>(schema: &'a Value, at: &Pointer, out: &mut Vec<Diagnostic>) -> Index<'a> {
    let index = Index::of(schema, at);
    for reference in &index.references {
        if let Some(problem) = index.problem(reference) {
            out.push(diagnostic(reference, problem));
        }
    }
    index
}

/// The base URI of the root of every `input_schema`.
pub(super) fn default_base() -> Url {
    Url::parse(DEFAULT_BASE).expect("the default base URI parses")
}

/// Where a reference leads.
pub(super) enum Target<'a> {
    /// A node of the schema, with the base URI of the resource it lies in.
    Node(&'a Value, Url),
    /// One of the bundled meta-schemas.
    MetaSchema,
    /// Nowhere: E053 reports it, and the validator cannot be built.
    Nowhere,
}

/// A reference found in the schema.
struct Reference {
    /// `$ref` or `$dynamicRef`.
    keyword: &'static str,
    /// The reference as written.
    text: String,
    /// The pointer of the keyword's member.
    pointer: Pointer,
    /// The reference resolved against its base URI, or why it could not be.
    target: Result<Url, url::ParseError>,
}

/// Why a reference does not resolve.
enum Problem {
    /// Not a URI reference at all.
    Malformed(url::ParseError),
    /// Points at a document that is neither this schema nor a bundled meta-schema.
    Outside,
    /// A JSON Pointer fragment that names nothing in its resource.
    NoSuchPointer(String),
    /// An anchor that no `$anchor` or `$dynamicAnchor` declares.
    NoSuchAnchor(String),
}

/// The resources (`$id`s) and anchors the schema declares, and every reference in it.
#[derive(Default)]
pub(super) struct Index<'a> {
    /// Each resource by its URI without fragment; the root is under the default base.
    resources: HashMap<String, &'a Value>,
    /// `(resource URI, anchor name)` for every `$anchor` and `$dynamicAnchor`, with the
    /// subschema that declares it.
    anchors: HashMap<(String, String), &'a Value>,
    references: Vec<Reference>,
}

impl<'a> Index<'a> {
    /// Indexes `schema`, the `input_schema` at `at`.
    pub(super) fn of(schema: &'a Value, at: &Pointer) -> Index<'a> {
        let mut index = Index::default();
        index.walk(schema, &default_base(), at);
        index
    }

    /// Whether the schema has any `$ref` or `$dynamicRef` at a schema position.
    pub(super) fn has_references(&self) -> bool {
        !self.references.is_empty()
    }

    /// Where the reference `text`, written in a subschema whose base URI is `base`, leads.
    /// A `$dynamicRef` is resolved as a `$ref` to the anchor of its own resource: the count
    /// it is used for needs the subschemas a reference can reach, not the dynamic scope.
    pub(super) fn resolve(&self, base: &Url, text: &str) -> Target<'a> {
        let Ok(target) = base.join(text) else { return Target::Nowhere };
        let document = without_fragment(&target);
        if META_SCHEMAS.contains(&document.as_str()) {
            return Target::MetaSchema;
        }
        let Some(&resource) = self.resources.get(&document) else { return Target::Nowhere };
        let fragment = percent_encoding::percent_decode_str(target.fragment().unwrap_or_default())
            .decode_utf8_lossy()
            .into_owned();
        let node = if fragment.is_empty() {
            Some(resource)
        } else if fragment.starts_with('/') {
            resource.pointer(&fragment)
        } else {
            self.anchors.get(&(document, fragment)).copied()
        };
        let mut resource_base = target;
        resource_base.set_fragment(None);
        node.map_or(Target::Nowhere, |node| Target::Node(node, resource_base))
    }

    /// Records `schema` and its subschemas, resolved against `base`.
    fn walk(&mut self, schema: &'a Value, base: &Url, at: &Pointer) {
        let Some(object) = schema.as_object() else { return };
        let mut base = base.clone();
        if self.resources.is_empty() {
            self.resources.insert(without_fragment(&base), schema);
        }
        if let Some(Value::String(id)) = object.get("$id")
            && let Ok(resolved) = base.join(id)
        {
            base = resolved;
            self.resources.insert(without_fragment(&base), schema);
        }
        for keyword in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(name)) = object.get(keyword) {
                self.anchors.insert((without_fragment(&base), name.clone()), schema);
            }
        }
        for keyword in REFERENCE_KEYWORDS {
            if let Some(Value::String(text)) = object.get(keyword) {
                let pointer = at.child(keyword);
                self.references.push(Reference { keyword, text: text.clone(), pointer, target: base.join(text) });
            }
        }
        for (keyword, value) in object {
            let keyword = keyword.as_str();
            match value {
                _ if SCHEMA_KEYWORDS.contains(&keyword) => self.walk(value, &base, &at.child(keyword)),
                Value::Object(members) if SCHEMA_MAP_KEYWORDS.contains(&keyword) => {
                    for (name, sub) in members {
                        self.walk(sub, &base, &at.child(keyword).child(name));
                    }
                }
                Value::Array(items) if SCHEMA_ARRAY_KEYWORDS.contains(&keyword) => {
                    for (i, sub) in items.iter().enumerate() {
                        self.walk(sub, &base, &at.child(keyword).index(i));
                    }
                }
                _ => {}
            }
        }
    }

    /// Why `reference` does not resolve, or `None` when it does.
    fn problem(&self, reference: &Reference) -> Option<Problem> {
        let target = match &reference.target {
            Ok(target) => target,
            Err(e) => return Some(Problem::Malformed(*e)),
        };
        let document = without_fragment(target);
        if META_SCHEMAS.contains(&document.as_str()) {
            return None;
        }
        let Some(resource) = self.resources.get(&document) else { return Some(Problem::Outside) };
        let fragment = percent_encoding::percent_decode_str(target.fragment().unwrap_or_default())
            .decode_utf8_lossy()
            .into_owned();
        if fragment.is_empty() {
            None
        } else if fragment.starts_with('/') {
            resource.pointer(&fragment).is_none().then_some(Problem::NoSuchPointer(fragment))
        } else {
            (!self.anchors.contains_key(&(document, fragment.clone()))).then_some(Problem::NoSuchAnchor(fragment))
        }
    }
}

fn without_fragment(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.into()
}

fn diagnostic(reference: &Reference, problem: Problem) -> Diagnostic {
    let Reference { keyword, text, pointer, .. } = reference;
    let (message, help) = match problem {
        Problem::Malformed(e) => (
            format!("`{keyword}` \"{text}\" is not a URI reference: {e}"),
            "write a reference into this schema, such as \"#/$defs/name\"".to_owned(),
        ),
        Problem::Outside => (
            format!("`{keyword}` \"{text}\" points outside this input_schema"),
            "the platform never fetches schemas: copy the schema into \"$defs\" and write \"$ref\": \"#/$defs/NAME\""
                .to_owned(),
        ),
        Problem::NoSuchPointer(fragment) => (
            format!("`{keyword}` \"{text}\" points to nothing: this schema has no `{fragment}`"),
            "check the path: it is a JSON Pointer from the schema's root, such as #/$defs/name".to_owned(),
        ),
        Problem::NoSuchAnchor(name) => (
            format!("`{keyword}` \"{text}\" names an anchor that is not declared: no `$anchor` is \"{name}\""),
            format!("declare \"$anchor\": \"{name}\" in the subschema meant, or refer to it by its path"),
        ),
    };
    Diagnostic::at(Code::SchemaRef, pointer.clone(), message).with_help(help)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn unresolved(schema: Value) -> Vec<String> {
        let mut out = Vec::new();
        check(&schema, &Pointer::root(), &mut out);
        out.into_iter().map(|d| d.pointer.to_string()).collect()
    }

    #[test]
    fn local_references_resolve() {
        let resolving = [
            json!({"$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}),
            json!({"properties": {"x": {"$ref": "#"}}}),
            json!({"$defs": {"a": {"$anchor": "day"}}, "properties": {"x": {"$ref": "#day"}}}),
            json!({"$dynamicAnchor": "node", "properties": {"x": {"$dynamicRef": "#node"}}}),
            json!({"$defs": {"a~b": {}, "c d": {}}, "properties": {"x": {"$ref": "#/$defs/a~0b"}, "y": {"$ref": "#/$defs/c%20d"}}}),
            json!({"$id": "https://example.com/root.json", "$defs": {"a": {}}, "properties": {"x": {"$ref": "root.json#/$defs/a"}}}),
            json!({"$defs": {"d": {"$id": "https://example.com/d.json", "$defs": {"e": {}}}}, "properties": {"x": {"$ref": "https://example.com/d.json#/$defs/e"}}}),
            json!({"properties": {"x": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}),
            json!({"properties": {"x": {"$ref": "https://json-schema.org/draft/2020-12/meta/validation#/$defs/simpleTypes"}}}),
        ];
        for schema in resolving {
            assert_eq!(unresolved(schema.clone()), Vec::<String>::new(), "{schema}");
        }
    }

    #[test]
    fn other_references_are_reported_at_the_keyword() {
        let cases = [
            (json!({"properties": {"x": {"$ref": "https://example.com/x.json"}}}), "/properties/x/$ref"),
            (json!({"properties": {"x": {"$ref": "other.json"}}}), "/properties/x/$ref"),
            (json!({"properties": {"x": {"$ref": "#/$defs/missing"}}}), "/properties/x/$ref"),
            (json!({"items": {"$ref": "#nowhere"}}), "/items/$ref"),
            (json!({"allOf": [{"$dynamicRef": "https://example.com/s#meta"}]}), "/allOf/0/$dynamicRef"),
            (json!({"$ref": "https://json-schema.org/draft/2019-09/schema"}), "/$ref"),
        ];
        for (schema, pointer) in cases {
            assert_eq!(unresolved(schema.clone()), [pointer], "{schema}");
        }
    }

    #[test]
    fn the_message_says_why() {
        let mut out = Vec::new();
        check(&json!({"properties": {"x": {"$ref": "https://example.com/x.json"}}}), &Pointer::root(), &mut out);
        assert_eq!(out[0].message, "`$ref` \"https://example.com/x.json\" points outside this input_schema");
        assert_eq!(out[0].code, Code::SchemaRef);
    }
}
