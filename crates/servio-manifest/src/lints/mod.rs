//! Lints: warnings that leave the manifest valid. One file per lint, named as its code's name
//! (`W008` `tools-empty` is `tools_empty.rs`): its doc says what it checks, its `EXPLANATION`
//! is what `servio explain CODE` prints, and beside it `tools_empty.json` is a manifest that
//! raises it, whose diagnostics are a snapshot (`snapshots/`). A new lint is that file, its
//! fixture, a line here and a row in [`crate::rules`]; `xtask`'s tidy tests hold the names.

pub(crate) mod default_valid;
pub(crate) mod description_vague;
pub(crate) mod metric_key_granularity;
pub(crate) mod prefixed_name_length;
pub(crate) mod property_description;
pub(crate) mod required_in_properties;
pub(crate) mod tool_name_convention;
pub(crate) mod tools_empty;
pub(crate) mod unknown_field;
pub(crate) mod version_semver;

use crate::diagnostic::Diagnostic;
use crate::schema::{Keywords, SchemaPath};

/// The lints that look inside an `input_schema`, for one subschema; called from the walk
/// that `crate::schema::check_input_schema` makes anyway.
pub(crate) fn schema_lints(schema: &Keywords<'_>, path: &SchemaPath<'_>, warnings: &mut Vec<Diagnostic>) {
    property_description::check(schema, path, warnings);
    required_in_properties::check(schema, path, warnings);
    default_valid::check(schema, path, warnings);
}

/// The test of a lint's fixture: the manifest `$file`, beside the lint, raises `$code`, and what
/// [`crate::check`] says of it is a snapshot (`snapshots/`).
macro_rules! fixture_test {
    ($file:literal, $code:ident) => {
        #[cfg(test)]
        #[test]
        fn the_fixture_raises_it() {
            insta::assert_snapshot!(crate::lints::fixture_report(include_str!($file), crate::Code::$code));
        }
    };
}
pub(crate) use fixture_test;

/// What [`crate::check`] says of `source`, one diagnostic a line (`line:column CODE message`,
/// then its help), for a lint's snapshot.
///
/// # Panics
/// When `code` is not among what it says: a lint's fixture must raise its lint.
#[cfg(test)]
pub(crate) fn fixture_report(source: &str, code: crate::Code) -> String {
    let report = crate::check(source.as_bytes(), &crate::CheckOptions::default());
    let all = report.errors.iter().chain(&report.brief_errors).chain(&report.warnings);
    assert!(all.clone().any(|d| d.code == code), "the fixture does not raise {}", code.as_str());
    let lines = all.map(|d| {
        let help = d.help.as_deref().map(|help| format!("\n  = help: {help}")).unwrap_or_default();
        format!("{}:{} {} {}{help}", d.line, d.column, d.code.as_str(), d.message)
    });
    lines.collect::<Vec<_>>().join("\n")
}
