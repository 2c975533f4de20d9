//! Property tests: value reduction and `valuePath` walks never panic and follow the grammar
//! of interpretation §7; periods over every IANA zone are contiguous and never overlap.

use jiff::ToSpan;
use jiff::civil::{Date, date};
use proptest::prelude::*;
use serde_json::{Value, json};
use servio_manifest::period::{self, Granularity, hours_of_day, resolve};
use servio_manifest::value::{ValuePath, extract, reduce};

/// The §7 grammar written independently as a regular expression, as the oracle for `reduce`.
fn oracle(text: &str) -> bool {
    let number = r"(?:[0-9]+|[1-9][0-9]{0,2}(?:,[0-9]{3})+)(?:\.[0-9]+)?";
    let space = "[ \u{A0}\u{202F}]?";
    let forms = [
        format!(r"^[+-]?{number}$"),
        format!(r"^[+-]?\p{{Sc}}{space}{number}$"),
        format!(r"^\p{{Sc}}{space}[+-]{number}$"),
        format!(r"^[+-]?{number}{space}\p{{Sc}}$"),
    ];
    let trimmed = text.trim();
    forms.iter().any(|form| regex::Regex::new(form).unwrap().is_match(trimmed))
}

fn grammar_string() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "0", "1", "2", "9", "12", "007", ",", ",000", ".", ".5", "-", "+", "$", "€", "₪", "¥", "R", "CHF", " ",
        "\u{A0}", "\u{202F}", "  ", "%", "(", ")", "e5", "NaN", "a", "\u{2003}", "1,234",
    ]);
    prop::collection::vec(pieces, 0..7).prop_map(|parts| parts.concat())
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        grammar_string().prop_map(Value::String),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z0-9]{0,3}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn reduce_accepts_exactly_the_grammar(text in grammar_string()) {
        let got = reduce(&text);
        prop_assert_eq!(got.is_some(), oracle(&text), "{:?} gave {:?}", text, got);
        if let Some(n) = got {
            prop_assert!(n.is_finite());
            let digits: String = text.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
            prop_assert_eq!(n.abs(), digits.parse::<f64>().unwrap());
        }
    }

    #[test]
    fn reduce_never_panics(text in ".*") {
        let _ = reduce(&text);
    }

    #[test]
    fn extraction_never_panics_and_agrees_with_reduction(value in arbitrary_json(), path in "[a-z0-9.$*\\[\\]]{0,12}") {
        let document = json!({ "v": value.clone() });
        let bytes = serde_json::to_vec(&document).unwrap();
        if let Ok(path) = ValuePath::parse(&path) {
            let _ = extract(&bytes, &path);
        }
        let got = extract(&bytes, &ValuePath::parse("v").unwrap());
        let expected = match &value {
            Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
            Value::String(s) => reduce(s),
            _ => None,
        };
        prop_assert_eq!(got.as_ref().ok().map(|e| e.value), expected);
        if let Ok(found) = got {
            prop_assert_eq!(serde_json::from_str::<Value>(&found.raw).unwrap(), value);
        }
    }

    #[test]
    fn extraction_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64), path in "[a-z0-9.]{1,8}") {
        if let Ok(path) = ValuePath::parse(&path) {
            let _ = extract(&bytes, &path);
        }
    }
}

fn every_zone() -> Vec<String> {
    let names: Vec<String> = jiff::tz::db().available().map(|name| name.to_string()).collect();
    assert!(names.len() > 300, "the IANA database is available ({} zones)", names.len());
    names
}

fn dates(from: Date, days: i64) -> impl Iterator<Item = Date> {
    (0..days).map(move |i| from.checked_add(i.days()).unwrap())
}

/// Days, weeks and months over two years in every zone: each period ends where the next
/// begins, and only a date the zone skipped entirely is empty.
#[test]
fn periods_are_contiguous_in_every_zone() {
    for name in every_zone() {
        let zone = period::zone(&name).unwrap();
        for granularity in [Granularity::Day, Granularity::Week, Granularity::Month] {
            let mut previous: Option<period::Period> = None;
            for day in dates(date(2026, 1, 1), 731) {
                let current =
                    resolve(granularity, day, 0, &zone).unwrap_or_else(|e| panic!("{name} {day} {granularity}: {e}"));
                assert!(current.start < current.end, "{name} {day} {granularity}: empty");
                assert!(current.start_date <= day && day <= current.end_date);
                if let Some(prev) = &previous {
                    if prev.start_date == current.start_date {
                        assert_eq!(prev, &current, "{name} {day}: one period, two answers");
                    } else {
                        assert_eq!(prev.end, current.start, "{name} {day} {granularity}: gap or overlap");
                    }
                }
                previous = Some(current);
            }
        }
    }
}

