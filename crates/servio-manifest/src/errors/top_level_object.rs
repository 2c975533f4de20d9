//! E002 `top-level-object`: the manifest's top level is a JSON object.

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::kind_of;

/// What `servio explain E002` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that the manifest's top level is a JSON object.\n\nWhy: every field of the manifest is a member of that object.\n\nExample:\n    [ { \"name\": \"Forum\" } ]\n\nFix: write the manifest as a single object `{ \"name\": ..., \"version\": ..., ... }`.";

crate::rules::fixture_test!("top_level_object.json", TopLevelObject);

/// The members of the top-level object `root`, or an E002 in `errors` saying what it is
/// instead.
pub(crate) fn check<'a>(root: &'a Value, errors: &mut Vec<Diagnostic>) -> Option<&'a Map<String, Value>> {
    let object = root.as_object();
    if object.is_none() {
        errors.push(
            Diagnostic::at(Code::TopLevelObject, Pointer::root(), format!("the manifest must be a JSON object, found {}", kind_of(root)))
                .with_help("write the manifest as { \"name\": ..., \"version\": ..., \"server\": ..., \"auth\": ..., \"tools\": [...] }"),
        );
    }
    object
}
