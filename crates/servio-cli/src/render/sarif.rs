//! SARIF 2.1.0 output, so that code review tools can show findings on the lines they concern.
//!
//! Columns are counted in Unicode code points, as the run's `columnKind` says (SARIF §3.14.27).
//! A file under the working directory is named relative to `%SRCROOT%` (§3.4.4), so that a log
//! made in CI points at the same files in a reviewer's checkout.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use servio_manifest::locate::LineIndex;
use servio_manifest::{Code, Diagnostic, Report, Severity};

/// The base every relative artifact location is resolved against.
const SRCROOT: &str = "%SRCROOT%";

/// Collects results from many sources into one SARIF log with one run.
pub struct Builder {
    results: Vec<Value>,
    /// Diagnostics the reports found but do not list (see `servio_manifest::MAX_LISTED`).
    omitted: usize,
    rules: BTreeSet<Code>,
    /// The working directory as a `file:` URL ending in `/`, when it can be named.
    root: Option<url::Url>,
    /// The docs' base URL, under which each rule has its page (`Code::page`).
    docs: String,
}

impl Builder {
    /// A builder that names files under the working directory relative to `%SRCROOT%` and
    /// links each rule to its page under `docs`.
    pub fn new(docs: &str) -> Builder {
        let root = std::env::current_dir().ok().and_then(|dir| dir.canonicalize().ok());
        Builder::with_root(root.as_deref(), docs)
    }

    /// A builder that names files under `root` relative to `%SRCROOT%`.
    pub fn with_root(root: Option<&Path>, docs: &str) -> Builder {
        let root = root.and_then(|dir| url::Url::from_directory_path(dir).ok());
        Builder { results: Vec::new(), omitted: 0, rules: BTreeSet::new(), root, docs: docs.to_owned() }
    }

    /// Adds every diagnostic of one source.
    pub fn add(&mut self, source: &str, bytes: &[u8], report: &Report) {
        let lines = LineIndex::new(bytes);
        let location = self.artifact_location(source);
        let all = report.errors.iter().chain(&report.brief_errors).chain(&report.warnings);
        for diagnostic in all {
            self.rules.insert(diagnostic.code);
            self.results.push(result(&location, bytes, &lines, diagnostic));
        }
        self.omitted += report.omitted.total();
    }

    /// Where a source is: a URL as it is, a file under the working directory relative to
    /// `%SRCROOT%`, any other file as an absolute `file:` URL.
    fn artifact_location(&self, source: &str) -> Value {
        if source.contains("://") {
            return json!({ "uri": source });
        }
        let Some(file) = Path::new(source).canonicalize().ok().and_then(|p| url::Url::from_file_path(p).ok()) else {
            // Standard input, or a file gone since it was read: its name, made a valid URI.
            return json!({ "uri": percent_encoded(source) });
        };
        match self.root.as_ref().filter(|root| file.as_str().starts_with(root.as_str())) {
            Some(root) => json!({ "uri": &file.as_str()[root.as_str().len()..], "uriBaseId": SRCROOT }),
            None => json!({ "uri": file.as_str() }),
        }
    }

    /// The SARIF log.
    pub fn finish(self) -> Value {
        let rules: Vec<Value> = self.rules.iter().map(|code| rule(*code, &self.docs)).collect();
        // Each result names its rule by index as well as by id (§3.27.6), so that a viewer
        // finds the rule, and its helpUri, without a search.
        let index: std::collections::HashMap<&str, usize> =
            self.rules.iter().enumerate().map(|(i, code)| (code.as_str(), i)).collect();
        let mut results = self.results;
        for result in &mut results {
            if let Some(&i) = result["ruleId"].as_str().and_then(|id| index.get(id)) {
                result["ruleIndex"] = json!(i);
            }
        }
        let mut run = json!({
            "tool": { "driver": {
                "name": "servio",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": env!("CARGO_PKG_REPOSITORY"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        });
        if let Some(root) = &self.root {
            run["originalUriBaseIds"] = json!({ SRCROOT: { "uri": root.as_str() } });
        }
        // A property bag (SARIF §3.8) carries what the results leave out, as the count of
        // problems found but not listed.
        if self.omitted > 0 {
            run["properties"] = json!({ "omittedResults": self.omitted });
        }
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [run],
        })
    }
}

/// Bytes percent-encoded in a name made a URI: all but RFC 3986's unreserved characters and `/`.
const NOT_IN_URI: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

fn percent_encoded(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, NOT_IN_URI).to_string()
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn rule(code: Code, docs: &str) -> Value {
    let explanation = code.explanation();
    let summary = explanation.lines().next().unwrap_or_default();
    json!({
        "id": code.as_str(),
        "name": code.name(),
        "shortDescription": { "text": summary },
        "fullDescription": { "text": explanation },
        "help": { "text": explanation },
        "helpUri": code.page(docs),
        "defaultConfiguration": { "level": level(code.severity()) },
    })
}

fn result(location: &Value, bytes: &[u8], lines: &LineIndex, d: &Diagnostic) -> Value {
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
                "artifactLocation": location,
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
