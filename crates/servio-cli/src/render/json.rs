//! The JSON report, one line per source; the shape is the manifest crate's
//! [`servio_manifest::report_json::to_json`], the contract external checks read.

use servio_manifest::Report;

/// The report for one source as one line of JSON.
pub fn render_line(source: &str, report: &Report) -> String {
    let mut line = servio_manifest::report_json::to_json(source, report).to_string();
    line.push('\n');
    line
}
