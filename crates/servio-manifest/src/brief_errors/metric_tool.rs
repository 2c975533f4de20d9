//! B020 `metric-tool`: each metric's `tool` names a tool of this manifest, exactly and
//! without any site prefix.

use crate::brief::Tools;
use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain B020` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that each metric's `tool` names a tool of this manifest, exactly and without any site prefix.\n\nWhy: the platform calls that tool to collect the metric.\n\nExample:\n    \"tool\": \"getSalesSummary\"   (while the tool is named \"shop.getSalesSummary\")\n\nFix: write the tool's name exactly as in `tools`.";

crate::rules::fixture_test!("metric_tool.json", MetricTool);

/// How many tool names a help text lists.
const MAX_NAMES_LISTED: usize = 20;

/// The index of the tool named `name`, or an error saying so: with a did-you-mean when there
/// is no such tool, and pointing at the tool's own error when its definition has no
/// `input_schema` to check the metric against (interpretation §2: a problem that follows
/// from another is worded as such).
pub(crate) fn check(
    name: &str,
    tools: &mut Tools<'_, '_>,
    at: &Pointer,
    errors: &mut Vec<Diagnostic>,
) -> Option<usize> {
    if let Some(&index) = tools.by_name.get(name) {
        let tool = &tools.list[index];
        if tool.input_schema.is_none() {
            errors.push(
                Diagnostic::at(
                    Code::MetricTool,
                    at.clone(),
                    format!("the tool {name:?} is invalid: it has no `input_schema`"),
                )
                .with_help(format!(
                    "fix the tool first (its error is at {}); the metric is checked against its `input_schema`",
                    tool.schema_at
                )),
            );
            return None;
        }
        return Some(index);
    }
    let names: Vec<&str> = tools.list.iter().map(|t| t.name).collect();
    let near = if tools.searches_left > 0 {
        tools.searches_left -= 1;
        // A tool written without its namespace, or with a site prefix, or misspelt.
        tools
            .list
            .iter()
            .find(|t| {
                t.name.rsplit('.').next() == Some(name) || name.ends_with(&format!("_{}", t.name.replace(['.'], "_")))
            })
            .map(|t| t.name)
            .or_else(|| crate::suggest::closest(name, &names))
    } else {
        None
    };
    let help = match near {
        Some(near) => format!("did you mean \"{near}\"? write the name exactly as in `tools`, without a site prefix"),
        None if names.is_empty() => "the manifest has no tools".to_owned(),
        None if names.len() > MAX_NAMES_LISTED => format!(
            "tools in this manifest: {}, and {} more",
            names[..MAX_NAMES_LISTED].join(", "),
            names.len() - MAX_NAMES_LISTED
        ),
        None => format!("tools in this manifest: {}", names.join(", ")),
    };
    errors.push(
        Diagnostic::at(Code::MetricTool, at.clone(), format!("no tool named {name:?} in this manifest"))
            .with_help(help),
    );
    None
}

#[cfg(test)]
mod tests {
    use crate::{BriefStatus, CheckOptions, check};

    /// Regression (issue 48): a metric naming a tool whose `input_schema` was missing heard "no
    /// tool named … in this manifest", about a tool written a few lines above it.
    #[test]
    fn a_tool_without_a_schema_is_named_invalid_not_absent() {
        let source = r#"{"name": "Shop", "version": "1.0.0", "server": {"url": "https://shop.example.com/api"},
            "auth": {"type": "bearer"},
            "tools": [{"name": "shop.getSales", "description": "Sum the sales of one day, in the shop's currency."}],
            "brief": {"metrics": [{"key": "sales.revenue.daily", "tool": "shop.getSales", "valuePath": "total"}]}}"#;
        let report = check(source.as_bytes(), &CheckOptions::default());
        // The verdicts are those of before: invalid, and the brief ignored.
        assert!(!report.is_valid());
        assert_eq!(report.brief_status, BriefStatus::Ignored);
        let error = &report.brief_errors[0];
        assert_eq!(error.message, "the tool \"shop.getSales\" is invalid: it has no `input_schema`");
        assert_eq!(
            error.help.as_deref(),
            Some(
                "fix the tool first (its error is at /tools/0/input_schema); the metric is checked against its `input_schema`"
            )
        );
    }
}
