//! Tool input schemas: checking them as JSON Schema, and checking arguments against them.
//!
//! The JSON Schema work is done by the `jsonschema` crate (draft 2020-12, no remote
//! references: its network features are off, so a validator never fetches anything). This
//! module walks each schema once for the format's own rules, each in its file in
//! `crate::errors` (E051 a root of type object, E052 the supported types, E054 the expansion
//! bound, E050 the crate's generic errors turned into messages that name the keyword and the
//! expected form, E055 the patterns the platform cannot match in linear time), with E053's
//! references resolved in `refs.rs` and counted in `graph.rs`. Every validator built over a
//! schema a site wrote matches patterns with the linear-time engine of `patterns.rs`.

use std::collections::HashSet;
use std::sync::LazyLock;

use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value, json};

use crate::diagnostic::Diagnostic;
use crate::errors::{schema_expansion, schema_linear_pattern, schema_root_object, schema_supported_type, schema_valid};
use crate::pointer::Pointer;

mod graph;
pub mod numbers;
pub(crate) mod patterns;
mod refs;

use graph::{Budget, Exceeded, Expansion, Graph};
pub use patterns::{MAX_COMPILED_PATTERN, MAX_PATTERN_BYTES, MAX_PATTERN_STEPS, STEPS_PER_BYTE_BASE};

/// The most subschemas an `input_schema` may reach through its references (E054). Real
/// schemas reach tens or hundreds; a definition referred to twice at every level passes
/// 10,000 at 12 levels. Counting stops here, so the count itself costs at most this.
pub const MAX_EXPANSION: usize = 10_000;

/// The most subschema evaluations validating one set of arguments may take (schema times
/// arguments: a subschema applied to each element of an array counts once per element).
/// About 10 to 20 ms of validation in a release build; far above what real arguments take,
/// and a bound on a recursive schema given deeply nested arguments, or on a schema stored
/// before E054 existed.
pub const MAX_EVALUATIONS: usize = 100_000;

/// The types the format supports in an `input_schema`.
pub const SUPPORTED_TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

/// Keywords whose value is one schema, as the draft 2020-12 meta-schema defines them
/// (`additionalItems` is gone from 2020-12, so its value is data there).
pub(crate) const SCHEMA_KEYWORDS: [&str; 11] = [
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
/// Keywords whose value is an object of schemas. The 2020-12 meta-schema still validates
/// the older `definitions` and `dependencies` (whose members may also be string arrays,
/// which the walk passes over) as schemas.
pub(crate) const SCHEMA_MAP_KEYWORDS: [&str; 6] =
    ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];
/// Keywords whose value is an array of schemas.
pub(crate) const SCHEMA_ARRAY_KEYWORDS: [&str; 4] = ["prefixItems", "allOf", "anyOf", "oneOf"];

/// The draft 2020-12 meta-schema, with format assertions on (so `"pattern": "["` is an error;
/// the crate's ready-made meta validator treats formats as annotations only). Its errors are
/// what the report shows.
pub(crate) static META_VALIDATOR: LazyLock<Validator> = LazyLock::new(|| {
    meta_options()
        .build(&json!({ "$ref": "https://json-schema.org/draft/2020-12/schema" }))
        .expect("the bundled draft 2020-12 meta-schema compiles")
});

/// The same meta-schema flattened into one document (see [`flat_meta_schema`]), as a fast
/// first test: most schemas are valid, and for them this answers alone.
static FLAT_META_VALIDATOR: LazyLock<Validator> = LazyLock::new(|| {
    meta_options().build(&flat_meta_schema()).expect("the flattened draft 2020-12 meta-schema compiles")
});

/// How the meta-schema validators are built: format assertions on, with `format: "regex"`
/// leaving a pattern longer than [`MAX_PATTERN_BYTES`] to E055 (the crate's syntax check is
/// quadratic in a pattern's named groups), and the meta-schema's own patterns (on anchors and
/// the like, matched against what sites write) matched by the linear-time engine.
fn meta_options() -> jsonschema::ValidationOptions<'static> {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .with_format("regex", patterns::is_regex_format)
        .with_pattern_options(patterns::engine())
}

/// How every validator over a schema a site wrote is built: arguments' numbers judged as
/// written ([`numbers`]) and patterns matched by the linear-time engine, within its bounds.
fn site_schema_options() -> jsonschema::ValidationOptions<'static> {
    numbers::exact_numbers(jsonschema::draft202012::options()).with_pattern_options(patterns::engine())
}

/// Whether `schema` is valid under the draft 2020-12 meta-schema, with format assertions.
/// The flattened meta-schema answers; the official one is asked only about schemas the flat
/// one rejects, and its errors are what gets reported.
pub fn is_valid_schema(schema: &Value) -> bool {
    FLAT_META_VALIDATOR.is_valid(schema) || META_VALIDATOR.is_valid(schema)
}

