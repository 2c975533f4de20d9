//! `servio check --fix`: the repairs that are mechanical, applied to the text.
//!
//! A diagnostic whose repair needs no judgment carries it as a [`Fix`]: a near miss of a member
//! name renamed (E010, B001, W007), a JSONPath `valuePath` rewritten as a dotted path (B040), a
//! granularity written as its adjective or in capitals (B050), a trailing comma (E001). Each is
//! an edit of the bytes under the diagnostic's span, so everything else stays as its author
//! wrote it (indentation, member order, numbers as written). A syntax error hides everything
//! after it, so fixing runs in passes: check, apply every fix found, check again.

use std::collections::HashSet;

use crate::diagnostic::{Diagnostic, Fix};
use crate::rules::Code;
use crate::{CheckOptions, Report, check};

/// The most passes of check-and-repair: one trailing comma is found per pass (the parse stops
/// at it), so a text with more trailing commas than this is left with the rest reported.
pub const MAX_PASSES: usize = 64;

/// What [`fix`] did.
#[derive(Debug, Clone)]
pub struct Fixed {
    /// The text after every fix; the source as it was when nothing applied.
    pub text: Vec<u8>,
    /// Each change made, in the order of the text.
    pub changes: Vec<Change>,
    /// The check of the fixed text: what remains.
    pub report: Report,
}

impl Fixed {
    /// True when the text was changed.
    pub fn changed(&self) -> bool {
        !self.changes.is_empty()
    }
}

/// One change [`fix`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The rule whose diagnostic carried the fix.
    pub code: Code,
    /// 1-based line of the change. No fix adds or removes a line, so it is the line in the
    /// source as well as in the fixed text.
    pub line: usize,
    /// 1-based column, in characters, in the text as it was when the change was made.
    pub column: usize,
    /// What changed, for people: "renamed `inputSchema` to `input_schema`".
    pub what: String,
}

/// Applies every mechanical fix to `source`, checking with `options` (a lint left out with
/// `allow` is not fixed either), until none is left or [`MAX_PASSES`] have run.
pub fn fix(source: &[u8], options: &CheckOptions) -> Fixed {
    let mut text = source.to_vec();
    let mut changes = Vec::new();
    for _ in 0..MAX_PASSES {
        let report = check(&text, options);
        let made = apply(&mut text, &report);
        if made.is_empty() {
            changes.sort_by_key(|change: &Change| (change.line, change.column));
            return Fixed { text, changes, report };
        }
        changes.extend(made);
    }
    let report = check(&text, options);
    changes.sort_by_key(|change| (change.line, change.column));
    Fixed { text, changes, report }
}

