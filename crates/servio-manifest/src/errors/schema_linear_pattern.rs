//! E055 `schema-linear-pattern`: each `pattern` and each `patternProperties` key of an
//! `input_schema` can be matched by the platform's linear-time engine: no look-around, no
//! backreference, at most [`crate::schema::MAX_PATTERN_BYTES`] (1,024) bytes long, and
//! compiled within [`crate::schema::MAX_COMPILED_PATTERN`] (256 KiB).
//!
//! [`check`] runs on every subschema during [`crate::schema::check_input_schema`]'s walk, on
//! the patterns that are valid regular expressions (E050 reports the others); the reasons are
//! judged in `schema/patterns.rs`, whose [`message`] [`crate::schema::ArgumentValidator::new`]
//! shares when it refuses such a schema.

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::patterns::{self, Construct, Unusable};
use crate::schema::{MAX_COMPILED_PATTERN, MAX_PATTERN_BYTES, grouped};

/// What `servio explain E055` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that every `pattern`, and every key of `patternProperties`, in an input_schema can be matched in linear time: it uses no look-around (`(?=`, `(?!`, `(?<=`, `(?<!`) and no backreference (`\\1`, `\\k<name>`), is at most 1,024 bytes long, and compiles to at most 256 KiB.\n\nWhy: the platform checks every call's arguments against the schema before sending the call, and matches patterns with an engine whose time grows with the string's length times the pattern's size, never more. Look-around and backreferences need a backtracking engine, whose time can grow exponentially with the string: one pattern and a long argument held a validation for 44 seconds while other users' calls were refused. A pattern that compiles to more than 256 KiB (a counted repetition of a large class, such as `[\\p{L}\\p{N} ]{0,63}` inside a longer pattern) costs as much on every call. Independently of this rule, matching one set of arguments is refused when its strings' lengths times their patterns' sizes pass 67,108,864 steps (\"the arguments' strings would take more than 67,108,864 pattern steps to match\").\n\nExample:\n    \"password\": { \"type\": \"string\", \"pattern\": \"^(?=.*[0-9])(?=.*[a-z]).{8,}$\" }\n\nFix: give each condition its own pattern under `allOf`, and state a forbidden form with `not`: { \"allOf\": [ { \"pattern\": \"[0-9]\" }, { \"pattern\": \"[a-z]\" } ], \"minLength\": 8 }, { \"not\": { \"pattern\": \"^admin\" } } for `^(?!admin)`. Spell out what a backreference repeats: ^(?:'[^']*'|\"[^\"]*\")$ for ^(['\"]).*\\1$. Bound a length with `minLength` and `maxLength` rather than a counted repetition: \"pattern\": \"^\\\\p{L}[\\\\p{L}\\\\p{N} ]*$\", \"maxLength\": 64.";

crate::rules::fixture_test!("schema_linear_pattern.json", SchemaLinearPattern);

/// E055 for the `pattern` of `schema` and each of its `patternProperties` keys, at `at` (the
/// subschema's pointer). A pattern written twice is reported twice, and compiled once
/// ([`patterns::judge`] remembers its verdict).
pub(crate) fn check(schema: &Map<String, Value>, at: impl Fn() -> Pointer, out: &mut Vec<Diagnostic>) {
    check_with(schema, at, patterns::judge, out);
}

/// [`check`] with another judge, for [`crate::schema::ArgumentValidator::new`]: one that only
/// screens (before compiling a whole schema), or the one that compiles each pattern (to find
/// the one that made the whole fail).
pub(crate) fn check_with(
    schema: &Map<String, Value>,
    at: impl Fn() -> Pointer,
    judge: fn(&str) -> Option<Unusable>,
    out: &mut Vec<Diagnostic>,
) {
    if let Some(Value::String(pattern)) = schema.get("pattern")
        && let Some(unusable) = judge(pattern)
    {
        out.push(diagnostic(at().child("pattern"), false, &unusable));
    }
    if let Some(Value::Object(properties)) = schema.get("patternProperties") {
        for key in properties.keys() {
            if let Some(unusable) = judge(key) {
                out.push(diagnostic(at().child("patternProperties").child(key), true, &unusable));
            }
        }
    }
}

/// E055 at `pointer`, a `pattern` or, when `key`, a `patternProperties` key.
fn diagnostic(pointer: Pointer, key: bool, unusable: &Unusable) -> Diagnostic {
    let message = message(unusable);
    let diagnostic = if key {
        Diagnostic::at_key(Code::SchemaLinearPattern, pointer, message)
    } else {
        Diagnostic::at(Code::SchemaLinearPattern, pointer, message)
    };
    diagnostic.with_help(help(unusable))
}

/// What is wrong, without where: the platform matches patterns in linear time, and why this one
/// cannot be.
pub(crate) fn message(unusable: &Unusable) -> String {
    match unusable {
        Unusable::Construct(construct, text) => {
            let what = match construct {
                Construct::LookAhead => "a look-ahead",
                Construct::NegativeLookAhead => "a negative look-ahead",
                Construct::LookBehind => "a look-behind",
                Construct::Backreference => "a backreference",
            };
            format!(
                "this pattern uses {what} `{text}`, which the platform cannot match: it matches patterns in linear \
                 time, without look-around or backreferences"
            )
        }
        Unusable::TooLong(length) => format!(
            "this pattern is {} bytes long: the platform compiles patterns of at most {} bytes",
            grouped(*length),
            grouped(MAX_PATTERN_BYTES)
        ),
        Unusable::TooLarge => format!(
            "this pattern compiles to more than {} KiB in the platform's linear-time engine, which it would \
             run on every call",
            MAX_COMPILED_PATTERN / 1024
        ),
    }
}

/// What to write instead.
fn help(unusable: &Unusable) -> &'static str {
    match unusable {
        Unusable::Construct(Construct::LookAhead, _) => {
            "give each condition its own pattern under `allOf`: \"allOf\": [{ \"pattern\": \"[0-9]\" }, { \"pattern\": \
             \"[a-z]\" }] rather than ^(?=.*[0-9])(?=.*[a-z])"
        }
        Unusable::Construct(Construct::NegativeLookAhead, _) => {
            "state the form to refuse with `not`: \"not\": { \"pattern\": \"^admin\" } rather than ^(?!admin)"
        }
        Unusable::Construct(Construct::LookBehind, _) => {
            "match the text before as part of the pattern, or give each condition its own pattern under `allOf` \
             and `not`"
        }
        Unusable::Construct(Construct::Backreference, _) => {
            "spell out each form the backreference would repeat: ^(?:'[^']*'|\"[^\"]*\")$ rather than ^(['\"]).*\\1$"
        }
        Unusable::TooLong(_) => "split it into shorter patterns under `allOf`, each of which must match",
        Unusable::TooLarge => {
            "bound the length with `maxLength` rather than a counted repetition of a large class \
             (\"pattern\": \"^\\\\p{L}[\\\\p{L}\\\\p{N} ]*$\", \"maxLength\": 64), or use a smaller class such as [a-z]"
        }
    }
}
