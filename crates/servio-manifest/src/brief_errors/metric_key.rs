//! B010 `metric-key`: each metric `key` matches `^[a-z0-9]+(\\.[a-z0-9_]+)+$`: lowercase
//! segments separated by dots, at least two of them.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain B010` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that each metric `key` matches ^[a-z0-9]+(\\.[a-z0-9_]+)+$: lowercase segments separated by dots, at least two of them.\n\nWhy: keys are platform-neutral slots that a shop, a forum and a course platform can share on one dashboard.\n\nExample:\n    \"key\": \"Sales.Revenue\"\n\nFix: write it in lowercase, and use a canonical key where one fits: sales.revenue.daily, sales.orders.daily, community.unanswered.count, content.published.daily.";

crate::rules::fixture_test!("metric_key.json", MetricKey);

/// Whether the metric key `key`, at `at`, matches the grammar; when not, a B010 in `errors`,
/// whose help writes the key in lowercase when that is all it takes.
pub(crate) fn check(key: &str, at: &Pointer, errors: &mut Vec<Diagnostic>) -> bool {
    if is_valid_key(key) {
        return true;
    }
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
    false
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