/// Applies the fixes of one report to `text`, last first so that earlier spans stay where they
/// are; a fix whose span overlaps one already applied, or a second rename to the same name in
/// one object (it would make a repeated member), waits for the next pass or is left.
fn apply(text: &mut Vec<u8>, report: &Report) -> Vec<Change> {
    let all = report.errors.iter().chain(&report.brief_errors).chain(&report.warnings);
    let mut fixes: Vec<(&Diagnostic, &Fix)> = all.filter_map(|d| d.fix.as_ref().map(|fix| (d, fix))).collect();
    fixes.sort_by_key(|(d, _)| std::cmp::Reverse(d.span.start));
    let mut renamed = HashSet::new();
    let mut changes = Vec::new();
    let mut free_from = text.len();
    for (diagnostic, fix) in fixes {
        let span = diagnostic.span;
        if span.end > free_from || span.start > span.end {
            continue;
        }
        if let Fix::Rename(to) = fix {
            let object = diagnostic.pointer.as_str().rsplit_once('/').map_or("", |(parent, _)| parent);
            if !renamed.insert((object.to_owned(), to.clone())) {
                continue;
            }
        }
        let original = String::from_utf8_lossy(&text[span.start..span.end]).into_owned();
        let replacement = fix.replacement();
        if original == replacement {
            continue;
        }
        text.splice(span.start..span.end, replacement.into_bytes());
        free_from = span.start;
        changes.push(Change {
            code: diagnostic.code,
            line: diagnostic.line,
            column: diagnostic.column,
            what: fix.describe(&original),
        });
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::fix;
    use crate::{BriefStatus, CheckOptions, Code};

    /// The site owner's manifest of issue 48, with every mechanical mistake at once.
    const BROKEN: &str = r#"{
  "name": "Shop",
  "version": "1.0.0",
  "server": { "url": "https://shop.example.com/api/servio" },
  "auth": { "type": "bearer" },
  "tools": [
    {
      "name": "shop.getSalesSummary",
      "description": "Summarise sales for a date range: revenue and order count.",
      "inputSchema": {
        "type": "object",
        "properties": {
          "from": { "type": "string", "description": "First date" },
          "to": { "type": "string", "description": "Last date" },
        },
        "required": ["from", "to"]
      }
    }
  ],
  "brief": {
    "metrics": [
      {
        "key": "sales.revenue.daily",
        "tool": "shop.getSalesSummary",
        "args": { "from": "{{periodStart}}", "to": "{{periodEnd}}" },
        "valuePath": "$.data[0].revenue",
        "granularity": "Daily",
      }
    ]
  }
}
"#;

    #[test]
    fn every_mechanical_fix_is_applied_and_the_rest_of_the_text_is_kept() {
        let fixed = fix(BROKEN.as_bytes(), &CheckOptions::default());
        let text = String::from_utf8(fixed.text.clone()).unwrap();
        let said: Vec<String> =
            fixed.changes.iter().map(|c| format!("{}:{} {} {}", c.line, c.column, c.code, c.what)).collect();
        assert_eq!(
            said,
            [
                "10:7 E010 renamed `inputSchema` to `input_schema`",
                "14:65 E001 removed ,",
                "26:22 B040 replaced \"$.data[0].revenue\" with \"data.0.revenue\"",
                "27:24 B050 replaced \"Daily\" with \"day\"",
                "27:31 E001 removed ,",
            ]
        );
        assert!(fixed.report.is_valid(), "{:?}", fixed.report.errors);
        assert_eq!(fixed.report.brief_status, BriefStatus::Valid);
        assert_eq!(fixed.report.error_count() + fixed.report.warning_count(), 0);
        // Nothing else moved: the fixed text is the source with exactly these edits.
        let expected = BROKEN
            .replace("\"inputSchema\"", "\"input_schema\"")
            .replace("\"Last date\" },\n", "\"Last date\" }\n")
            .replace("\"$.data[0].revenue\"", "\"data.0.revenue\"")
            .replace("\"Daily\",", "\"day\"");
        assert_eq!(text, expected);
    }

    #[test]
    fn nothing_to_fix_leaves_the_text_as_it_is_and_says_what_remains() {
        let source = br#"{"name": "Shop", "version": "1.0.0", "server": {"url": "http://shop.example.com"},
            "auth": {"type": "bearer"}, "tools": []}"#;
        let fixed = fix(source, &CheckOptions::default());
        assert!(!fixed.changed());
        assert_eq!(fixed.text, source);
        assert_eq!(fixed.report.errors[0].code, Code::HttpsUrl);
    }

    /// Two near misses of one name in one object: renaming both would repeat the member.
    #[test]
    fn two_near_misses_of_one_name_rename_only_one() {
        let source = br#"{"name": "Shop", "version": "1.0.0", "server": {"url": "https://shop.example.com"},
            "auth": {"type": "bearer"}, "tools": [], "breif": {"metrics": []}, "Brief": {"metrics": []}}"#;
        let fixed = fix(source, &CheckOptions::default());
        assert_eq!(fixed.changes.len(), 1, "{:?}", fixed.changes);
        assert!(!fixed.report.errors.iter().any(|e| e.code == Code::DuplicateMember));
    }

    /// A lint turned off is not fixed either.
    #[test]
    fn an_allowed_lint_is_not_fixed() {
        let source = br#"{"name": "Shop", "version": "1.0.0", "server": {"url": "https://shop.example.com"},
            "auth": {"type": "bearer"}, "tools": [], "descripton": "A shop"}"#;
        let options = CheckOptions { allow: vec![Code::UnknownField], ..Default::default() };
        assert!(!fix(source, &options).changed());
        let fixed = fix(source, &CheckOptions::default());
        assert_eq!(fixed.changes[0].what, "renamed `descripton` to `description`");
    }
}
