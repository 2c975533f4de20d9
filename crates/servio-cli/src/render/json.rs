//! The JSON report: the contract external checks read (see `shared/conformance/run.py`).

use serde_json::{Value, json};
use servio_manifest::{Diagnostic, Report};

/// The report for one source as one line of JSON.
pub fn render_line(source: &str, report: &Report) -> String {
    let mut line = to_value(source, report).to_string();
    line.push('\n');
    line
}

/// The report as a JSON value.
pub fn to_value(source: &str, report: &Report) -> Value {
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
                "label": servio_manifest::brief::canonical_label(&m.key),
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
