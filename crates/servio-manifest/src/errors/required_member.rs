//! E010 `required-member`: every required member is present.
//!
//! Raised wherever the manifest is read, by [`crate::fields::Object::required`] and the readers
//! built on it, with the codes [`crate::fields::MANIFEST`]; in the brief the same reader
//! reports B001 (`brief-shape`) instead.

/// What `servio explain E010` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that every required member is present: `name`, `version`, `server`, `server.url`, `auth`, `auth.type`, `tools`, and each tool's `name`, `description` and `input_schema` (and, in a brief, `metrics` and each metric's `key`, `tool` and `valuePath`).\n\nWhy: the platform cannot show, authenticate or call a site without them.\n\nExample:\n    { \"name\": \"Forum\", \"server\": { \"url\": \"https://forum.example.com/api\" } }\n\nFix: add the member the message names, at the pointer it gives.";

crate::rules::fixture_test!("required_member.json", RequiredMember);

use std::collections::HashMap;

use crate::diagnostic::{Diagnostic, Fix};
use crate::pointer::Pointer;
use crate::rules::Code;

/// Joins each missing member (E010, or B001 in the brief) with its near miss: an unknown member
/// of the same object whose did-you-mean (W007) is the missing name, as `inputSchema` is for
/// `input_schema`. The two are one problem (interpretation §2): the error says so, its caret
/// goes under the name as written, its help and fix are the rename, and the warning goes.
/// Otherwise the error would come first, and adding what it asks for would leave the author's
/// real member ignored beside an empty one.
pub(crate) fn join_near_misses(missing: [&mut Vec<Diagnostic>; 2], warnings: &mut Vec<Diagnostic>) {
    // Each W007 that suggests a name, by (its object, the name it suggests).
    let mut renames: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, warning) in warnings.iter().enumerate() {
        if let (Code::UnknownField, Some(Fix::Rename(to))) = (warning.code, &warning.fix) {
            renames.insert((parent(&warning.pointer), to), i);
        }
    }
    if renames.is_empty() {
        return;
    }
    let mut joined = vec![false; warnings.len()];
    for diagnostic in missing.into_iter().flat_map(|list| list.iter_mut()) {
        let Some(member) = diagnostic.missing.clone() else { continue };
        let Some(&i) = renames.get(&(parent(&diagnostic.pointer), member.as_str())) else { continue };
        let near = &warnings[i];
        let written = near.pointer.segments().last().unwrap_or_default();
        diagnostic.message = format!("missing required member `{member}`, written `{written}`");
        diagnostic.help = Some(format!("rename `{written}` to `{member}`"));
        diagnostic.anchor = near.anchor.clone();
        diagnostic.fix = Some(Fix::Rename(member));
        joined[i] = true;
    }
    let mut index = 0;
    warnings.retain(|_| {
        index += 1;
        !joined[index - 1]
    });
}

/// The pointer of the object that holds the member at `pointer`.
fn parent(pointer: &Pointer) -> &str {
    pointer.as_str().rsplit_once('/').map_or("", |(parent, _)| parent)
}

#[cfg(test)]
mod tests {
    use crate::{CheckOptions, Code, check};

    /// The messages of a check of `source`, `CODE pointer message (help)`, errors, brief
    /// errors and warnings in that order.
    fn said(source: &str) -> Vec<String> {
        let report = check(source.as_bytes(), &CheckOptions::default());
        let all = report.errors.iter().chain(&report.brief_errors).chain(&report.warnings);
        all.map(|d| format!("{} {} {} ({})", d.code, d.pointer, d.message, d.help.as_deref().unwrap_or_default()))
            .collect()
    }

    const TOOL: &str =
        r#"{"name": "shop.getSales", "description": "Sum the sales of one day, in the shop's currency.""#;

    fn manifest(tool_rest: &str, brief: &str) -> String {
        format!(
            r#"{{"name": "Shop", "version": "1.0.0", "server": {{"url": "https://shop.example.com/api"}},
                "auth": {{"type": "bearer"}}, "tools": [{TOOL}, {tool_rest}}}]{brief}}}"#
        )
    }

    /// Regression (issue 48): `inputSchema` gave E010 "missing `input_schema`, add it" and then
    /// W007 "unknown `inputSchema`"; doing what E010 said left the real schema ignored.
    #[test]
    fn a_near_miss_is_one_error_whose_help_is_the_rename() {
        let source = manifest(r#""inputSchema": {"type": "object"}"#, "");
        assert_eq!(
            said(&source),
            [
                "E010 /tools/0/input_schema missing required member `input_schema`, written `inputSchema` (rename `inputSchema` to `input_schema`)"
            ]
        );
        let report = check(source.as_bytes(), &CheckOptions::default());
        let error = &report.errors[0];
        assert_eq!(&source[error.span.start..error.span.end], "\"inputSchema\"");
        assert_eq!(error.fix, Some(crate::Fix::Rename("input_schema".into())));
    }

    #[test]
    fn the_brief_joins_its_near_misses_too_and_other_unknown_members_stay_warnings() {
        let source = manifest(
            r#""input_schema": {"type": "object"}, "inputschema_note": 1"#,
            r#", "brief": {"metrics": [{"key": "sales.revenue.daily", "tool": "shop.getSales", "value_path": "total"}]}"#,
        );
        let said = said(&source);
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(
            said[0],
            "B001 /brief/metrics/0/valuePath missing required member `valuePath`, written `value_path` (rename `value_path` to `valuePath`)"
        );
        assert!(said[1].starts_with("W007 /tools/0/inputschema_note unknown member"), "{said:?}");
    }

    /// Turning W007 off leaves the error's rename as it is.
    #[test]
    fn allowing_w007_keeps_the_rename() {
        let source = manifest(r#""inputSchema": {"type": "object"}"#, "");
        let options = CheckOptions { allow: vec![Code::UnknownField], ..Default::default() };
        let report = check(source.as_bytes(), &options);
        assert_eq!(report.errors[0].help.as_deref(), Some("rename `inputSchema` to `input_schema`"));
    }
}
