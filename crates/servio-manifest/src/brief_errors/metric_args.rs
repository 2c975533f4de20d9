//! B030 `metric-args`: each metric's `args` is an object and, with its placeholders filled
//! with sample values ([`crate::period::PlaceholderValues::sample`]), validates against the
//! tool's `input_schema`.

use serde_json::{Map, Value};

use crate::brief::Tools;
use crate::brief_errors::placeholder;
use crate::diagnostic::{Anchor, Diagnostic};
use crate::fields::Object;
use crate::period::PlaceholderValues;
use crate::rules::Code;
use crate::schema::kind_of;

/// What `servio explain B030` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that each metric's `args` is an object and that, with its placeholders filled with sample values (periodStart and periodEnd 2026-08-20, timezone UTC, periodStartTime 2026-08-20T00:00:00+00:00, periodEndTime 2026-08-21T00:00:00+00:00), it validates against the tool's input_schema.\n\nWhy: a metric whose call the tool would refuse can never be collected.\n\nExample:\n    \"args\": { \"from\": \"{{periodStart}}\" }   (while the schema requires `to` as well)\n\nFix: supply every required argument, with the type the schema asks for.";

crate::rules::fixture_test!("metric_args.json", MetricArgs);

/// `args`: an object, placeholders known and only in values (B031, [`placeholder::check`]),
/// valid for the tool with the sample placeholder values.
pub(crate) fn check(
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
    placeholder::check(&Value::Object(args.clone()), &at, errors);
    if let Some((index, tools)) = tool {
        let name = tools.list[index].name;
        let filled = PlaceholderValues::sample().fill(&Value::Object(args.clone()));
        // A schema that does not compile, or unfolds too far (E054), is reported with the
        // tool; nothing to check here.
        if let Some(problems) = tools.check_args(index, &filled) {
            for error in problems {
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