/// The draft 2020-12 meta-schema as one document, built from the `referencing` crate's
/// bundled copies of the official vocabulary meta-schemas.
///
/// The official meta-schema is an `allOf` of seven vocabulary meta-schemas tied together by
/// `$dynamicRef`, so each subschema is checked seven times over, once per vocabulary. Here
/// every vocabulary's `properties` and `$defs` are merged into one schema whose subschema
/// positions point back at its root (`$dynamicRef: "#meta"` becomes `$ref: "#"`, references
/// into another vocabulary become local). For schemas that do not declare a meta-schema of
/// their own, as tool schemas do not, both accept the same documents: a property test holds
/// them to it, and whatever the flat one rejects is reported with the official one's errors.
pub fn flat_meta_schema() -> Value {
    use referencing::meta::{
        DRAFT202012, DRAFT202012_APPLICATOR, DRAFT202012_CONTENT, DRAFT202012_CORE, DRAFT202012_FORMAT_ANNOTATION,
        DRAFT202012_META_DATA, DRAFT202012_UNEVALUATED, DRAFT202012_VALIDATION,
    };
    let parts = [
        &*DRAFT202012_CORE,
        &*DRAFT202012_APPLICATOR,
        &*DRAFT202012_UNEVALUATED,
        &*DRAFT202012_VALIDATION,
        &*DRAFT202012_META_DATA,
        &*DRAFT202012_FORMAT_ANNOTATION,
        &*DRAFT202012_CONTENT,
        &*DRAFT202012,
    ];
    let mut properties = Map::new();
    let mut defs = Map::new();
    for part in parts {
        for (target, member) in [(&mut properties, "properties"), (&mut defs, "$defs")] {
            if let Some(Value::Object(members)) = part.get(member) {
                target.extend(members.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    let mut flat = json!({ "type": ["object", "boolean"], "properties": properties, "$defs": defs });
    make_local(&mut flat);
    flat
}

/// Rewrites references for the flattened meta-schema: `{"$dynamicRef": "#meta"}` to the
/// root, `meta/validation#/$defs/x` to `#/$defs/x`.
fn make_local(value: &mut Value) {
    match value {
        Value::Object(members) => {
            if members.get("$dynamicRef").and_then(Value::as_str) == Some("#meta") {
                members.remove("$dynamicRef");
                members.insert("$ref".into(), json!("#"));
            }
            if let Some(Value::String(target)) = members.get_mut("$ref")
                && let Some((_, fragment)) = target.split_once('#')
            {
                *target = format!("#{fragment}");
            }
            members.values_mut().for_each(make_local);
        }
        Value::Array(items) => items.iter_mut().for_each(make_local),
        _ => {}
    }
}

/// Checks one tool's `input_schema` at `at`, appending errors to `out`. `each_subschema` is
/// called on every subschema during the same walk, so that lints need no walk of their own.
pub fn check_input_schema(
    schema: &Value,
    at: &Pointer,
    out: &mut Vec<Diagnostic>,
    each_subschema: &mut dyn FnMut(&Keywords<'_>, &SchemaPath<'_>),
) {
    let first = out.len();
    if schema_root_object::check(schema, at, out).is_none() {
        return;
    }
    let mut path = SchemaPath { base: at, segments: Vec::new() };
    for_each_subschema(schema, &mut path, &mut |sub, path| {
        let keywords = Keywords::of(sub);
        schema_supported_type::check(keywords.type_, path, out);
        schema_linear_pattern::check(sub, || path.pointer(), out);
        each_subschema(&keywords, path);
    });
    let index = refs::check(schema, at, out);
    // Only references multiply work; a schema without any is bounded by its own size.
    if index.has_references()
        && let Expansion::Beyond(pointer) = Graph::new(schema, &index, at).expansion(MAX_EXPANSION)
    {
        out.push(schema_expansion::diagnostic(pointer));
    }
    schema_valid::check(schema, at, first, out);
}

/// `10000` as `10,000`.
pub(crate) fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Where a subschema is: the pointer of the `input_schema` plus the segments below it. The
/// pointer text is only built when a diagnostic needs it.
pub struct SchemaPath<'a> {
    base: &'a Pointer,
    segments: Vec<Segment<'a>>,
}

#[derive(Clone, Copy)]
enum Segment<'a> {
    /// A schema keyword such as `properties`.
    Keyword(&'a str),
    /// A member name inside a keyword's object, such as a property name.
    Name(&'a str),
    Index(usize),
}

impl SchemaPath<'_> {
    /// The property name, when this subschema is the value of a member of `properties`.
    pub fn property_name(&self) -> Option<&str> {
        match self.segments.as_slice() {
            [.., Segment::Keyword("properties"), Segment::Name(name)] => Some(name),
            _ => None,
        }
    }

    /// The JSON Pointer of the subschema.
    pub fn pointer(&self) -> Pointer {
        self.segments.iter().fold(self.base.clone(), |pointer, segment| match segment {
            Segment::Keyword(name) | Segment::Name(name) => pointer.child(name),
            Segment::Index(i) => pointer.index(*i),
        })
    }
}

/// Calls `visit` on every subschema object of `schema` (the root included), in document
/// order, with its path. Data keywords (`enum`, `const`, `default`, `examples`) are never
/// entered.
pub fn for_each_subschema<'a>(
    schema: &'a Value,
    path: &mut SchemaPath<'a>,
    visit: &mut dyn FnMut(&'a Map<String, Value>, &SchemaPath<'a>),
) {
    let Some(object) = schema.as_object() else {
        return;
    };
    visit(object, path);
    for (keyword, value) in object {
        let keyword = keyword.as_str();
        match value {
            _ if SCHEMA_KEYWORDS.contains(&keyword) => {
                path.segments.push(Segment::Keyword(keyword));
                for_each_subschema(value, path, visit);
                path.segments.pop();
            }
            Value::Object(members) if SCHEMA_MAP_KEYWORDS.contains(&keyword) => {
                path.segments.push(Segment::Keyword(keyword));
                for (name, sub) in members {
                    path.segments.push(Segment::Name(name));
                    for_each_subschema(sub, path, visit);
                    path.segments.pop();
                }
                path.segments.pop();
            }
            Value::Array(items) if SCHEMA_ARRAY_KEYWORDS.contains(&keyword) => {
                path.segments.push(Segment::Keyword(keyword));
                for (i, sub) in items.iter().enumerate() {
                    path.segments.push(Segment::Index(i));
                    for_each_subschema(sub, path, visit);
                    path.segments.pop();
                }
                path.segments.pop();
            }
            _ => {}
        }
    }
}

/// The members of one subschema that checks and lints read, found in one pass over it: a
/// schema has few members, and a scan is cheaper than hashing each name looked up.
pub struct Keywords<'a> {
    /// The subschema.
    pub schema: &'a Map<String, Value>,
    /// `type`.
    pub type_: Option<&'a Value>,
    /// `properties`, when an object.
    pub properties: Option<&'a Map<String, Value>>,
    /// `required`, when an array.
    pub required: Option<&'a Vec<Value>>,
    /// `default`.
    pub default: Option<&'a Value>,
    /// Whether it has a `description`.
    pub described: bool,
    /// Whether it has a `$ref` (its documentation lives where it points).
    pub has_ref: bool,
    /// Whether every member is one of [`DIRECT_KEYWORDS`].
    pub direct_only: bool,
}

impl<'a> Keywords<'a> {
    /// Reads `schema` once.
    pub fn of(schema: &'a Map<String, Value>) -> Keywords<'a> {
        let mut keywords = Keywords {
            schema,
            type_: None,
            properties: None,
            required: None,
            default: None,
            described: false,
            has_ref: false,
            direct_only: true,
        };
        for (name, value) in schema {
            match name.as_str() {
                "type" => keywords.type_ = Some(value),
                "properties" => keywords.properties = value.as_object(),
                "required" => keywords.required = value.as_array(),
                "default" => keywords.default = Some(value),
                "description" => keywords.described = true,
                "$ref" => keywords.has_ref = true,
                _ => {}
            }
            keywords.direct_only &= DIRECT_KEYWORDS.contains(&name.as_str());
        }
        keywords
    }
}

/// The JSON type name of a value, for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One way in which arguments do not match a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError {
    /// Where, relative to the arguments object (`/to` for a missing required `to`).
    pub pointer: Pointer,
    /// The nearest value that exists: `pointer` itself, or for a missing member the object
    /// that lacks it.
    pub anchor: Pointer,
    /// What is wrong.
    pub message: String,
}

/// Why an `input_schema` cannot be compiled into an [`ArgumentValidator`], in words for the
/// site owner (a `$ref` that cannot be resolved is named with its pointer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UnusableSchema {
    /// What is wrong.
    pub message: String,
}

