//! B031 `placeholder`: the placeholders in `args` are known (see
//! [`crate::period::PLACEHOLDERS`]), written exactly (they are case-sensitive) and only in
//! string values, not in member names.

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::period;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain B031` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks the placeholders in `args`: only {{periodStart}}, {{periodEnd}}, {{timezone}}, {{periodStartTime}} and {{periodEndTime}} exist, they are case-sensitive, and they work in string values only, not in member names.\n\nWhy: an unknown placeholder would be sent literally and the tool would answer for the wrong period; a typo must cost collection, never produce a wrong series.\n\nExample:\n    \"from\": \"{{periodstart}}\"\n\nFix: write {{periodStart}}.";

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
