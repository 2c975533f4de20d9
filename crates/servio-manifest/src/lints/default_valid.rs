//! W006 `default-valid`: a `default` must validate against the schema it sits in.
//!
//! Defaults are shown to the AI as good values; a default of the wrong type teaches it to
//! send wrong arguments.

use crate::diagnostic::Diagnostic;
use crate::rules::Code;
use crate::schema::{Keywords, SchemaPath, default_is_valid_in};

pub(crate) fn check(schema: &Keywords<'_>, path: &SchemaPath<'_>, warnings: &mut Vec<Diagnostic>) {
    let Some(default) = schema.default else {
        return;
    };
    if default_is_valid_in(schema, default) == Some(false) {
        warnings.push(
            Diagnostic::at(
                Code::DefaultMismatch,
                path.pointer().child("default"),
                format!("default {default} does not match its own schema"),
            )
            .with_help("change the default, or the schema, so that the one fits the other"),
        );
    }
}