/// A compiled `input_schema`, ready to check tool arguments.
pub struct ArgumentValidator {
    validator: Validator,
    /// The schema's subschemas and references, to count the work of each check first.
    graph: Graph,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgumentValidator")
    }
}

impl ArgumentValidator {
    /// Compiles `schema`; fails when it does not compile (for instance a `$ref` that cannot be
    /// resolved without fetching it), unfolds to more than [`MAX_EXPANSION`] subschemas (E054;
    /// counted before compiling, which would unfold them), or has a pattern the linear-time
    /// engine cannot match (E055; look-around, backreferences and overlong patterns refused
    /// before compiling, the others by compiling within [`MAX_COMPILED_PATTERN`]).
    pub fn new(schema: &Value) -> Result<ArgumentValidator, UnusableSchema> {
        let root = Pointer::root();
        let graph = Graph::new(schema, &refs::Index::of(schema, &root), &root);
        if let Expansion::Beyond(pointer) = graph.expansion(MAX_EXPANSION) {
            return Err(UnusableSchema { message: format!("{} (at {pointer})", schema_expansion::message()) });
        }
        if let Some(problem) = first_pattern_problem(schema, patterns::screen) {
            return Err(problem);
        }
        site_schema_options().build(schema).map(|validator| ArgumentValidator { validator, graph }).map_err(|e| {
            // The validator's own words for a reference it cannot follow name its build
            // features, and for a pattern only say it is not a "regex"; E053's and E055's say
            // what is wrong with the schema.
            let mut problems = Vec::new();
            refs::check(schema, &Pointer::root(), &mut problems);
            match problems.first() {
                Some(problem) => UnusableSchema { message: format!("{} (at {})", problem.message, problem.pointer) },
                None => first_pattern_problem(schema, patterns::judge)
                    .unwrap_or_else(|| UnusableSchema { message: e.to_string() }),
            }
        })
    }

    /// Every way in which `args` fail the schema, each at its own pointer (a missing required
    /// member at the pointer it would have). Empty when valid. Arguments that would take more
    /// than [`MAX_EVALUATIONS`] or [`MAX_PATTERN_STEPS`] to check are one problem at the root
    /// saying so; callers that tell a schema that cannot be used from arguments that are wrong
    /// use [`Self::try_check`].
    pub fn check(&self, args: &Value) -> Vec<ArgumentError> {
        self.try_check(args).unwrap_or_else(|too_much| {
            vec![ArgumentError { pointer: Pointer::root(), anchor: Pointer::root(), message: too_much.message }]
        })
    }

    /// [`Self::check`], refusing first, without validating, arguments that would take more
    /// than [`MAX_EVALUATIONS`] subschema evaluations or [`MAX_PATTERN_STEPS`] pattern steps:
    /// a permanent error with its reason (the same arguments and schema always take as much),
    /// not a problem of the arguments.
    pub fn try_check(&self, args: &Value) -> Result<Vec<ArgumentError>, UnusableSchema> {
        let mut pattern_steps = MAX_PATTERN_STEPS;
        self.try_check_within(args, &mut pattern_steps)
    }

    /// [`Self::check`] for a check's own values (the brief's arguments), with the pattern
    /// steps the check has left.
    pub(crate) fn check_within(&self, args: &Value, pattern_steps: &mut PatternSteps) -> Vec<ArgumentError> {
        self.try_check_within(args, &mut pattern_steps.left).unwrap_or_else(|too_much| {
            let message = if too_much.message == pattern_steps_message() {
                format!("{}, together with the manifest's defaults and arguments checked before them", too_much.message)
            } else {
                too_much.message
            };
            vec![ArgumentError { pointer: Pointer::root(), anchor: Pointer::root(), message }]
        })
    }

