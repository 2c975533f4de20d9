//! The JSON report, one line per source; the shape is the manifest crate's
//! [`servio_manifest::report_json::to_json`], the contract external checks read.

use servio_manifest::Report;

/// The report for one source as one line of JSON.
pub fn render_line(source: &str, report: &Report) -> String {
    let mut line = servio_manifest::report_json::to_json(source, report).to_string();
    line.push('\n');
    line
}

/// A source that could not be read or fetched, as one line of JSON in its place among the
/// reports: `{"source": ..., "error": ...}`, so a program reading the lines misses nothing.
pub fn error_line(source: &str, message: &str) -> String {
    let mut line = serde_json::json!({ "source": source, "error": message }).to_string();
    line.push('\n');
    line
}
