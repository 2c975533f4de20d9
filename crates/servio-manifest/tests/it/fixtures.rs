//! One fixture per error and brief rule, in the crate that owns the rules
//! (`tests/rules/CODE.json`): each must raise its own code, and what `check` says of it is a
//! snapshot, so a change to any message, span or help shows in review. A lint's fixture and
//! snapshot live beside it (`src/lints/`); the CLI snapshots how the same fixtures are
//! rendered for people (`servio-cli`'s `every_rule_has_a_fixture_that_raises_it`).

use std::path::PathBuf;

use servio_manifest::{CheckOptions, Code, Severity, check};

/// Where the fixture of `code` is.
fn fixture(code: Code) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rules").join(format!("{}.json", code.as_str()))
}

/// What `check` says of `source`, one diagnostic a line (`line:column CODE message`, then its
/// help), as the lints' snapshots read.
fn said(source: &[u8]) -> (Vec<Code>, String) {
    let report = check(source, &CheckOptions::default());
    let all: Vec<_> = report.errors.iter().chain(&report.brief_errors).chain(&report.warnings).collect();
    let lines = all.iter().map(|d| {
        let help = d.help.as_deref().map(|help| format!("\n  = help: {help}")).unwrap_or_default();
        format!("{}:{} {} {}{help}", d.line, d.column, d.code.as_str(), d.message)
    });
    (all.iter().map(|d| d.code).collect(), lines.collect::<Vec<_>>().join("\n"))
}

#[test]
fn every_error_and_brief_rule_has_a_fixture_that_raises_it() {
    let rules = Code::ALL.iter().filter(|code| code.severity() != Severity::Warning);
    for &code in rules {
        let path = fixture(code);
        let source = std::fs::read(&path).unwrap_or_else(|_| panic!("no fixture for {code}: {}", path.display()));
        let (codes, text) = said(&source);
        assert!(codes.contains(&code), "{} does not raise {code}:\n{text}", path.display());
        insta::assert_snapshot!(format!("rule_{}", code.as_str()), text);
    }
}
