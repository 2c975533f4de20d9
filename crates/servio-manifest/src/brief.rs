//! The brief: metrics collected on a schedule (interpretation §3).
//!
//! The brief is validated on its own and all-or-nothing: any error makes the whole brief
//! ignored while the manifest stays valid, so a typo costs collection and never produces a
//! silently wrong series.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::brief_errors::{granularity, metric_args, metric_key, metric_key_unique, metric_tool, value_path};
use crate::diagnostic::Diagnostic;
use crate::fields::{self, Object};
use crate::lints;
use crate::period::{Granularity, PlaceholderValues};
use crate::pointer::Pointer;
use crate::schema::{ArgumentError, ArgumentValidator, PatternSteps};
use crate::validate::ToolRef;
use crate::value::ValuePath;

pub use crate::brief_errors::metric_key::is_valid_key;

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
/// `errors` (they make the brief ignored), lints to `warnings` (the manifest's). The metrics'
/// arguments are matched against the tools' patterns within the check's `pattern_steps`.
pub(crate) fn check(
    value: &Value,
    tools: &[ToolRef<'_>],
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
    pattern_steps: PatternSteps,
) -> Option<Brief> {
    let at = Pointer::root().child("brief");
    let brief = Object::expect(value, &at, "`brief`", fields::BRIEF, errors)?;
    lints::unknown_field::check(brief.map, &at, &BRIEF_FIELDS, warnings);
    let metrics_at = at.child("metrics");
    let items = brief.required("metrics", errors).and_then(|v| brief.array("metrics", v, errors))?;
    let first = errors.len();
    let mut keys = HashSet::new();
    let mut metrics = Vec::with_capacity(items.len());
    let mut tools = Tools::new(tools, pattern_steps);
    for (i, item) in items.iter().enumerate() {
        if tools.pattern_steps.abandoned() {
            break;
        }
        let metric_at = metrics_at.index(i);
        if let Some(metric) = check_metric(item, &metric_at, &mut tools, &mut keys, errors, warnings) {
            metrics.push(metric);
        }
    }
    (errors.len() == first).then_some(Brief { metrics })
}

/// The manifest's tools as the brief looks them up: by name, each tool's argument validator
/// compiled once for all the metrics that call it, the pattern steps the metrics' arguments
/// share, and a bound on did-you-mean searches, each of which compares the name with every tool.
pub(crate) struct Tools<'t, 'a> {
    /// The tools, in manifest order.
    pub(crate) list: &'t [ToolRef<'a>],
    /// Each name's first tool.
    pub(crate) by_name: HashMap<&'a str, usize>,
    validators: Vec<Option<Option<ArgumentValidator>>>,
    /// What is left of the check's budget for matching its own values against patterns.
    pattern_steps: PatternSteps,
    /// How many more did-you-mean searches may be made.
    pub(crate) searches_left: usize,
}

/// How many unknown tool names get a did-you-mean: each search compares the name with every
/// tool, so a brief of many unknown names in a manifest of many tools would be quadratic.
const MAX_TOOL_SEARCHES: usize = 100;

impl<'t, 'a> Tools<'t, 'a> {
    fn new(list: &'t [ToolRef<'a>], pattern_steps: PatternSteps) -> Tools<'t, 'a> {
        let mut by_name = HashMap::with_capacity(list.len());
        for (i, tool) in list.iter().enumerate() {
            by_name.entry(tool.name).or_insert(i);
        }
        let validators = (0..list.len()).map(|_| None).collect();
        Tools { list, by_name, validators, pattern_steps, searches_left: MAX_TOOL_SEARCHES }
    }

    /// How `args` fail tool `index`'s schema, with its validator compiled on first use and the
    /// pattern steps the brief has left; `None` when it has no schema or one that cannot be
    /// used (reported with the tool).
    pub(crate) fn check_args(&mut self, index: usize, args: &Value) -> Option<Vec<ArgumentError>> {
        let schema = self.list[index].input_schema?;
        let validator = self.validators[index].get_or_insert_with(|| ArgumentValidator::new(schema).ok()).as_ref()?;
        Some(validator.check_within(args, &mut self.pattern_steps))
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
    let key = key.filter(|key| {
        let key_at = at.child("key");
        metric_key::check(key, &key_at, errors) && metric_key_unique::check(key, &key_at, keys, errors)
    });
    let tool_name = metric.required_str("tool", errors);
    let tool = tool_name.and_then(|name| metric_tool::check(name, tools, &at.child("tool"), errors));
    let args = match tool {
        Some(index) => metric_args::check(&metric, Some((index, &mut *tools)), errors),
        None => metric_args::check(&metric, None, errors),
    };
    let value_path = metric
        .required_str("valuePath", errors)
        .and_then(|text| value_path::check(text, at.child("valuePath"), errors));
    let unit = metric.optional_str("unit", errors);
    let granularity = granularity::check(&metric, errors);

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