/// Hours over two years in every zone: the hours of a day tile the day exactly, in order, and
/// `resolve` agrees with them for every hour that occurs.
#[test]
fn hours_tile_every_day_in_every_zone() {
    for name in every_zone() {
        let zone = period::zone(&name).unwrap();
        for day in dates(date(2026, 1, 1), 731) {
            let whole = resolve(Granularity::Day, day, 0, &zone).unwrap();
            let hours = hours_of_day(day, &zone).unwrap();
            assert_eq!(hours.first().unwrap().start, whole.start, "{name} {day}");
            assert_eq!(hours.last().unwrap().end, whole.end, "{name} {day}");
            for pair in hours.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{name} {day}");
                assert!(pair[0].start < pair[0].end);
            }
            if hours.len() != 24 {
                // On change days, check each hour against `resolve` as well.
                for hour in 0..24u8 {
                    if let Ok(p) = resolve(Granularity::Hour, day, hour, &zone) {
                        assert!(hours.contains(&p), "{name} {day} {hour}");
                    }
                }
            }
        }
    }
}

fn small_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..5).prop_map(Value::from),
        prop::sample::select(vec![1.0, 2.5, -0.5, 3.0, 1e20]).prop_map(Value::from),
        prop::sample::select(vec!["", "a", "ab", "abc", "é", "ñañ", "10"]).prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| prop::collection::vec(inner, 0..4).prop_map(Value::Array))
}

fn direct_schema() -> impl Strategy<Value = serde_json::Map<String, Value>> {
    let types = prop::sample::select(vec![
        json!("string"),
        json!("number"),
        json!("integer"),
        json!("boolean"),
        json!("array"),
        json!("object"),
        json!("null"),
        json!(["string", "integer"]),
        json!(["array", "boolean"]),
    ]);
    (
        prop::option::of(types),
        prop::option::of(prop::collection::vec(small_value(), 1..4)),
        prop::option::of(small_value()),
        prop::option::of((-3i64..4, 0usize..4)),
        prop::option::of((0u64..4, 0usize..4)),
    )
        .prop_map(|(ty, options, constant, bound, length)| {
            let mut schema = serde_json::Map::new();
            schema.insert("description".into(), json!("a property"));
            if let Some(ty) = ty {
                schema.insert("type".into(), ty);
            }
            if let Some(options) = options {
                schema.insert("enum".into(), Value::Array(options));
            }
            if let Some(constant) = constant {
                schema.insert("const".into(), constant);
            }
            if let Some((n, which)) = bound {
                let key = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"][which];
                schema.insert(key.into(), json!(n));
            }
            if let Some((n, which)) = length {
                let key = ["minLength", "maxLength", "minItems", "maxItems"][which];
                schema.insert(key.into(), json!(n));
            }
            schema
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// The default lint's direct answers are the `jsonschema` crate's answers.
    #[test]
    fn default_lint_agrees_with_jsonschema(schema in direct_schema(), value in small_value()) {
        let direct = servio_manifest::schema::default_is_valid(&schema, &value);
        let reference = jsonschema::draft202012::is_valid(&Value::Object(schema.clone()), &value);
        prop_assert_eq!(direct, Some(reference), "schema {} value {}", Value::Object(schema), value);
    }
}

fn schema_like() -> impl Strategy<Value = Value> {
    let keywords = prop::sample::select(vec![
        "type",
        "properties",
        "items",
        "prefixItems",
        "required",
        "enum",
        "const",
        "default",
        "description",
        "pattern",
        "patternProperties",
        "additionalProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "$defs",
        "$ref",
        "$id",
        "$schema",
        "$anchor",
        "minimum",
        "maxLength",
        "minItems",
        "uniqueItems",
        "format",
        "dependentRequired",
        "dependentSchemas",
        "contains",
        "propertyNames",
        "unevaluatedProperties",
        "contentSchema",
        "definitions",
        "dependencies",
        "examples",
        "title",
        "deprecated",
        "x-custom",
        "multipleOf",
        "$comment",
        "$vocabulary",
    ]);
    let leaf = prop_oneof![
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        prop::sample::select(vec![json!(-1), json!(0), json!(1.5), json!(3)]),
        prop::sample::select(vec![
            json!("string"),
            json!("int"),
            json!("["),
            json!("^[a-z]+$"),
            json!("#/$defs/x"),
            json!("https://e.com/s"),
            json!("not a uri ref \\"),
            json!("a"),
            json!("date"),
        ]),
        Just(json!([])),
        Just(json!(["a", "b"])),
        Just(json!(["a", "a"])),
        Just(json!(["string", "integer"])),
    ];
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec((keywords.clone(), inner.clone()), 0..5)
                .prop_map(|members| { Value::Object(members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),) }),
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,3}", inner), 0..3)
                .prop_map(|members| json!({ "properties": Value::Object(members.into_iter().collect()) })),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// The flattened meta-schema used as a fast first test accepts exactly what the official
    /// draft 2020-12 meta-schema accepts.
    #[test]
    fn flat_meta_schema_agrees_with_the_official_one(schema in schema_like()) {
        use std::sync::LazyLock;
        static OFFICIAL: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
            jsonschema::draft202012::options().should_validate_formats(true)
                .build(&json!({ "$ref": "https://json-schema.org/draft/2020-12/schema" })).unwrap()
        });
        static FLAT: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
            jsonschema::draft202012::options().should_validate_formats(true)
                .build(&servio_manifest::schema::flat_meta_schema()).unwrap()
        });
        prop_assert_eq!(FLAT.is_valid(&schema), OFFICIAL.is_valid(&schema), "{}", schema);
    }
}
