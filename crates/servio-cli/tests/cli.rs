//! The `servio` binary as users and scripts see it: exit codes, JSON shapes, and snapshots of
//! the rendered human output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn servio(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_servio")).args(args).current_dir(repo()).env("NO_COLOR", "1").output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn seed_example_is_valid_with_the_naming_lint_on_search_threads() {
    let out = servio(&["check", "examples/devcommunity.json"]);
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!("seed_example_human", stdout(&out));
    let out = servio(&["check", "--format", "json", "examples/devcommunity.json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["warnings"][0]["code"], "W002");
    assert_eq!(report["warnings"][0]["pointer"], "/tools/0/name");
    assert_eq!(
        (report["warnings"][0]["line"].as_u64(), report["warnings"][0]["column"].as_u64()),
        (Some(16), Some(15))
    );
}

#[test]
fn broken_example_shows_every_problem_at_once() {
    let out = servio(&["check", "examples/devcommunity-broken.json"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!("broken_example_human", stdout(&out));
}

#[test]
fn warnings_can_be_denied_and_allowed() {
    let out = servio(&["check", "--deny-warnings", "examples/devcommunity.json"]);
    assert_eq!(out.status.code(), Some(1));
    let out = servio(&[
        "check",
        "--deny-warnings",
        "--allow",
        "W002",
        "--allow",
        "property-description",
        "examples/devcommunity.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = servio(&["check", "--allow", "E020", "examples/devcommunity.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn directories_give_one_json_line_per_manifest_in_order() {
    let out = servio(&["check", "--format", "json", "-j", "2", "examples"]);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let sources: Vec<&str> = lines.iter().map(|l| l["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["examples/devcommunity-broken.json", "examples/devcommunity.json"]);
    assert_eq!((lines[0]["valid"].as_bool(), lines[1]["valid"].as_bool()), (Some(false), Some(true)));
}

#[test]
fn unreadable_sources_exit_2_after_reporting_the_rest() {
    let out = servio(&["check", "--format", "json", "examples/devcommunity.json", "examples/missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out).lines().count(), 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not read examples/missing.json"));
}

#[test]
fn sarif_is_one_log_with_rules_and_regions() {
    let out = servio(&["check", "--format", "sarif", "examples/devcommunity-broken.json"]);
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let results = log["runs"][0]["results"].as_array().unwrap();
    let http = results.iter().find(|r| r["ruleId"] == "E020").unwrap();
    let region = &http["locations"][0]["physicalLocation"]["region"];
    assert_eq!((region["startLine"].as_u64(), region["startColumn"].as_u64()), (Some(5), Some(12)));
    assert!(log["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap().iter().any(|r| r["id"] == "E020"));
}

#[test]
fn explain_documents_every_code_and_refuses_unknown_ones() {
    for code in servio_manifest::Code::ALL {
        let out = servio(&["explain", code.as_str()]);
        assert_eq!(out.status.code(), Some(0));
        assert!(stdout(&out).contains("Fix:"));
    }
    assert_eq!(servio(&["explain", "E999"]).status.code(), Some(2));
}

#[test]
fn brief_commands_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let response = dir.path().join("r.json");
    std::fs::write(&response, r#"{"data": {"totals": {"revenue": "$2,340.00", "none": null}}}"#).unwrap();
    let response = response.to_str().unwrap();
    let out = servio(&["brief", "extract", "--value-path", "data.totals.revenue", response]);
    assert_eq!((out.status.code(), stdout(&out).trim()), (Some(0), r#"{"value":2340,"raw":"$2,340.00"}"#));
    let out = servio(&["brief", "extract", "--value-path", "data.totals.none", response]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(servio(&["brief", "extract", "--value-path", "$.data", response]).status.code(), Some(2));
    // The seed example has no brief: exit 1; an unknown zone is bad input: exit 2.
    let resolve = |zone: &str| {
        servio(&["brief", "resolve", "examples/devcommunity.json", "--date", "2026-08-20", "--timezone", zone])
    };
    assert_eq!(resolve("UTC").status.code(), Some(1));
    assert_eq!(resolve("Mars/Olympus").status.code(), Some(2));
    assert_eq!(
        servio(&["address", "localhost:8443", "shop.getSalesSummary"]).stdout,
        b"localhost_8443_shop_getSalesSummary\n"
    );
}

/// One fixture per rule code (`tests/fixtures/CODE.json`): each must raise its own code, and
/// its rendered output is a snapshot, so a change to any message or span shows in review.
#[test]
fn every_rule_has_a_fixture_that_raises_it() {
    for code in servio_manifest::Code::ALL {
        let path = format!("crates/servio-cli/tests/fixtures/{}.json", code.as_str());
        assert!(repo().join(&path).exists(), "no fixture for {code}");
        let json = servio(&["check", "--format", "json", &path]);
        let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let raised = ["errors", "warnings"]
            .iter()
            .flat_map(|list| report[list].as_array().unwrap())
            .chain(report["brief"]["errors"].as_array().unwrap())
            .any(|d| d["code"] == code.as_str());
        assert!(raised, "{path} does not raise {code}: {report}");
        let human = servio(&["check", &path]);
        insta::assert_snapshot!(format!("rule_{}", code.as_str()), stdout(&human));
    }
}
