//! B050 `granularity`: each `granularity`, when present, is one of hour, day, week or
//! month (the default is day).

use crate::diagnostic::{Diagnostic, Fix};
use crate::fields::Object;
use crate::period::Granularity;
use crate::rules::Code;
use crate::schema::kind_of;

/// What `servio explain B050` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that `granularity`, when present, is one of hour, day, week or month (the default is day).\n\nWhy: the granularity decides which period is collected and which period it is compared with.\n\nExample:\n    \"granularity\": \"daily\"\n\nFix: write \"day\".";

crate::rules::fixture_test!("granularity.json", Granularity);

/// The metric's `granularity`: day when absent, a B050 in `errors` when it is not a string or
/// not one of hour, day, week and month (with a did-you-mean).
pub(crate) fn check(metric: &Object<'_>, errors: &mut Vec<Diagnostic>) -> Option<Granularity> {
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
    // The word for the same period ("daily", "Day") is a mechanical fix; a near spelling is
    // only a guess, offered in the help alone.
    let word = Granularity::ALL
        .into_iter()
        .find(|g| g.adjective().eq_ignore_ascii_case(name) || g.as_str().eq_ignore_ascii_case(name))
        .map(Granularity::as_str);
    let suggestion = word.or_else(|| crate::suggest::closest(name, &Granularity::ALL.map(Granularity::as_str)));
    let diagnostic =
        Diagnostic::at(Code::Granularity, at, format!("granularity {name:?} is not one of hour, day, week, month"))
            .with_help_opt(suggestion.map(|s| format!("write \"{s}\"")));
    errors.push(match word {
        Some(word) => diagnostic.with_fix(Fix::Replace(word.into())),
        None => diagnostic,
    });
    None
}
