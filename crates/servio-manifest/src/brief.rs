//! The brief: metrics collected on a schedule (interpretation §3).
//!
//! The brief is validated on its own and all-or-nothing: any error makes the whole brief
//! ignored while the manifest stays valid, so a typo costs collection and never produces a
//! silently wrong series.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::diagnostic::{Anchor, Diagnostic};
use crate::fields::{self, Object};
use crate::lints;
use crate::period::{self, Granularity, PlaceholderValues};
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::{ArgumentValidator, kind_of};
use crate::validate::ToolRef;
use crate::value::ValuePath;

const BRIEF_FIELDS: [&str; 1] = ["metrics"];
const METRIC_FIELDS: [&str; 6] = ["key", "tool", "args", "valuePath", "unit", "granularity"];

/// Canonical metric keys and their dashboard labels.
pub const CANONICAL_KEYS: [(&str, &str); 4] = [
    ("sales.revenue.daily", "Revenue"),
    ("sales.orders.daily", "Orders"),
    ("community.unanswered.count", "Unanswered threads"),
    ("content.published.daily", "Published items"),
];

/// The dashboard label of a canonical key.
pub fn canonical_label(key: &str) -> Option<&'static str> {
    CANONICAL_KEYS.iter().find(|(k, _)| *k == key).map(|(_, label)| *label)
}

/// A valid brief.
#[derive(Debug, Clone, PartialEq)]
pub struct Brief {
    /// The declared metrics, in manifest order.
    pub metrics: Vec<Metric>,
}

/// One declared metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Canonical metric name, such as `sales.revenue.daily`.
    pub key: String,
    /// The tool to call, unprefixed.
    pub tool: String,
    /// Fixed arguments, placeholders unfilled.
    pub args: Map<String, Value>,
    /// Where the number is in the response.
    pub value_path: ValuePath,
    /// Display unit.
    pub unit: Option<String>,
    /// Period length.
    pub granularity: Granularity,
}

impl Metric {
    /// The arguments for a period: every placeholder filled.
    pub fn args_for(&self, values: &PlaceholderValues) -> Value {
        values.fill(&Value::Object(self.args.clone()))
    }
}

/// Whether the brief is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BriefStatus {
    /// The manifest has no `brief`.
    Absent,
    /// The brief is valid and will be collected.
    Valid,
    /// The brief has errors and is ignored in full.
    Ignored,
}

impl BriefStatus {
    /// `absent`, `valid` or `ignored`.
    pub fn as_str(self) -> &'static str {
        match self {
            BriefStatus::Absent => "absent",
            BriefStatus::Valid => "valid",
            BriefStatus::Ignored => "ignored",
        }
    }
}

/// Validates the `brief` member `value` against the manifest's `tools`. Errors go to
/// `errors` (they make the brief ignored), lints to `warnings` (the manifest's).
pub(crate) fn check(
    value: &Value,
    tools: &[ToolRef<'_>],
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Option<Brief> {
    let at = Pointer::root().child("brief");
    let brief = Object::expect(value, &at, "`brief`", fields::BRIEF, errors)?;
    lints::unknown_field::check(brief.map, &at, &BRIEF_FIELDS, warnings);
    let metrics_at = at.child("metrics");
    let items = brief.required("metrics", errors).and_then(|v| brief.array("metrics", v, errors))?;
    let first = errors.len();
    let mut keys = HashSet::new();
    let mut metrics = Vec::with_capacity(items.len());
    let mut tools = Tools::new(tools);
    for (i, item) in items.iter().enumerate() {
        let metric_at = metrics_at.index(i);
        if let Some(metric) = check_metric(item, &metric_at, &mut tools, &mut keys, errors, warnings) {
            metrics.push(metric);
        }
    }
    (errors.len() == first).then_some(Brief { metrics })
}

/// The manifest's tools as the brief looks them up: by name, each tool's argument validator
/// compiled once for all the metrics that call it, and a bound on did-you-mean searches, each of
/// which compares the name with every tool.
struct Tools<'t, 'a> {
    list: &'t [ToolRef<'a>],
    by_name: HashMap<&'a str, usize>,
    validators: Vec<Option<Option<ArgumentValidator>>>,
    searches_left: usize,
}

/// How many unknown tool names get a did-you-mean: each search compares the name with every
/// tool, so a brief of many unknown names in a manifest of many tools would be quadratic.
const MAX_TOOL_SEARCHES: usize = 100;

/// How many tool names a help text lists.
const MAX_NAMES_LISTED: usize = 20;

impl<'t, 'a> Tools<'t, 'a> {
    fn new(list: &'t [ToolRef<'a>]) -> Tools<'t, 'a> {
        let mut by_name = HashMap::with_capacity(list.len());
        for (i, tool) in list.iter().enumerate() {
            by_name.entry(tool.name).or_insert(i);
        }
        Tools { list, by_name, validators: (0..list.len()).map(|_| None).collect(), searches_left: MAX_TOOL_SEARCHES }
    }

    /// The validator of tool `index`, compiled on first use; `None` when its schema cannot be
    /// used (reported with the tool).
    fn validator(&mut self, index: usize) -> Option<&ArgumentValidator> {
        let schema = self.list[index].input_schema;
        self.validators[index].get_or_insert_with(|| ArgumentValidator::new(schema).ok()).as_ref()
    }
}

