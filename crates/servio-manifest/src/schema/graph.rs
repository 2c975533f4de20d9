//! An `input_schema` as a graph of subschemas, every `$ref` and `$dynamicRef` an edge to the
//! subschema it leads to, so that the work a schema can cause is counted before it is done:
//! its expansion at check time (E054, [`Graph::expansion`]) and the work one set of arguments
//! would take ([`Graph::work`]): subschema evaluations, and pattern steps (each string matched
//! against a pattern, its length times the pattern's size, `patterns.rs`).
//!
//! A reference is what makes the work grow beyond the size of the document: a subschema
//! written once is evaluated once per place in the arguments, but one that two references
//! reach is evaluated twice, and a chain of subschemas that each refer twice to the next
//! doubles at every level (30 levels, 2.5 KB of manifest, are two billion evaluations). Both
//! counts walk the graph with an explicit stack and stop at their bound, so the counting itself
//! costs at most the bound, whatever the schema.

use std::collections::HashMap;

use serde_json::Value;
#[cfg(test)]
use serde_json::json;
use url::Url;

use super::patterns::steps_per_byte;
use super::refs::{Index, Target};
use crate::pointer::Pointer;

/// The subschemas of one `input_schema` and the edges between them.
#[derive(Debug)]
pub(crate) struct Graph {
    nodes: Vec<Node>,
    /// The pointer of each `$ref` or `$dynamicRef` member that an edge stands for.
    references: Vec<Pointer>,
}

/// One subschema: what it applies, and to which part of the instance.
#[derive(Debug, Default)]
struct Node {
    /// Applied to the same instance: `allOf`, `anyOf`, `oneOf`, `not`, `if`, `then`, `else`,
    /// `dependentSchemas`, `dependencies`.
    same: Vec<usize>,
    /// References, each to the same instance: the subschema (`None` for a bundled
    /// meta-schema, counted as one) and the index of the reference in [`Graph::references`].
    references: Vec<(Option<usize>, usize)>,
    /// `properties`, sorted by name: each applies to the member of that name.
    properties: Vec<(String, usize)>,
    /// `additionalProperties`: applies to the members `properties` does not name (and, as
    /// an upper bound, to those a pattern matches).
    additional: Option<usize>,
    /// `patternProperties` and `unevaluatedProperties`: counted as applying to every member.
    every_member: Vec<usize>,
    /// `propertyNames`: applies to each member's name.
    names: Option<usize>,
    /// `prefixItems`: each applies to the element at its index.
    prefix_items: Vec<usize>,
    /// `items`: applies to the elements after the prefix.
    items: Option<usize>,
    /// `contains` and `unevaluatedItems`: counted as applying to every element.
    every_item: Vec<usize>,
    /// The steps a byte of a string costs to match against `pattern` (0 without one).
    pattern: u64,
    /// The same for a member name against every `patternProperties` key together.
    name_patterns: u64,
}

/// Keywords whose one subschema applies to the same instance.
const SAME_INSTANCE: [&str; 4] = ["not", "if", "then", "else"];
/// Keywords whose array of subschemas applies to the same instance.
const SAME_INSTANCE_ARRAYS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
/// Keywords whose object of subschemas applies to the same instance (when its member is
/// present, counted as always).
const SAME_INSTANCE_MAPS: [&str; 2] = ["dependentSchemas", "dependencies"];

/// What counting a schema's expansion found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expansion {
    /// The subschemas reached through references, all counted.
    Within(usize),
    /// The count passed the bound while unfolding the reference at this pointer, the first
    /// on the way from the root.
    Beyond(Pointer),
}

/// What the work of one validation may come to ([`Graph::work`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Applications of a subschema to a part of the instance.
    pub(crate) evaluations: usize,
    /// Bytes of strings matched against patterns, each times its pattern's steps a byte.
    pub(crate) pattern_steps: u64,
}

/// The work one validation takes, counted within its [`Budget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Work {
    pub(crate) evaluations: usize,
    pub(crate) pattern_steps: u64,
}