    /// [`Self::try_check`] with the pattern steps left in `pattern_steps`, a budget that
    /// several validations share (those of one check); the steps taken are taken from it.
    fn try_check_within(&self, args: &Value, pattern_steps: &mut u64) -> Result<Vec<ArgumentError>, UnusableSchema> {
        let budget = Budget { evaluations: MAX_EVALUATIONS, pattern_steps: *pattern_steps };
        match self.graph.work(args, budget) {
            Ok(work) => {
                *pattern_steps -= work.pattern_steps;
                Ok(self.validate(args))
            }
            Err(Exceeded::Evaluations) => Err(UnusableSchema {
                message: format!(
                    "the arguments would take more than {} schema evaluations to validate",
                    grouped(MAX_EVALUATIONS)
                ),
            }),
            Err(Exceeded::PatternSteps) => Err(UnusableSchema { message: pattern_steps_message() }),
        }
    }

    /// One pass of the validator: valid arguments cost as much through `iter_errors` as
    /// through `is_valid`, and invalid ones would cost both.
    fn validate(&self, args: &Value) -> Vec<ArgumentError> {
        let mut errors = Vec::new();
        for error in self.validator.iter_errors(args) {
            let at = Pointer::parse(error.instance_path().as_str()).unwrap_or_default();
            match error.kind() {
                ValidationErrorKind::Required { property } => {
                    let name = property.as_str().unwrap_or_default();
                    let message = format!("required argument `{name}` is missing");
                    errors.push(ArgumentError { pointer: at.child(name), anchor: at.clone(), message });
                }
                ValidationErrorKind::AdditionalProperties { unexpected }
                | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                    for name in unexpected {
                        let pointer = at.child(name);
                        let message = format!("argument `{name}` is not allowed by the schema");
                        errors.push(ArgumentError { anchor: pointer.clone(), pointer, message });
                    }
                }
                _ => errors.push(ArgumentError { anchor: at.clone(), pointer: at, message: error.to_string() }),
            }
        }
        // A schema that refers to the meta-schema reaches the same keyword through each of
        // its vocabularies, so the validator says the same thing several times.
        let mut seen = HashSet::new();
        errors.retain(|e| seen.insert((e.pointer.clone(), e.message.clone())));
        errors
    }
}

/// The pattern steps left to one check for matching the manifest's own values against its
/// patterns: its defaults (W006) and its brief's arguments (B030) share [`MAX_PATTERN_STEPS`],
/// so that a check costs as much as one call's validation at most, however many of them the
/// manifest holds.
///
/// It also carries the check's [`crate::Abandon`], read between tools and between metrics (it
/// goes wherever the steps go, which is everywhere a check spends its time).
#[derive(Debug)]
pub(crate) struct PatternSteps {
    left: u64,
    abandon: crate::Abandon,
}

impl PatternSteps {
    /// The budget of one check, which `abandon` may end early.
    pub(crate) fn of_a_check(abandon: crate::Abandon) -> PatternSteps {
        PatternSteps { left: MAX_PATTERN_STEPS, abandon }
    }

    /// Whether the check is abandoned: whoever waits for it gave up, or its time ran out.
    pub(crate) fn abandoned(&self) -> bool {
        self.abandon.is_set()
    }
}

/// Why arguments are refused when their patterns would take too long to match.
fn pattern_steps_message() -> String {
    format!(
        "the arguments' strings would take more than {} pattern steps to match",
        grouped(usize::try_from(MAX_PATTERN_STEPS).unwrap_or(usize::MAX))
    )
}

/// The first pattern of `schema` (in document order) that `judge` finds unusable, as E055
/// words it with its pointer.
fn first_pattern_problem(schema: &Value, judge: fn(&str) -> Option<patterns::Unusable>) -> Option<UnusableSchema> {
    let root = Pointer::root();
    let mut path = SchemaPath { base: &root, segments: Vec::new() };
    let mut found = None;
    for_each_subschema(schema, &mut path, &mut |sub, path| {
        if found.is_some() {
            return;
        }
        let mut problems = Vec::new();
        schema_linear_pattern::check_with(sub, || path.pointer(), judge, &mut problems);
        found = problems.into_iter().next();
    });
    found.map(|problem| UnusableSchema { message: format!("{} (at {})", problem.message, problem.pointer) })
}

/// Whether `value` validates against the subschema `schema`, for the default lint.
///
/// Compiling a validator costs several times more than parsing the whole tool, and a default
/// almost always sits in a schema such as `{ "type": "integer", "minimum": 1, "default": 10 }`.
/// So a subschema whose keywords are all in [`DIRECT_KEYWORDS`] is decided here, keyword by
/// keyword as the 2020-12 validation vocabulary defines them; a property test holds these
/// answers equal to the `jsonschema` crate's. Any other keyword (`pattern`, `items`, `$ref`,
/// `allOf`, ...) goes to `jsonschema`. `None` when the subschema does not compile on its own
/// (say, a `$ref` into the root's `$defs`).
pub fn default_is_valid(schema: &Map<String, Value>, value: &Value) -> Option<bool> {
    default_is_valid_in(&Keywords::of(schema), value)
}

/// [`default_is_valid`] for a subschema already read into [`Keywords`].
pub fn default_is_valid_in(keywords: &Keywords<'_>, value: &Value) -> Option<bool> {
    default_is_valid_within(keywords, value, &mut PatternSteps::of_a_check(crate::Abandon::never()))
}

/// [`default_is_valid_in`] with the pattern steps a check has left. `None` too when the
/// subschema is one no argument validator would compile (E054, E055) or the default would take
/// more than its bounds to validate: the work is bounded as a call's validation is.
pub(crate) fn default_is_valid_within(
    keywords: &Keywords<'_>,
    value: &Value,
    pattern_steps: &mut PatternSteps,
) -> Option<bool> {
    let schema = keywords.schema;
    if keywords.direct_only {
        return direct_is_valid(schema, value);
    }
    let object = Value::Object(schema.clone());
    let root = Pointer::root();
    let graph = Graph::new(&object, &refs::Index::of(&object, &root), &root);
    if matches!(graph.expansion(MAX_EXPANSION), Expansion::Beyond(_))
        || first_pattern_problem(&object, patterns::screen).is_some()
    {
        return None;
    }
    let budget = Budget { evaluations: MAX_EVALUATIONS, pattern_steps: pattern_steps.left };
    let work = graph.work(value, budget).ok()?;
    pattern_steps.left -= work.pattern_steps;
    jsonschema::draft202012::options()
        .with_pattern_options(patterns::engine())
        .build(&object)
        .ok()
        .map(|v| v.is_valid(value))
}