fn check_metric<'a>(
    value: &'a Value,
    at: &Pointer,
    tools: &mut Tools<'_, '_>,
    keys: &mut HashSet<&'a str>,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Option<Metric> {
    let metric = Object::expect(value, at, "each metric", fields::BRIEF, errors)?;
    lints::unknown_field::check(metric.map, at, &METRIC_FIELDS, warnings);
    let first = errors.len();

    let key = metric.required_str("key", errors);
    let key = key.filter(|key| check_key(key, &at.child("key"), keys, errors));
    let tool_name = metric.required_str("tool", errors);
    let tool = tool_name.and_then(|name| find_tool(name, tools, &at.child("tool"), errors));
    let args = match tool {
        Some(index) => check_args(&metric, Some((index, &mut *tools)), errors),
        None => check_args(&metric, None, errors),
    };
    let value_path = metric.required_str("valuePath", errors).and_then(|text| match ValuePath::parse(text) {
        Ok(path) => Some(path),
        Err(e) => {
            errors.push(Diagnostic::at(Code::ValuePath, at.child("valuePath"), e.message).with_help_opt(e.help));
            None
        }
    });
    let unit = metric.optional_str("unit", errors);
    let granularity = check_granularity(&metric, errors);

    if let (Some(key), Some(granularity)) = (key, granularity) {
        lints::metric_key_granularity::check(key, granularity, at, metric.map.contains_key("granularity"), warnings);
    }
    match (key, tool_name, args, value_path, granularity) {
        (Some(key), Some(tool), Some(args), Some(value_path), Some(granularity)) if errors.len() == first => {
            Some(Metric {
                key: key.to_owned(),
                tool: tool.to_owned(),
                args,
                value_path,
                unit: unit.map(str::to_owned),
                granularity,
            })
        }
        _ => None,
    }
}

/// The key grammar `^[a-z0-9]+(\.[a-z0-9_]+)+$` and uniqueness. True when the key is good.
fn check_key<'a>(key: &'a str, at: &Pointer, keys: &mut HashSet<&'a str>, errors: &mut Vec<Diagnostic>) -> bool {
    if !is_valid_key(key) {
        let lower = key.to_ascii_lowercase();
        let help = if is_valid_key(&lower) {
            format!("write {lower:?}")
        } else {
            "lowercase segments separated by dots, at least two, such as sales.revenue.daily".to_owned()
        };
        errors.push(
            Diagnostic::at(
                Code::MetricKey,
                at.clone(),
                format!("metric key {key:?} does not match ^[a-z0-9]+(\\.[a-z0-9_]+)+$"),
            )
            .with_help(help),
        );
        return false;
    }
    if !keys.insert(key) {
        errors.push(Diagnostic::at(
            Code::DuplicateMetricKey,
            at.clone(),
            format!("metric key {key:?} is already declared by an earlier metric"),
        ));
        return false;
    }
    true
}

/// Whether `key` matches `^[a-z0-9]+(\.[a-z0-9_]+)+$`.
pub fn is_valid_key(key: &str) -> bool {
    let mut segments = key.split('.');
    let first = segments.next().unwrap_or_default();
    let first_ok = !first.is_empty() && first.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let mut rest = 0;
    let rest_ok = segments.all(|s| {
        rest += 1;
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    });
    first_ok && rest_ok && rest >= 1
}

/// The index of the tool named `name`, or an error saying so, with a did-you-mean.
fn find_tool(name: &str, tools: &mut Tools<'_, '_>, at: &Pointer, errors: &mut Vec<Diagnostic>) -> Option<usize> {
    if let Some(&index) = tools.by_name.get(name) {
        return Some(index);
    }
    let names: Vec<&str> = tools.list.iter().map(|t| t.name).collect();
    let near = if tools.searches_left > 0 {
        tools.searches_left -= 1;
        // A tool written without its namespace, or with a site prefix, or misspelt.
        tools
            .list
            .iter()
            .find(|t| {
                t.name.rsplit('.').next() == Some(name) || name.ends_with(&format!("_{}", t.name.replace(['.'], "_")))
            })
            .map(|t| t.name)
            .or_else(|| crate::suggest::closest(name, &names))
    } else {
        None
    };
    let help = match near {
        Some(near) => format!("did you mean \"{near}\"? write the name exactly as in `tools`, without a site prefix"),
        None if names.is_empty() => "the manifest has no tools".to_owned(),
        None if names.len() > MAX_NAMES_LISTED => format!(
            "tools in this manifest: {}, and {} more",
            names[..MAX_NAMES_LISTED].join(", "),
            names.len() - MAX_NAMES_LISTED
        ),
        None => format!("tools in this manifest: {}", names.join(", ")),
    };
    errors.push(
        Diagnostic::at(Code::UnknownMetricTool, at.clone(), format!("no tool named {name:?} in this manifest"))
            .with_help(help),
    );
    None
}

