//! B011 `metric-key-unique`: metric keys are unique within the brief; each later occurrence
//! is reported.

use std::collections::HashSet;

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain B011` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that metric keys are unique within the brief. Each later occurrence is reported.\n\nWhy: one key is one series; two definitions would write over each other.\n\nExample:\n    [ { \"key\": \"sales.orders.daily\", ... }, { \"key\": \"sales.orders.daily\", ... } ]\n\nFix: give the second metric its own key.";

crate::rules::fixture_test!("metric_key_unique.json", MetricKeyUnique);

/// Adds the metric key `key`, at `at`, to the keys seen so far; false, with a B011 in
/// `errors`, when an earlier metric declared it.
pub(crate) fn check<'a>(key: &'a str, at: &Pointer, keys: &mut HashSet<&'a str>, errors: &mut Vec<Diagnostic>) -> bool {
    if keys.insert(key) {
        return true;
    }
    errors.push(Diagnostic::at(
        Code::MetricKeyUnique,
        at.clone(),
        format!("metric key {key:?} is already declared by an earlier metric"),
    ));
    false
}