/// Keywords [`default_is_valid`] decides without compiling: annotations and the simple
/// assertions of the validation vocabulary.
pub const DIRECT_KEYWORDS: [&str; 20] = [
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "default",
    "description",
    "title",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "format",
];

fn direct_is_valid(schema: &Map<String, Value>, value: &Value) -> Option<bool> {
    let mut valid = true;
    for (keyword, limit) in schema {
        valid &= match keyword.as_str() {
            "type" => match limit {
                Value::String(name) => has_type(value, name),
                Value::Array(names) => names.iter().filter_map(Value::as_str).any(|n| has_type(value, n)),
                _ => return None,
            },
            "enum" => limit.as_array()?.iter().any(|option| json_equal(option, value)),
            "const" => json_equal(limit, value),
            "minimum" => compare(value, limit, |v, l| v >= l)?,
            "maximum" => compare(value, limit, |v, l| v <= l)?,
            "exclusiveMinimum" => compare(value, limit, |v, l| v > l)?,
            "exclusiveMaximum" => compare(value, limit, |v, l| v < l)?,
            "minLength" => value.as_str().is_none_or(|s| s.chars().count() as u64 >= limit.as_u64().unwrap_or(0)),
            "maxLength" => {
                value.as_str().is_none_or(|s| s.chars().count() as u64 <= limit.as_u64().unwrap_or(u64::MAX))
            }
            "minItems" => value.as_array().is_none_or(|a| a.len() as u64 >= limit.as_u64().unwrap_or(0)),
            "maxItems" => value.as_array().is_none_or(|a| a.len() as u64 <= limit.as_u64().unwrap_or(u64::MAX)),
            _ => true,
        };
    }
    Some(valid)
}

/// A numeric bound: true for non-numbers (the keyword does not apply), `None` for a bound
/// that is not a number (the meta-schema reports that).
fn compare(value: &Value, limit: &Value, holds: fn(f64, f64) -> bool) -> Option<bool> {
    let limit = limit.as_f64()?;
    Some(value.as_f64().is_none_or(|v| holds(v, limit)))
}

