//! W006 `default-valid`: a `default` must validate against the schema it sits in.
//!
//! Defaults are shown to the AI as good values; a default of the wrong type teaches it to
//! send wrong arguments.

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::default_is_valid;

pub(crate) fn check(schema: &Map<String, Value>, path: &str, warnings: &mut Vec<Diagnostic>) {
    let Some(default) = schema.get("default") else {
        return;
    };
    if default_is_valid(schema, default) == Some(false) {
        let at = Pointer::parse(path).unwrap_or_default().child("default");
        warnings.push(
            Diagnostic::at(
                Code::DefaultMismatch,
                at,
                format!("default {default} does not match its own schema"),
            )
            .with_help("change the default, or the schema, so that the one fits the other"),
        );
    }
}
