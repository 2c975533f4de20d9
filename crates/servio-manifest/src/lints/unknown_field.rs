//! W007 `unknown-field`: members the format does not define, with a did-you-mean.
//!
//! An unknown member is usually a misspelt known one (`breif` for `brief`), which is then
//! silently missing.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Fix};
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W007` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns about members the format does not define, at the top level, in `server`, `auth`, each tool and each metric, with a did-you-mean where a known name is close.\n\nWhy: an unknown member is usually a misspelt known one (`breif` for `brief`), which is then silently missing.\n\nExample:\n    \"breif\": { \"metrics\": [] }\n\nFix: correct the name, or remove the member.";

crate::rules::fixture_test!("unknown_field.json", UnknownField);

pub(crate) fn check(object: &Map<String, Value>, at: &Pointer, known: &[&str], warnings: &mut Vec<Diagnostic>) {
    for name in object.keys() {
        if known.contains(&name.as_str()) {
            continue;
        }
        let near = crate::suggest::closest(name, known).filter(|near| !object.contains_key(*near));
        let diagnostic = Diagnostic::at_key(Code::UnknownField, at.child(name), format!("unknown member `{name}`"));
        warnings.push(match near {
            Some(near) => {
                diagnostic.with_help(format!("did you mean `{near}`?")).with_fix(Fix::Rename(near.to_owned()))
            }
            None => diagnostic.with_help(format!("known members here: {}", known.join(", "))),
        });
    }
}
