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
    assert_eq!(
        sources,
        [
            "examples/devcommunity-broken.json",
            "examples/devcommunity.json",
            "examples/forum-brief.json",
            "examples/shop-brief.json"
        ]
    );
    let valid: Vec<Option<bool>> = lines.iter().map(|l| l["valid"].as_bool()).collect();
    assert_eq!(valid, [Some(false), Some(true), Some(true), Some(true)]);
}

#[test]
fn unreadable_sources_exit_2_after_reporting_the_rest() {
    let out = servio(&["check", "--format", "json", "examples/devcommunity.json", "examples/missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    // The report, then the missing file's own record.
    assert_eq!(stdout(&out).lines().count(), 2);
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

/// The manifest crate's fixture of `code`, beside its rule's file (`tools_empty.json` beside
/// `tools_empty.rs`) in the folder of its kind: `errors/`, `brief_errors/` or `lints/`.
fn fixture(code: servio_manifest::Code) -> String {
    let folder = match code.as_str().as_bytes()[0] {
        b'E' => "errors",
        b'B' => "brief_errors",
        _ => "lints",
    };
    format!("crates/servio-manifest/src/{folder}/{}.json", code.name().replace('-', "_"))
}

/// The manifest crate's fixture of each rule, errors, brief codes and lints alike (beside its
/// rule, where the rule's own snapshot is), as `servio check` prints it for people and reports
/// it in JSON: each raises its own code, and the rendered output is a snapshot.
#[test]
fn every_rule_has_a_fixture_that_raises_it() {
    for &code in servio_manifest::Code::ALL {
        let path = fixture(code);
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

/// Messages that read badly once (issue 11): several members missing from one object, a
/// trailing comma, repeated bad characters, an anchor name, an http URL. One snapshot each.
#[test]
fn messages_read_cleanly() {
    let dir = repo().join("crates/servio-cli/tests/fixtures/messages");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    assert!(names.len() >= 4);
    for path in names {
        let relative = path.strip_prefix(repo()).unwrap().to_str().unwrap().to_owned();
        let out = servio(&["check", &relative]);
        assert_eq!(out.status.code(), Some(1), "{relative}");
        let stem = path.file_stem().unwrap().to_str().unwrap();
        insta::assert_snapshot!(format!("message_{stem}"), stdout(&out));
    }
}

/// Regression: a valid manifest whose brief is ignored exited 0, so a site owner's CI never
/// heard that collection was lost. It is still reported valid.
#[test]
fn an_ignored_brief_exits_1_and_stays_valid() {
    let path = &fixture(servio_manifest::Code::MetricTool);
    let out = servio(&["check", "--format", "json", path]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["valid"].as_bool(), report["brief"]["status"].as_str()), (Some(true), Some("ignored")));
    assert_eq!(servio(&["check", path]).status.code(), Some(1));
    let help = stdout(&servio(&["check", "--help"]));
    assert!(help.contains("its brief ignored"), "{help}");
    assert!(stdout(&servio(&["explain", "B020"])).contains("`servio check` exits 1"));
}

#[test]
fn explain_without_a_code_lists_every_rule() {
    let out = servio(&["explain"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for code in servio_manifest::Code::ALL {
        assert!(text.contains(&format!("  {} {}", code.as_str(), code.name())), "{code} missing from:\n{text}");
    }
}

/// A directory of three manifests: one valid, one invalid, one whose brief is ignored.
fn three_manifests() -> tempfile::TempDir {
    use servio_manifest::Code::{HttpsUrl, MetricTool, VersionSemver};
    let dir = tempfile::tempdir().unwrap();
    for (code, to) in [(VersionSemver, "a-valid.json"), (HttpsUrl, "b-invalid.json"), (MetricTool, "c-ignored.json")] {
        std::fs::copy(repo().join(fixture(code)), dir.path().join(to)).unwrap();
    }
    dir
}

#[test]
fn many_files_end_with_a_summary_and_quiet_prints_only_problems() {
    let dir = three_manifests();
    let path = dir.path().to_str().unwrap();
    let out = servio(&["check", path]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(
        stderr.trim_end().lines().last(),
        Some("3 manifests: 1 valid, 1 invalid, 1 with its brief ignored; 1 warning")
    );
    assert!(stdout(&out).contains("a-valid.json: valid, 1 warning, brief valid (1 metric)"));

    let quiet = servio(&["check", "--quiet", "--allow", "W001", path]);
    assert_eq!(quiet.status.code(), Some(1));
    assert!(quiet.stderr.is_empty(), "{}", String::from_utf8_lossy(&quiet.stderr));
    let text = stdout(&quiet);
    assert!(!text.contains("a-valid.json"), "{text}");
    assert!(text.contains("b-invalid.json:6:12: E020"), "{text}");
    assert!(text.contains("c-ignored.json") && text.contains("(the brief is ignored)"), "{text}");
    assert!(!text.contains(": invalid ("), "summary lines are not problems: {text}");
}

/// Regression: in JSON an unreadable source was only a line on stderr, so a program reading
/// the records could not tell which source was missing.
#[test]
fn an_unreadable_source_is_a_json_record_in_its_place() {
    let out = servio(&["check", "--format", "json", "examples/missing.json", "examples/devcommunity.json"]);
    assert_eq!(out.status.code(), Some(2));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["source"], "examples/missing.json");
    assert!(lines[0]["error"].as_str().unwrap().starts_with("could not read examples/missing.json"));
    assert_eq!(lines[1]["valid"], true);
}

#[test]
fn sarif_counts_code_points_and_names_files_under_srcroot() {
    let out = servio(&["check", "--format", "sarif", "examples/devcommunity-broken.json"]);
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &log["runs"][0];
    assert_eq!(run["columnKind"], "unicodeCodePoints");
    let root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"].as_str().unwrap();
    assert!(root.starts_with("file:///") && root.ends_with('/'), "{root}");
    let location = &run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(
        (location["uri"].as_str(), location["uriBaseId"].as_str()),
        (Some("examples/devcommunity-broken.json"), Some("%SRCROOT%"))
    );

    // A file outside the working directory keeps an absolute file: URI.
    let dir = three_manifests();
    let outside = dir.path().join("b-invalid.json");
    let out = servio(&["check", "--format", "sarif", outside.to_str().unwrap()]);
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let location = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert!(location["uri"].as_str().unwrap().starts_with("file:///"), "{location}");
    assert!(location.get("uriBaseId").is_none());
}

#[test]
fn flags_read_as_a_user_expects() {
    let out = servio(&["demo-site", "--auth", "apikey", "--tls-dir", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error:") && stderr.contains("[possible values: bearer, oauth2]"), "{stderr}");

    // Every environment variable is shown the same way, its value never.
    for command in [&["serve", "--help"][..], &["worker", "--help"], &["mcp", "--help"], &["call", "--help"]] {
        let help = Command::new(env!("CARGO_BIN_EXE_servio"))
            .args(command)
            .env("SERVIO_TOKEN", "secret-token-value")
            .env("SERVIO_CA_CERT", "/somewhere/ca.pem")
            .output()
            .unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        assert!(!help.contains("secret-token-value") && !help.contains("/somewhere"), "{help}");
        let shown: Vec<&str> = help.split("[env: ").skip(1).map(|rest| rest.split(']').next().unwrap()).collect();
        assert!(!shown.is_empty() && shown.iter().all(|name| !name.contains('=')), "{shown:?}");
    }
    let mcp = stdout(&servio(&["mcp", "--help"]));
    assert!(mcp.contains("[env: SERVIO_CA_CERT]"), "{mcp}");
    let usage = mcp.lines().find(|l| l.starts_with("Usage:")).unwrap();
    assert!(!usage.contains("--token"), "{usage}");

    // servio mcp without a token says how to get one, as an error like every other.
    let out = Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(["mcp", "--url", "http://127.0.0.1:9"])
        .env_remove("SERVIO_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error: no API token: pass --token or set SERVIO_TOKEN"), "{stderr}");
}

#[test]
fn every_error_starts_with_error() {
    let resolve =
        servio(&["brief", "resolve", "examples/devcommunity.json", "--date", "2026-08-20", "--timezone", "UTC"]);
    let broken =
        servio(&["brief", "resolve", "examples/devcommunity-broken.json", "--date", "2026-08-20", "--timezone", "UTC"]);
    let missing = servio(&["check", "examples/missing.json"]);
    let unknown = servio(&["explain", "E999"]);
    for out in [resolve, broken, missing, unknown] {
        assert_ne!(out.status.code(), Some(0));
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
}
