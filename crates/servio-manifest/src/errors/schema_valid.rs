//! E050 `schema-valid`: each `input_schema` is valid under the JSON Schema draft 2020-12
//! meta-schema, with format assertions (so a `pattern` must be a valid regular expression).
//!
//! The meta-schema's validators are [`crate::schema`]'s; [`check`] runs last in
//! [`crate::schema::check_input_schema`] and turns their errors into messages that name the
//! keyword and the form its value takes.

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::{self, SCHEMA_ARRAY_KEYWORDS, SCHEMA_KEYWORDS, SCHEMA_MAP_KEYWORDS, kind_of};

/// What `servio explain E050` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks each `input_schema` against the JSON Schema draft 2020-12 meta-schema, with format assertions, so that a `pattern` must be a valid regular expression.\n\nWhy: the platform validates every call's arguments against this schema before sending it; a schema it cannot read means the tool cannot be called safely.\n\nExample:\n    \"query\": { \"type\": \"string\", \"pattern\": \"[\" }\n\nFix: correct the keyword the message names; `required` is an array of unique strings, `properties` an object of schemas, `enum` an array.";

crate::rules::fixture_test!("schema_valid.json", SchemaValid);

/// Checks the `input_schema` `schema`, at `at`, against the meta-schema. `out[first..]` are
/// the schema's errors found so far, which say the same thing more precisely: nothing at, above
/// or below their pointers is reported again.
pub(crate) fn check(schema: &Value, at: &Pointer, first: usize, out: &mut Vec<Diagnostic>) {
    if schema::is_valid_schema(schema) {
        return;
    }
    let reported: Vec<Pointer> = out[first..].iter().map(|d| d.pointer.clone()).collect();
    for error in schema::META_VALIDATOR.iter_errors(schema) {
        let pointer = at.join(&Pointer::parse(error.instance_path().as_str()).unwrap_or_default());
        // Our own rules above say the same thing more precisely.
        if reported.iter().any(|r| pointer.starts_with(r) || r.starts_with(&pointer)) {
            continue;
        }
        if out.iter().any(|d| d.code == Code::SchemaValid && d.pointer == pointer) {
            continue;
        }
        let (message, help) = describe_meta_error(&error, &pointer);
        out.push(Diagnostic::at(Code::SchemaValid, pointer, message).with_help_opt(help));
    }
}

/// The expected form of a keyword's value, for messages.
fn expected_form(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        k if SCHEMA_MAP_KEYWORDS.contains(&k) => "an object whose members are schemas",
        k if SCHEMA_ARRAY_KEYWORDS.contains(&k) => "a non-empty array of schemas",
        k if SCHEMA_KEYWORDS.contains(&k) => "a schema (an object or a boolean)",
        "type" => "one of the type names or an array of unique type names",
        "required" => "an array of unique strings",
        "enum" => "an array",
        "dependentRequired" => "an object whose members are arrays of unique strings",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => "a number",
        "multipleOf" => "a number greater than 0",
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minContains"
        | "maxContains" => "a non-negative integer",
        "pattern" => "a valid regular expression (ECMA-262)",
        "format" | "title" | "description" | "$comment" | "$anchor" | "$dynamicAnchor" | "contentEncoding"
        | "contentMediaType" => "a string",
        "$ref" | "$dynamicRef" | "$id" | "$schema" => "a URI reference string",
        "uniqueItems" | "readOnly" | "writeOnly" | "deprecated" => "a boolean",
        "examples" => "an array",
        _ => return None,
    })
}

/// The message and help for one meta-schema `error`, at `pointer`.
fn describe_meta_error(error: &ValidationError<'_>, pointer: &Pointer) -> (String, Option<String>) {
    let segments: Vec<String> = pointer.segments().collect();
    let last = segments.last().map(String::as_str).unwrap_or("");
    let parent = segments.len().checked_sub(2).map(|i| segments[i].as_str()).unwrap_or("");
    // A position that holds a schema, such as `/properties/q`, rather than a keyword.
    let in_schema_slot = SCHEMA_MAP_KEYWORDS.contains(&parent) || SCHEMA_ARRAY_KEYWORDS.contains(&parent);
    let form = if in_schema_slot { Some("a schema (an object or a boolean)") } else { expected_form(last) };
    let subject = if in_schema_slot { format!("`{parent}/{last}`") } else { format!("`{last}`") };
    match (error.kind(), form) {
        (ValidationErrorKind::Format { format }, _) if format == "regex" => (
            format!("{subject} is not a valid regular expression: {}", error.instance()),
            Some("patterns use ECMA-262 syntax; escape a literal bracket as \\\\[".to_owned()),
        ),
        (ValidationErrorKind::UniqueItems, _) => {
            (format!("{subject} has repeated entries"), Some("list each entry once".to_owned()))
        }
        (ValidationErrorKind::MinItems { .. }, _) => (format!("{subject} must not be empty"), None),
        (ValidationErrorKind::Pattern { .. }, _) if matches!(last, "$anchor" | "$dynamicAnchor") => {
            anchor_name_problem(&subject, error.instance())
        }
        // "must be a string, found a string" would say nothing: the value has the right type
        // and breaks another rule, which the validator's own words name.
        (_, Some(form)) if form == kind_of(error.instance()) => (format!("{subject}: {error}"), None),
        (_, Some(form)) => (format!("{subject} must be {form}, found {}", describe_value(error.instance())), None),
        _ => (format!("{subject}: {error}"), None),
    }
}

/// What is wrong with an anchor name: it starts with a letter or `_`, then has letters,
/// digits, `-`, `.` and `_` only.
fn anchor_name_problem(subject: &str, name: &Value) -> (String, Option<String>) {
    let text = name.as_str().unwrap_or_default();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    let message = match text.chars().next() {
        None => format!("{subject} must not be empty"),
        Some(first) if !(first.is_ascii_alphabetic() || first == '_') => {
            format!("{subject} {name} must start with a letter or `_`, not {}", crate::suggest::describe_char(first))
        }
        _ => {
            let bad = text.chars().find(|c| !allowed(*c)).map(crate::suggest::describe_char).unwrap_or_default();
            format!("{subject} {name} may contain only letters, digits, `-`, `.` and `_`, not {bad}")
        }
    };
    let fixed: String = text.chars().map(|c| if allowed(c) { c } else { '_' }).collect();
    let fixed =
        if fixed.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') { fixed } else { format!("a{fixed}") };
    (message, Some(format!("write \"{fixed}\"")))
}

fn describe_value(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 40 { format!("{} {text}", kind_of(value)) } else { kind_of(value).to_owned() }
}