/// Which part of a [`Budget`] the work passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    Evaluations,
    PatternSteps,
}

/// A part of the instance a subschema applies to: a value, or a member name (`propertyNames`),
/// a string with no parts of its own.
#[derive(Clone, Copy)]
enum Part<'v> {
    Value(&'v Value),
    Name(&'v str),
}

impl Graph {
    /// The graph of `schema`, whose references `index` resolves; `at` is its pointer.
    pub(crate) fn new<'a>(schema: &'a Value, index: &Index<'a>, at: &Pointer) -> Graph {
        let mut builder = Builder { index, ids: HashMap::new(), nodes: Vec::new(), references: Vec::new() };
        builder.add(schema, &super::refs::default_base(), Some(at));
        builder.finish()
    }

    /// Counts the subschemas evaluated when every reference of the schema is unfolded, once
    /// per reference that reaches them; a reference back onto the subschemas being unfolded is
    /// a recursion, whose cost follows the instance, and counts one. Subschemas written out
    /// in the schema (not reached through a reference) are not counted: the document's size
    /// bounds them. Stops as soon as the count passes `bound`.
    pub(crate) fn expansion(&self, bound: usize) -> Expansion {
        enum Step {
            Enter(usize, Option<usize>),
            Leave(usize),
        }
        let mut on_path = vec![false; self.nodes.len()];
        let mut stack = vec![Step::Enter(0, None)];
        let mut count = 0usize;
        while let Some(step) = stack.pop() {
            let (id, through) = match step {
                Step::Leave(id) => {
                    on_path[id] = false;
                    continue;
                }
                Step::Enter(id, through) => (id, through),
            };
            if let Some(reference) = through {
                count += 1;
                if count > bound {
                    return Expansion::Beyond(self.references[reference].clone());
                }
            }
            if on_path[id] {
                continue;
            }
            on_path[id] = true;
            stack.push(Step::Leave(id));
            let node = &self.nodes[id];
            for child in node.children() {
                stack.push(Step::Enter(child, through));
            }
            for &(target, reference) in &node.references {
                let through = through.or(Some(reference));
                match target {
                    Some(target) => stack.push(Step::Enter(target, through)),
                    None => {
                        count += 1;
                        if count > bound {
                            return Expansion::Beyond(self.references[reference].clone());
                        }
                    }
                }
            }
        }
        Expansion::Within(count)
    }

    /// Counts the applications of a subschema to a part of `instance` that validating it could
    /// take (every branch of `anyOf` and `oneOf`, every reference followed), and the pattern
    /// steps of the strings and member names matched against patterns, up to `budget`. `Err`
    /// when either passes its part of the budget. An upper bound of what the validator does:
    /// it may stop a branch early; this never does.
    pub(crate) fn work(&self, instance: &Value, budget: Budget) -> Result<Work, Exceeded> {
        let mut stack = vec![(0usize, Part::Value(instance))];
        let mut counter = Counter { work: Work { evaluations: 1, pattern_steps: 0 }, budget };
        while let Some((id, part)) = stack.pop() {
            let node = &self.nodes[id];
            for child in node.same.iter().copied().chain(node.references.iter().filter_map(|r| r.0)) {
                counter.apply(&mut stack, (child, part))?;
            }
            let value = match part {
                Part::Name(name) => {
                    counter.match_pattern(name.len(), node.pattern)?;
                    continue;
                }
                Part::Value(value) => value,
            };
            match value {
                Value::String(text) => counter.match_pattern(text.len(), node.pattern)?,
                Value::Object(members) => {
                    for (name, child) in &node.properties {
                        if let Some(member) = members.get(name) {
                            counter.apply(&mut stack, (*child, Part::Value(member)))?;
                        }
                    }
                    for (name, member) in members {
                        counter.match_pattern(name.len(), node.name_patterns)?;
                        if let Some(child) = node.additional.filter(|_| !node.has_property(name)) {
                            counter.apply(&mut stack, (child, Part::Value(member)))?;
                        }
                        for &child in &node.every_member {
                            counter.apply(&mut stack, (child, Part::Value(member)))?;
                        }
                        if let Some(child) = node.names {
                            counter.apply(&mut stack, (child, Part::Name(name)))?;
                        }
                    }
                }
                Value::Array(elements) => {
                    for (child, element) in node.prefix_items.iter().zip(elements) {
                        counter.apply(&mut stack, (*child, Part::Value(element)))?;
                    }
                    for element in elements.iter().skip(node.prefix_items.len()) {
                        if let Some(child) = node.items {
                            counter.apply(&mut stack, (child, Part::Value(element)))?;
                        }
                        for &child in &node.every_item {
                            counter.apply(&mut stack, (child, Part::Value(element)))?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(counter.work)
    }
}

/// The work counted so far, against the budget.
struct Counter {
    work: Work,
    budget: Budget,
}

impl Counter {
    /// Counts one more application and queues it; `Err` past the budget.
    fn apply<'v>(&mut self, stack: &mut Vec<(usize, Part<'v>)>, pair: (usize, Part<'v>)) -> Result<(), Exceeded> {
        self.work.evaluations += 1;
        stack.push(pair);
        if self.work.evaluations > self.budget.evaluations { Err(Exceeded::Evaluations) } else { Ok(()) }
    }

    /// Counts matching `bytes` of a string against patterns that cost `per_byte` steps a byte.
    fn match_pattern(&mut self, bytes: usize, per_byte: u64) -> Result<(), Exceeded> {
        let steps = u64::try_from(bytes).unwrap_or(u64::MAX).saturating_mul(per_byte);
        self.work.pattern_steps = self.work.pattern_steps.saturating_add(steps);
        if self.work.pattern_steps > self.budget.pattern_steps { Err(Exceeded::PatternSteps) } else { Ok(()) }
    }
}

impl Node {
    /// Every subschema this one holds, references aside.
    fn children(&self) -> impl Iterator<Item = usize> + '_ {
        self.same
            .iter()
            .chain(self.properties.iter().map(|(_, id)| id))
            .chain(&self.additional)
            .chain(&self.every_member)
            .chain(&self.names)
            .chain(&self.prefix_items)
            .chain(&self.items)
            .chain(&self.every_item)
            .copied()
    }

    fn has_property(&self, name: &str) -> bool {
        self.properties.binary_search_by(|(n, _)| n.as_str().cmp(name)).is_ok()
    }
}

/// Builds a [`Graph`]: first every subschema written out from the root (each with its
/// pointer), then, round after round, the subschemas references lead to. Nodes are keyed by
/// address, so a subschema reached twice is one node; nothing recurses through references.
struct Builder<'i, 'a> {
    index: &'i Index<'a>,
    ids: HashMap<*const Value, usize>,
    nodes: Vec<Node>,
    references: Vec<Pointer>,
}

/// A reference waiting to be resolved: the node it belongs to, its text and base URI, and the
/// pointer of its member when known.
struct Pending<'v> {
    node: usize,
    text: &'v str,
    base: Url,
    pointer: Option<Pointer>,
}

impl<'i, 'a> Builder<'i, 'a> {
    fn add(&mut self, root: &'a Value, base: &Url, at: Option<&Pointer>) {
        let mut pending = Vec::new();
        self.node(root, base, at, &mut pending);
        while let Some(reference) = pending.pop() {
            let index = self.references.len();
            self.references.push(reference.pointer.unwrap_or_default());
            let target = match self.index.resolve(&reference.base, reference.text) {
                Target::Node(value, base) => Some(self.node(value, &base, None, &mut pending)),
                Target::MetaSchema => None,
                Target::Nowhere => continue,
            };
            self.nodes[reference.node].references.push((target, index));
        }
    }

    fn finish(self) -> Graph {
        Graph { nodes: self.nodes, references: self.references }
    }

    /// The node of `value` (built with its subschemas when new); its references go to
    /// `pending`.
    fn node(&mut self, value: &'a Value, base: &Url, at: Option<&Pointer>, pending: &mut Vec<Pending<'a>>) -> usize {
        if let Some(&id) = self.ids.get(&std::ptr::from_ref(value)) {
            return id;
        }
        let id = self.nodes.len();
        self.ids.insert(std::ptr::from_ref(value), id);
        self.nodes.push(Node::default());
        let Some(object) = value.as_object() else { return id };
        let mut base = base.clone();
        if let Some(Value::String(own)) = object.get("$id")
            && let Ok(joined) = base.join(own)
        {
            base = joined;
        }
        let mut node = Node::default();
        for (keyword, member) in object {
            let keyword = keyword.as_str();
            let here = at.map(|at| at.child(keyword));
            let mut child = |builder: &mut Self, sub: &'a Value, pointer: Option<Pointer>| {
                builder.node(sub, &base, pointer.as_ref(), pending)
            };
            match (keyword, member) {
                ("$ref" | "$dynamicRef", Value::String(text)) => {
                    pending.push(Pending { node: id, text, base: base.clone(), pointer: here });
                }
                (k, sub) if SAME_INSTANCE.contains(&k) => node.same.push(child(&mut *self, sub, here)),
                (k, Value::Array(subs)) if SAME_INSTANCE_ARRAYS.contains(&k) => {
                    for (i, sub) in subs.iter().enumerate() {
                        node.same.push(child(&mut *self, sub, here.as_ref().map(|p| p.index(i))));
                    }
                }
                (k, Value::Object(subs)) if SAME_INSTANCE_MAPS.contains(&k) => {
                    for (name, sub) in subs.iter().filter(|(_, sub)| !sub.is_array()) {
                        node.same.push(child(&mut *self, sub, here.as_ref().map(|p| p.child(name))));
                    }
                }
                ("properties", Value::Object(subs)) => {
                    for (name, sub) in subs {
                        let sub = child(&mut *self, sub, here.as_ref().map(|p| p.child(name)));
                        node.properties.push((name.clone(), sub));
                    }
                    node.properties.sort_by(|a, b| a.0.cmp(&b.0));
                }
                ("patternProperties", Value::Object(subs)) => {
                    for (name, sub) in subs {
                        node.name_patterns = node.name_patterns.saturating_add(steps_per_byte(name));
                        node.every_member.push(child(&mut *self, sub, here.as_ref().map(|p| p.child(name))));
                    }
                }
                ("pattern", Value::String(pattern)) => node.pattern = steps_per_byte(pattern),
                ("additionalProperties", sub) => node.additional = Some(child(&mut *self, sub, here)),
                ("unevaluatedProperties", sub) => node.every_member.push(child(&mut *self, sub, here)),
                ("propertyNames", sub) => node.names = Some(child(&mut *self, sub, here)),
                ("prefixItems", Value::Array(subs)) => {
                    for (i, sub) in subs.iter().enumerate() {
                        node.prefix_items.push(child(&mut *self, sub, here.as_ref().map(|p| p.index(i))));
                    }
                }
                ("items", sub @ (Value::Object(_) | Value::Bool(_))) => node.items = Some(child(&mut *self, sub, here)),
                ("contains" | "unevaluatedItems", sub) => node.every_item.push(child(&mut *self, sub, here)),
                _ => {}
            }
        }
        self.nodes[id] = node;
        id
    }
}

/// `{"$defs": {"d0": {"allOf": [d1, d1]}, ..., "dN": {"type": "string"}}}`: every level
/// doubles the work.
#[cfg(test)]
pub(crate) fn doubling(depth: usize, applicator: &str) -> Value {
    let mut defs = serde_json::Map::new();
    for level in 0..depth {
        let next = json!({ "$ref": format!("#/$defs/d{}", level + 1) });
        let def = match applicator {
            "properties" => json!({ "properties": { "a": next, "b": next } }),
            "items" => json!({ "prefixItems": [next], "items": next }),
            other => json!({ other: [next, next] }),
        };
        defs.insert(format!("d{level}"), def);
    }
    defs.insert(format!("d{depth}"), json!({ "type": "string" }));
    json!({ "type": "object", "$defs": defs, "properties": { "x": { "$ref": "#/$defs/d0" } } })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn graph(schema: &Value) -> Graph {
        let at = Pointer::root().child("s");
        Graph::new(schema, &Index::of(schema, &at), &at)
    }

    #[test]
    fn doubling_is_counted_up_to_the_bound_and_reported_at_its_first_reference() {
        for applicator in ["allOf", "anyOf", "oneOf", "properties", "items"] {
            let schema = super::doubling(30, applicator);
            assert_eq!(
                graph(&schema).expansion(10_000),
                Expansion::Beyond(Pointer::parse("/s/properties/x/$ref").unwrap()),
                "{applicator}"
            );
            // Ten levels: 1 + 2 + ... + 1024 subschemas reached by references, and the 2 + 4 + ...
            // + 1024 that hold those references.
            assert_eq!(
                graph(&super::doubling(10, applicator)).expansion(10_000),
                Expansion::Within(4093),
                "{applicator}"
            );
        }
    }

    #[test]
    fn recursion_counts_once() {
        let tree = json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "properties": {"root": {"$ref": "#/$defs/node"}}});
        // The node, its `children` and their `items`, and the reference back counted once.
        assert_eq!(graph(&tree).expansion(10_000), Expansion::Within(4));
        let self_reference = json!({"type": "object", "properties": {"again": {"$ref": "#"}}});
        assert!(matches!(graph(&self_reference).expansion(10_000), Expansion::Within(n) if n < 10));
        let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
        assert!(matches!(graph(&cycle).expansion(10_000), Expansion::Within(n) if n < 10));
    }

    /// Every string a pattern applies to counts its length times the pattern's steps a byte:
    /// values under `pattern`, member names under `patternProperties` and `propertyNames`.
    #[test]
    fn pattern_steps_count_each_string_a_pattern_matches() {
        let schema = json!({"type": "object", "properties": {
            "q": {"pattern": "abc"},
            "tags": {"items": {"allOf": [{"pattern": "a{10}"}]}},
            "labels": {"patternProperties": {"^x": true, "y": true}, "propertyNames": {"pattern": "z"}}}});
        let per_byte = |positions: u64| positions + crate::schema::STEPS_PER_BYTE_BASE;
        let steps = |args: Value| graph(&schema).work(&args, Budget { evaluations: 1_000, pattern_steps: u64::MAX });
        assert_eq!(steps(json!({"q": "abcd", "n": "not matched"})).unwrap().pattern_steps, 4 * per_byte(3));
        assert_eq!(steps(json!({"tags": ["aa", "aaa", 1]})).unwrap().pattern_steps, 5 * per_byte(10));
        // Two names of two bytes, each against both keys, then against `propertyNames`'s.
        let names = 2 * 2 * (per_byte(1) + per_byte(1)) + 2 * 2 * per_byte(1);
        assert_eq!(steps(json!({"labels": {"x1": 1, "y2": 2}})).unwrap().pattern_steps, names);
        let long = "a".repeat(1_000);
        let tight = Budget { evaluations: 1_000, pattern_steps: 1_000 * per_byte(3) - 1 };
        assert_eq!(graph(&schema).work(&json!({"q": long}), tight), Err(Exceeded::PatternSteps));
    }

    #[test]
    fn evaluations_follow_the_instance_and_stop_at_the_budget() {
        let tree = json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"});
        let mut deep = json!({});
        for _ in 0..100 {
            deep = json!({ "children": [deep.clone(), deep] });
            if deep.to_string().len() > 100_000 {
                break;
            }
        }
        let small = json!({"children": [{"children": []}, {}]});
        let budget = |evaluations| Budget { evaluations, pattern_steps: u64::MAX };
        assert!(graph(&tree).work(&small, budget(100)).is_ok());
        assert_eq!(graph(&tree).work(&deep, budget(1_000)), Err(Exceeded::Evaluations));
        // A reference cycle with no progress through the instance still stops.
        let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
        assert_eq!(graph(&cycle).work(&json!({}), budget(1_000)), Err(Exceeded::Evaluations));
    }
}
