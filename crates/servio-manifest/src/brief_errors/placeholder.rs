//! B031 `placeholder`: the placeholders in `args` are known (see
//! [`crate::period::PLACEHOLDERS`]), written exactly (they are case-sensitive) and only in
//! string values, not in member names.

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::period;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain B031` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks the placeholders in `args`: only the five below exist, they are case-sensitive, and they work in string values only, not in member names.\n\nThe placeholders (the specification's table, with this project's two for exact bounds):\n    {{periodStart}}      the calendar date being collected, YYYY-MM-DD (a week's Monday, a month's 1st)\n    {{periodEnd}}        the same date for daily and hourly metrics; the period's last date otherwise\n    {{timezone}}         the user's IANA zone, e.g. Pacific/Auckland\n    {{periodStartTime}}  the period's first instant, RFC 3339 with the zone's offset (2026-08-20T00:00:00+12:00)\n    {{periodEndTime}}    the instant the period ends, exclusive: the start of the next period\n\nWhy: an unknown placeholder would be sent literally and the tool would answer for the wrong period; a typo must cost collection, never produce a wrong series.\n\nExample:\n    \"from\": \"{{periodstart}}\"\n\nFix: write {{periodStart}}.";

crate::rules::fixture_test!("placeholder.json", Placeholder);

/// Every placeholder in the string values of `value`, at `at`, is known and well formed, and
/// none is in a member name.
pub(crate) fn check(value: &Value, at: &Pointer, errors: &mut Vec<Diagnostic>) {
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
                check(item, &at.index(i), errors);
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
                check(member, &member_at, errors);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    /// Regression (issue 48): the specification's table of placeholders lost their names in
    /// its published text, and this explanation listed the names without what they mean.
    #[test]
    fn the_explanation_names_and_explains_every_placeholder() {
        for name in crate::period::PLACEHOLDERS {
            let line =
                super::EXPLANATION.lines().find(|line| line.trim_start().starts_with(&format!("{{{{{name}}}}} ")));
            assert!(
                line.is_some_and(|line| line.split("}}").nth(1).is_some_and(|meaning| meaning.trim().len() > 10)),
                "{name}"
            );
        }
    }
}
