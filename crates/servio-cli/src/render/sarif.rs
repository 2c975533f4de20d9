//! SARIF 2.1.0 output, so that code review tools can show findings on the lines they concern.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use servio_manifest::locate::LineIndex;
use servio_manifest::{Code, Diagnostic, Report, Severity};

/// Collects results from many sources into one SARIF log with one run.
#[derive(Default)]
pub struct Builder {
    results: Vec<Value>,
    rules: BTreeSet<Code>,
}

impl Builder {
    /// Adds every diagnostic of one source.
    pub fn add(&mut self, source: &str, bytes: &[u8], report: &Report) {
        let lines = LineIndex::new(bytes);
        let all = report.errors.iter().chain(&report.brief_errors).chain(&report.warnings);
        for diagnostic in all {
            self.rules.insert(diagnostic.code);
            self.results.push(result(source, bytes, &lines, diagnostic));
        }
    }

    /// The SARIF log.
    pub fn finish(self) -> Value {
        let rules: Vec<Value> = self.rules.iter().map(|code| rule(*code)).collect();
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": { "driver": {
                    "name": "servio",
                    "version": env!("CARGO_PKG_VERSION"),
                    "informationUri": env!("CARGO_PKG_REPOSITORY"),
                    "rules": rules,
                }},
                "results": self.results,
            }],
        })
    }
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn rule(code: Code) -> Value {
    let explanation = code.explanation();
    let summary = explanation.lines().next().unwrap_or_default();
    json!({
        "id": code.as_str(),
        "name": code.name(),
        "shortDescription": { "text": summary },
        "fullDescription": { "text": explanation },
        "help": { "text": explanation },
        "defaultConfiguration": { "level": level(code.severity()) },
    })
}

fn result(source: &str, bytes: &[u8], lines: &LineIndex, d: &Diagnostic) -> Value {
    let (end_line, end_column) = lines.line_column(bytes, d.span.end.max(d.span.start));
    let text = match &d.help {
        Some(help) => format!("{}\nhelp: {help}", d.message),
        None => d.message.clone(),
    };
    json!({
        "ruleId": d.code.as_str(),
        "level": level(d.severity),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": source },
                "region": {
                    "startLine": d.line.max(1),
                    "startColumn": d.column.max(1),
                    "endLine": end_line,
                    "endColumn": end_column,
                    "byteOffset": d.span.start,
                    "byteLength": d.span.end.saturating_sub(d.span.start),
                },
            },
            "logicalLocations": [{ "fullyQualifiedName": d.pointer.as_str(), "kind": "member" }],
        }],
    })
}