/// `args`: an object, placeholders known and only in values, valid for the tool with the
/// sample placeholder values.
fn check_args(
    metric: &Object<'_>,
    tool: Option<(usize, &mut Tools<'_, '_>)>,
    errors: &mut Vec<Diagnostic>,
) -> Option<Map<String, Value>> {
    let at = metric.at.child("args");
    let empty = Map::new();
    let (args, present) = match metric.map.get("args") {
        None => (&empty, false),
        Some(Value::Object(args)) => (args, true),
        Some(other) => {
            errors.push(Diagnostic::at(
                Code::MetricArgs,
                at,
                format!("`args` must be an object, found {}", kind_of(other)),
            ));
            return None;
        }
    };
    let first = errors.len();
    check_placeholders(&Value::Object(args.clone()), &at, errors);
    if let Some((index, tools)) = tool {
        let name = tools.list[index].name;
        let filled = PlaceholderValues::sample().fill(&Value::Object(args.clone()));
        // A schema that does not compile, or unfolds too far (E054), is reported with the
        // tool; nothing to check here.
        if let Some(validator) = tools.validator(index) {
            for error in validator.check(&filled) {
                let pointer = at.join(&error.pointer);
                let anchor = if present { at.join(&error.anchor) } else { metric.at.clone() };
                errors.push(
                    Diagnostic::new(
                        Code::MetricArgs,
                        pointer,
                        Anchor::Value(anchor),
                        format!("{} (for tool {name:?})", error.message),
                    )
                    .with_help(
                        "args are checked against the tool's input_schema with placeholders filled with sample values",
                    ),
                );
            }
        }
    }
    (errors.len() == first).then(|| args.clone())
}

fn check_placeholders(value: &Value, at: &Pointer, errors: &mut Vec<Diagnostic>) {
    match value {
        Value::String(text) => {
            for bad in period::bad_placeholders(text) {
                let help = match bad.suggestion {
                    Some(s) => format!("did you mean {{{{{s}}}}}? placeholders are case-sensitive"),
                    None => format!(
                        "known placeholders: {}",
                        period::PLACEHOLDERS.map(|p| format!("{{{{{p}}}}}")).join(", ")
                    ),
                };
                errors.push(
                    Diagnostic::at(Code::Placeholder, at.clone(), format!("unknown placeholder {}", bad.text))
                        .with_help(help),
                );
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_placeholders(item, &at.index(i), errors);
            }
        }
        Value::Object(members) => {
            for (name, member) in members {
                let member_at = at.child(name);
                if name.contains("{{") {
                    errors.push(
                        Diagnostic::at_key(
                            Code::Placeholder,
                            member_at.clone(),
                            format!("placeholder in member name {name:?}"),
                        )
                        .with_help("placeholders are filled in string values only; use a fixed member name"),
                    );
                }
                check_placeholders(member, &member_at, errors);
            }
        }
        _ => {}
    }
}

fn check_granularity(metric: &Object<'_>, errors: &mut Vec<Diagnostic>) -> Option<Granularity> {
    let Some(value) = metric.map.get("granularity") else {
        return Some(Granularity::Day);
    };
    let at = metric.at.child("granularity");
    let Some(name) = value.as_str() else {
        errors.push(Diagnostic::at(
            Code::Granularity,
            at,
            format!("`granularity` must be a string, found {}", kind_of(value)),
        ));
        return None;
    };
    if let Some(granularity) = Granularity::from_name(name) {
        return Some(granularity);
    }
    let suggestion = Granularity::ALL
        .into_iter()
        .find(|g| g.adjective().eq_ignore_ascii_case(name) || g.as_str().eq_ignore_ascii_case(name))
        .map(Granularity::as_str)
        .or_else(|| crate::suggest::closest(name, &Granularity::ALL.map(Granularity::as_str)));
    errors.push(
        Diagnostic::at(Code::Granularity, at, format!("granularity {name:?} is not one of hour, day, week, month"))
            .with_help_opt(suggestion.map(|s| format!("write \"{s}\""))),
    );
    None
}

#[cfg(test)]
mod tests {
    use super::is_valid_key;

    #[test]
    fn key_grammar() {
        let good = ["sales.revenue.daily", "a.b", "a1.b_2.c", "0.0"];
        let bad = ["sales", "Sales.revenue", "sales..daily", "sales.revenue.", ".a", "a_b.c", "a.b-c", "a.B", ""];
        let misjudged: Vec<&str> =
            good.into_iter().filter(|k| !is_valid_key(k)).chain(bad.into_iter().filter(|k| is_valid_key(k))).collect();
        assert_eq!(misjudged, Vec::<&str>::new());
    }
}
