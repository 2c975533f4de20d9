//! The report as JSON: the shape `servio check --format json` prints and external checks read
//! (`shared/conformance/run.py`), and what the platform shows for a site.

use serde_json::{Value, json};

use crate::{Diagnostic, Report};

/// The report as a JSON value.
pub fn to_json(source: &str, report: &Report) -> Value {
    let metrics: Vec<Value> = report
        .brief
        .iter()
        .flat_map(|brief| &brief.metrics)
        .map(|m| {
            json!({
                "key": m.key,
                "tool": m.tool,
                "granularity": m.granularity.as_str(),
                "valuePath": m.value_path.as_str(),
                "unit": m.unit,
                "args": m.args,
                "label": crate::brief::canonical_label(&m.key),
            })
        })
        .collect();
    json!({
        "source": source,
        "valid": report.is_valid(),
        "errors": diagnostics(&report.errors),
        "warnings": diagnostics(&report.warnings),
        "brief": {
            "status": report.brief_status.as_str(),
            "errors": diagnostics(&report.brief_errors),
            "metrics": metrics,
        },
        // What the lists leave out (a report lists at most `MAX_LISTED`), so that a program
        // knows the totals.
        "omitted": {
            "errors": report.omitted.errors,
            "brief_errors": report.omitted.brief_errors,
            "warnings": report.omitted.warnings,
        },
    })
}

fn diagnostics(list: &[Diagnostic]) -> Vec<Value> {
    list.iter()
        .map(|d| {
            json!({
                "code": d.code.as_str(),
                "severity": d.severity.as_str(),
                "pointer": d.pointer.as_str(),
                "line": d.line,
                "column": d.column,
                "span": { "start": d.span.start, "end": d.span.end },
                "message": d.message,
                "help": d.help,
            })
        })
        .collect()
}
