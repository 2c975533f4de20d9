//! W010 `metric-key-granularity`: a key segment `hourly`, `daily`, `weekly` or `monthly`
//! that names another granularity than the metric has.
//!
//! The key chooses the dashboard card; a series collected hourly in a `daily` card is wrong.

use crate::diagnostic::Diagnostic;
use crate::period::Granularity;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W010` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a metric key has a segment `hourly`, `daily`, `weekly` or `monthly` that names another granularity than the metric has.\n\nWhy: a key that says daily while the metric is collected hourly puts a series in the wrong dashboard slot.\n\nExample:\n    { \"key\": \"sales.revenue.daily\", \"granularity\": \"hour\" }\n\nFix: make the two agree: \"granularity\": \"day\", or the key sales.revenue.hourly.";

crate::rules::fixture_test!("metric_key_granularity.json", MetricKeyGranularity);

pub(crate) fn check(
    key: &str,
    granularity: Granularity,
    metric_at: &Pointer,
    explicit: bool,
    warnings: &mut Vec<Diagnostic>,
) {
    for segment in key.split('.') {
        let Some(named) = Granularity::ALL.into_iter().find(|g| g.adjective() == segment) else {
            continue;
        };
        if named != granularity {
            let at = if explicit { metric_at.child("granularity") } else { metric_at.child("key") };
            let stated = if explicit { "" } else { " (the default)" };
            warnings.push(
                Diagnostic::at(
                    Code::MetricKeyGranularity,
                    at,
                    format!("key {key:?} says {segment} but the granularity is {granularity}{stated}"),
                )
                .with_help(format!(
                    "write \"granularity\": \"{named}\", or a key that says {}",
                    granularity.adjective()
                )),
            );
            return;
        }
    }
}