/// JSON Schema equality: numbers by value (1 equals 1.0), the rest structurally.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "number" => value.is_number(),
        // JSON Schema counts 1.0 as an integer: any number with a zero fractional part.
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Code;

    fn errors(schema: Value) -> Vec<(String, Code)> {
        let mut out = Vec::new();
        check_input_schema(&schema, &Pointer::root().child("s"), &mut out, &mut |_, _| {});
        out.into_iter().map(|d| (d.pointer.to_string(), d.code)).collect()
    }

    #[test]
    fn schema_rules() {
        let cases: Vec<(Value, Vec<(&str, Code)>)> = vec![
            (json!({"type": "object", "properties": {"q": {"type": "string"}}}), vec![]),
            (json!({"properties": {}}), vec![("/s/type", Code::SchemaRootObject)]),
            (json!({"type": "array"}), vec![("/s/type", Code::SchemaRootObject)]),
            (json!(true), vec![("/s", Code::SchemaRootObject)]),
            (
                json!({"type": "object", "properties": {"l": {"type": "int"}}}),
                vec![("/s/properties/l/type", Code::SchemaSupportedType)],
            ),
            (
                json!({"type": "object", "properties": {"l": {"type": ["string", "null", "strin"]}}}),
                vec![
                    ("/s/properties/l/type/1", Code::SchemaSupportedType),
                    ("/s/properties/l/type/2", Code::SchemaSupportedType),
                ],
            ),
            (
                json!({"type": "object", "$defs": {"x": {"items": {"type": "date"}}}}),
                vec![("/s/$defs/x/items/type", Code::SchemaSupportedType)],
            ),
            (
                json!({"type": "object", "dependencies": {"a": ["b"], "c": {"type": "nil"}}}),
                vec![("/s/dependencies/c/type", Code::SchemaSupportedType)],
            ),
            (
                json!({"type": "object", "if": {"type": "object"}, "then": {"not": {"type": "any"}}}),
                vec![("/s/then/not/type", Code::SchemaSupportedType)],
            ),
            (
                json!({"type": "object", "properties": {"o": {"examples": [{"type": "x"}], "const": {"type": "y"}}}}),
                vec![],
            ),
            // `type` inside data is not a schema keyword.
            (
                json!({"type": "object", "properties": {"o": {"type": "object", "default": {"type": "date"}, "enum": [{"type": "x"}]}}}),
                vec![],
            ),
            (
                json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "["}}}),
                vec![("/s/properties/q/pattern", Code::SchemaValid)],
            ),
            (json!({"type": "object", "required": "q"}), vec![("/s/required", Code::SchemaValid)]),
            (json!({"type": "object", "properties": {"q": 5}}), vec![("/s/properties/q", Code::SchemaValid)]),
            (json!({"type": "object", "required": ["a", "a"]}), vec![("/s/required", Code::SchemaValid)]),
            (
                json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "1"}}}),
                vec![("/s/properties/n/minimum", Code::SchemaValid)],
            ),
        ];
        for (schema, want) in cases {
            let want: Vec<(String, Code)> = want.into_iter().map(|(p, c)| (p.to_owned(), c)).collect();
            assert_eq!(errors(schema.clone()), want, "{schema}");
        }
    }

    /// E055, the patterns the platform cannot match in linear time, each at the pointer of its
    /// `pattern` or its `patternProperties` key; a pattern that is no regular expression at all
    /// is E050's alone.
    #[test]
    fn patterns_the_linear_engine_cannot_match_are_errors() {
        let string =
            |pattern: &str| json!({"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}});
        let keyed = |key: &str| json!({"type": "object", "properties": {"m": {"patternProperties": {key: true}}}});
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        let at_pattern = "/s/properties/q/pattern";
        let cases: Vec<(Value, Vec<(&str, &str)>)> = vec![
            (string("^(a+)+$"), vec![]),
            (string(r"^[\p{L}\p{N}][\p{L}\p{N}_.-]*[\p{L}\p{N}]$"), vec![]),
            (string("^(?=.*[0-9])(?=.*[a-z]).{8,}$"), vec![(at_pattern, "a look-ahead `(?=`")]),
            (string("^(?!admin)"), vec![(at_pattern, "a negative look-ahead `(?!`")]),
            (string("(?<=@)example"), vec![(at_pattern, "a look-behind `(?<=`")]),
            (string("(?<!x)y"), vec![(at_pattern, "a look-behind `(?<!`")]),
            (string(r#"^(['"]).*\1$"#), vec![(at_pattern, r"a backreference `\1`")]),
            (string(r"^(?<q>a)\k<q>$"), vec![(at_pattern, r"a backreference `\k<q>`")]),
            (string(r"^\p{L}[\p{L}\p{N} ]{0,63}$"), vec![(at_pattern, "compiles to more than 256 KiB")]),
            (string(&long), vec![(at_pattern, "1,025 bytes long")]),
            (string("(?=["), vec![(at_pattern, "not a valid regular expression")]),
            (keyed(r"^(a)\1$"), vec![("/s/properties/m/patternProperties/^(a)\\1$", "a backreference")]),
            (keyed("^x-"), vec![]),
            // A pattern written twice is reported at both places.
            (
                json!({"type": "object", "properties": {"a": {"pattern": "(?=a)"}, "b": {"pattern": "(?=a)"}}}),
                vec![("/s/properties/a/pattern", "look-ahead"), ("/s/properties/b/pattern", "look-ahead")],
            ),
        ];
        for (schema, want) in cases {
            let mut out = Vec::new();
            check_input_schema(&schema, &Pointer::root().child("s"), &mut out, &mut |_, _| {});
            let got: Vec<(String, &str, String)> =
                out.iter().map(|d| (d.pointer.to_string(), d.code.as_str(), d.message.clone())).collect();
            assert_eq!(got.len(), want.len(), "{schema}: {got:?}");
            for ((pointer, code, message), (want_pointer, want_words)) in got.iter().zip(&want) {
                assert_eq!(pointer, want_pointer, "{schema}");
                let want_code = if *want_words == "not a valid regular expression" { "E050" } else { "E055" };
                assert_eq!(*code, want_code, "{schema}: {message}");
                assert!(message.contains(want_words), "{schema}: {message}");
            }
        }
    }

    /// Regression (issue 41, finding 2): a look-ahead made the crate's default engine backtrack,
    /// and one validation of a long argument held a blocking thread for 44 s. Such a schema is
    /// refused before it is compiled, with E055's words; an old stored schema can never reach
    /// the backtracking engine.
    #[test]
    fn a_backtracking_pattern_never_reaches_an_argument_validator() {
        for pattern in ["(?=a)(a+)+b", r"(a+)+\1b", "(a*)*(?!x)b", "(a+)+(?<=b)"] {
            let schema = json!({"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}});
            let refused = ArgumentValidator::new(&schema).expect_err(pattern);
            assert!(refused.message.contains("which the platform cannot match"), "{pattern}: {}", refused.message);
            assert!(refused.message.ends_with("(at /properties/q/pattern)"), "{}", refused.message);
        }
        let keyed = json!({"type": "object", "patternProperties": {"^(?=x)": {"type": "string"}}});
        let refused = ArgumentValidator::new(&keyed).unwrap_err();
        assert!(refused.message.ends_with("(at /patternProperties/^(?=x))"), "{}", refused.message);
    }

    /// The classic catastrophic pattern, `^(a+)+$`, against a long run of `a` that fails at its
    /// last character: matched in one pass, whatever the length (a backtracking engine tries
    /// every way of splitting the run).
    #[test]
    fn a_catastrophic_pattern_is_matched_in_linear_time() {
        let schema = json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a+)+$"}}});
        let validator = ArgumentValidator::new(&schema).unwrap();
        let long = format!("{}!", "a".repeat(100_000));
        let errors = validator.try_check(&json!({ "q": long })).unwrap();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].pointer.as_str(), "/q");
        assert!(errors[0].message.contains("does not match \"^(a+)+$\""), "{}", errors[0].message);
        assert_eq!(validator.try_check(&json!({ "q": "a".repeat(100_000) })), Ok(vec![]));
    }

    /// A pattern the linear engine matches can still take the string's length times its own
    /// size: `a[ab]{400}[^ab]`, 17 bytes, took 3.4 s on 1 MiB in a release build. Refused
    /// before matching once the steps pass [`MAX_PATTERN_STEPS`], for values and member names.
    #[test]
    fn matching_work_is_bounded_before_matching() {
        let heavy = "a[ab]{400}[^ab]";
        let schema = json!({"type": "object", "properties": {"q": {"type": "string", "pattern": heavy}},
            "patternProperties": {heavy: true}});
        let validator = ArgumentValidator::new(&schema).unwrap();
        let per_byte = 402 + STEPS_PER_BYTE_BASE;
        // The name `q` is matched against the `patternProperties` key too.
        let within = usize::try_from(MAX_PATTERN_STEPS / per_byte).unwrap() - 1;
        let ab = |n: usize| "ab".repeat(n / 2 + 1)[..n].to_owned();
        // Within the bound, the string is matched (and fails: no character outside `ab`); a
        // run of `a` keeps the engine on its fast path, so the test does not take the half
        // second the bound allows.
        let matched = validator.try_check(&json!({ "q": "a".repeat(within) })).unwrap();
        assert_eq!(matched.len(), 1);
        assert!(matched[0].message.ends_with("does not match \"a[ab]{400}[^ab]\""));
        let refused = validator.try_check(&json!({ "q": ab(within + 1) })).unwrap_err();
        assert_eq!(refused.message, "the arguments' strings would take more than 67,108,864 pattern steps to match");
        assert!(validator.try_check(&json!({ ab(within + 2): 1 })).is_err(), "a member name is matched too");
        // Several strings share one budget.
        assert!(validator.try_check(&json!({ "q": ab(within / 2 + 1), ab(within / 2 + 1): 1 })).is_err());
    }

    /// A check's own values share one budget: many metrics, each within a call's bound, cannot
    /// make one check take as long as all of them together.
    #[test]
    fn a_brief_shares_one_budget_for_matching() {
        let heavy = "a[ab]{400}";
        let per_byte = 401 + STEPS_PER_BYTE_BASE;
        let each = usize::try_from(MAX_PATTERN_STEPS / per_byte / 4).unwrap();
        let argument = "ab".repeat(each / 2);
        let metrics: Vec<Value> = (0..6)
            .map(
                |i| json!({"key": format!("sales.m{i}.daily"), "tool": "t", "args": {"q": argument}, "valuePath": "v"}),
            )
            .collect();
        let manifest = json!({"name": "N", "version": "1.0.0", "server": {"url": "https://n.example.com"},
            "auth": {"type": "bearer"}, "tools": [{"name": "t", "description": "Return the figure of one day.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string", "pattern": heavy}}}}],
            "brief": {"metrics": metrics}});
        let report = crate::check(manifest.to_string().as_bytes(), &crate::CheckOptions::default());
        let refused: Vec<&str> = report.brief_errors.iter().map(|d| d.pointer.as_str()).collect();
        assert_eq!(refused, ["/brief/metrics/4/args", "/brief/metrics/5/args"]);
        assert!(report.brief_errors[0].message.contains("together with the manifest's defaults"));
    }

    /// Regression (issue 25): a 2.5 KB schema whose definitions each refer twice to the next
    /// made every validation exponential (depth 30 held a server for 13.7 s). E054 refuses it
    /// at the first `$ref` on the way from the root, for every applicator that can double.
    #[test]
    fn doubling_schemas_are_refused_at_their_reference() {
        for applicator in ["allOf", "anyOf", "oneOf", "properties", "items"] {
            let found = errors(graph::doubling(30, applicator));
            assert_eq!(found, [("/s/properties/x/$ref".to_owned(), Code::SchemaExpansion)], "{applicator}");
            // Eleven levels stay under the bound (8,189 subschemas), twelve do not.
            assert_eq!(errors(graph::doubling(11, applicator)), Vec::<(String, Code)>::new(), "{applicator}");
            assert_eq!(errors(graph::doubling(12, applicator)).len(), 1, "{applicator}");
            let refused = ArgumentValidator::new(&graph::doubling(30, applicator)).unwrap_err();
            assert!(refused.message.contains("more than 10,000 subschemas"), "{}", refused.message);
            assert!(refused.message.ends_with("(at /properties/x/$ref)"), "{}", refused.message);
        }
    }

    #[test]
    fn recursive_schemas_stay_valid() {
        let schemas = [
            json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
                "properties": {"tree": {"$ref": "#/$defs/node"}}}),
            json!({"type": "object", "properties": {"name": {"type": "string"}, "parent": {"$ref": "#"}}}),
            json!({"type": "object", "$dynamicAnchor": "node", "properties": {"next": {"$dynamicRef": "#node"}}}),
        ];
        for schema in schemas {
            assert_eq!(errors(schema.clone()), Vec::<(String, Code)>::new(), "{schema}");
            let validator = ArgumentValidator::new(&schema).unwrap();
            assert_eq!(validator.try_check(&json!({})), Ok(vec![]), "{schema}");
        }
    }

    /// A recursive schema passes E054, but deep enough arguments would still take as long as
    /// their size times the schema's: refused before validating, with the reason.
    #[test]
    fn validation_work_is_bounded() {
        let tree = json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"});
        let validator = ArgumentValidator::new(&tree).unwrap();
        let mut deep = json!({});
        for _ in 0..16 {
            deep = json!({ "children": [deep.clone(), deep] });
        }
        let refused = validator.try_check(&deep).unwrap_err();
        assert_eq!(refused.message, "the arguments would take more than 100,000 schema evaluations to validate");
        let problems = validator.check(&deep);
        assert_eq!(problems.len(), 1);
        assert_eq!((problems[0].pointer.as_str(), problems[0].message.as_str()), ("", refused.message.as_str()));
        let mut shallow = json!({});
        for _ in 0..8 {
            shallow = json!({ "children": [shallow.clone(), shallow] });
        }
        assert_eq!(validator.try_check(&shallow), Ok(vec![]));
    }

    #[test]
    fn meta_errors_name_the_keyword() {
        let mut out = Vec::new();
        check_input_schema(&json!({"type": "object", "required": "q"}), &Pointer::root(), &mut out, &mut |_, _| {});
        assert_eq!(out[0].message, "`required` must be an array of unique strings, found a string \"q\"");
    }

    #[test]
    fn arguments_are_checked_with_pointers() {
        let schema = json!({"type": "object", "properties": {"from": {"type": "string"}, "n": {"type": "integer"}}, "required": ["from", "to"], "additionalProperties": false});
        let v = ArgumentValidator::new(&schema).unwrap();
        assert!(v.check(&json!({"from": "x", "to": 1})).iter().all(|e| e.pointer.as_str() == "/to"));
        let got: Vec<String> =
            v.check(&json!({"n": "x", "extra": 1})).into_iter().map(|e| e.pointer.to_string()).collect();
        for want in ["/from", "/to", "/n", "/extra"] {
            assert!(got.contains(&want.to_owned()), "{want} in {got:?}");
        }
    }

    /// Regression: arguments checked against the meta-schema (through a `$ref`) repeated the
    /// same message once per vocabulary, eight times.
    #[test]
    fn each_argument_problem_is_said_once() {
        let schema =
            json!({"type": "object", "properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}});
        let v = ArgumentValidator::new(&schema).unwrap();
        let errors = v.check(&json!({"s": {"type": 5}}));
        assert!(!errors.is_empty());
        let distinct: std::collections::HashSet<_> = errors.iter().map(|e| (&e.pointer, &e.message)).collect();
        assert_eq!(distinct.len(), errors.len(), "{errors:?}");
    }

    #[test]
    fn a_schema_that_cannot_be_used_says_why_in_words() {
        let schema = json!({"type": "object", "properties": {"p": {"$ref": "https://example.com/p.json"}}});
        let error = ArgumentValidator::new(&schema).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`$ref` \"https://example.com/p.json\" points outside this input_schema (at /properties/p/$ref)"
        );
    }

    #[test]
    fn an_anchor_name_says_what_is_wrong() {
        let mut out = Vec::new();
        let schema = json!({"type": "object", "properties": {"q": {"$anchor": "1bad"}}});
        check_input_schema(&schema, &Pointer::root(), &mut out, &mut |_, _| {});
        assert_eq!(out[0].message, "`$anchor` \"1bad\" must start with a letter or `_`, not '1'");
    }

    /// The JSON-Schema-Test-Suite's `tests/draft2020-12/optional/bignum.json`: arguments keep
    /// every digit (serde_json's `arbitrary_precision`), and are still judged by value.
    #[test]
    fn big_numbers_are_judged_as_the_test_suite_says() {
        let cases: [(&str, &[(&str, bool)]); 7] = [
            (
                r#"{"type": "integer"}"#,
                &[
                    ("12345678910111213141516171819202122232425262728293031", true),
                    ("-12345678910111213141516171819202122232425262728293031", true),
                    ("12345678910111213141516171819202122232425262728293031.5", false),
                ],
            ),
            (
                r#"{"type": "number"}"#,
                &[
                    ("98249283749234923498293171823948729348710298301928331", true),
                    ("-98249283749234923498293171823948729348710298301928331", true),
                ],
            ),
            (r#"{"type": "string"}"#, &[("98249283749234923498293171823948729348710298301928331", false)]),
            (r#"{"maximum": 18446744073709551615}"#, &[("18446744073709551600", true)]),
            (
                r#"{"exclusiveMaximum": 972783798187987123879878123.18878137}"#,
                &[("972783798187987123879878123.188781371", false)],
            ),
            (r#"{"minimum": -18446744073709551615}"#, &[("-18446744073709551600", true)]),
            (
                r#"{"exclusiveMinimum": -972783798187987123879878123.18878137}"#,
                &[("-972783798187987123879878123.188781371", false)],
            ),
        ];
        for (schema, tests) in cases {
            let property: Value = serde_json::from_str(schema).unwrap();
            let validator = ArgumentValidator::new(&json!({"type": "object", "properties": {"n": property}})).unwrap();
            for (data, valid) in tests {
                let args: Value = serde_json::from_str(&format!(r#"{{"n": {data}}}"#)).unwrap();
                assert_eq!(args["n"].to_string(), *data, "kept as written");
                assert_eq!(validator.check(&args).is_empty(), *valid, "{data} against {schema}");
            }
        }
    }

    /// Beyond the suite: bounds that `f64` cannot tell apart from the value.
    #[test]
    fn bounds_are_exact_beyond_floats() {
        let cases = [
            (r#"{"maximum": 18446744073709551615}"#, "18446744073709551600.0", true),
            (r#"{"maximum": 18446744073709551615}"#, "18446744073709551615.1", false),
            (r#"{"maximum": 18446744073709551616}"#, "18446744073709551617", false),
            (r#"{"exclusiveMaximum": 972783798187987123879878123.18878137}"#, "972783798187987123879878123", true),
            (r#"{"minimum": 0.1}"#, "0.09999999999999999999", false),
            (r#"{"exclusiveMinimum": -1e400}"#, "-1e401", false),
        ];
        for (schema, data, valid) in cases {
            let property: Value = serde_json::from_str(schema).unwrap();
            let validator = ArgumentValidator::new(&json!({"type": "object", "properties": {"n": property}})).unwrap();
            let args: Value = serde_json::from_str(&format!(r#"{{"n": {data}}}"#)).unwrap();
            assert_eq!(validator.check(&args).is_empty(), valid, "{data} against {schema}");
        }
        let validator =
            ArgumentValidator::new(&json!({"type": "object", "properties": {"n": {"maximum": 5}}})).unwrap();
        let errors = validator.check(&serde_json::from_str(r#"{"n": 5.000000000000000000001}"#).unwrap());
        assert_eq!(errors[0].message, "5.000000000000000000001 is greater than the maximum of 5");
    }

    #[test]
    fn defaults_are_checked_against_their_schema() {
        let check = |s: Value, v: Value| default_is_valid(s.as_object().unwrap(), &v);
        assert_eq!(check(json!({"type": "integer", "default": 10}), json!(10)), Some(true));
        assert_eq!(check(json!({"type": "integer"}), json!(1.0)), Some(true));
        assert_eq!(check(json!({"type": "integer"}), json!("10")), Some(false));
        assert_eq!(check(json!({"type": "string", "enum": ["a", "b"]}), json!("c")), Some(false));
        assert_eq!(check(json!({"type": "string", "enum": ["a", "b"]}), json!("a")), Some(true));
        assert_eq!(check(json!({"type": ["string", "integer"]}), json!(3)), Some(true));
    }
}
