//! The API's OpenAPI document, judged by tools nobody here wrote, against `servio demo`:
//! `openapi-spec-validator` finds no error in it, and schemathesis (`--checks all`, about two
//! minutes, the demo user's API token) finds no server error, no answer that violates its
//! schema, no undocumented status code and no undocumented content type. Both come from PyPI,
//! pinned in `tests/openapi/requirements.txt`, installed by `.ci/run` into
//! `tests/openapi/.venv`; without them the test says it is skipped, except in CI.
//!
//! Schemathesis's other checks run and are read, but do not fail the test: they judge what the
//! document cannot say (a wrong password is a `400` for a schema-valid body, `ST202`). A run
//! that could not reach the platform, or could not use the document, fails it too, and the
//! platform must still be ready after it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::servio_demo::{read_json as read_demo_json, start_with_log};

/// Schemathesis's failure codes in the four classes that fail the test: a server error
/// (`ST101`, `ST102`), an answer its documented schema rejects or that does not parse as its
/// type (`ST108`-`ST110`), an undocumented status code (`ST103`) and an undocumented or
/// malformed content type (`ST104`-`ST106`). `schemathesis explain CODE` says what each means.
const FAILING: [&str; 9] = ["ST101", "ST102", "ST103", "ST104", "ST105", "ST106", "ST108", "ST109", "ST110"];

/// Errors of a run (not failures of a check) that say the platform did not answer, or that the
/// document could not be read or used; schemathesis's own "Runtime Error"s are not ours.
const FAILING_ERRORS: [&str; 7] = [
    "Network Error",
    "Unhealthy API",
    "Unresponsive Operation",
    "Server Unavailable",
    "Schema Error",
    "Authentication Error",
    "Configuration Error",
];

/// Seconds of schemathesis in all: most for every operation but `delete_token`, then some for
/// `delete_token` alone, so that the token the run uses is not deleted before the rest is tested.
const SECONDS: [u32; 2] = [100, 20];

fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi")
}

/// The venv's `bin` folder, when `.ci/run` made it.
fn venv_bin() -> Option<PathBuf> {
    let bin = tools_dir().join(".venv/bin");
    if bin.join("schemathesis").exists() && bin.join("openapi-spec-validator").exists() {
        return Some(bin);
    }
    // CI installs them (.ci/run): there a missing tool is a failure, not a skip.
    assert!(std::env::var_os("CI").is_none(), "schemathesis and openapi-spec-validator are not installed in CI");
    eprintln!(
        "skipped: schemathesis and openapi-spec-validator are not installed in tests/openapi/.venv (see .ci/run)"
    );
    None
}

/// Runs `command` to its end (at most `limit`), answering its exit code and its output.
async fn run(mut command: tokio::process::Command, limit: Duration) -> (Option<i32>, String) {
    let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let output = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{command:?} ran longer than {limit:?}"))
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

/// The failure codes schemathesis lists (`- ST103 Undocumented HTTP status code`).
fn failure_codes(output: &str) -> Vec<&str> {
    let is_code =
        |word: &&str| word.len() == 5 && word.starts_with("ST") && word[2..].bytes().all(|b| b.is_ascii_digit());
    output
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .filter_map(|rest| rest.split(' ').next())
        .filter(is_code)
        .collect()
}

/// The kinds of error in the summary of a run (`  🚫 Network Error: 2`).
fn error_kinds(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("🚫 "))
        .filter_map(|rest| rest.rsplit_once(':').map(|(kind, _)| kind))
        .collect()
}

#[tokio::test]
async fn the_openapi_document_is_valid_and_true_to_schemathesis() {
    let Some(bin) = venv_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_demo, _) = start_with_log(dir.path(), Some("warn")).await;
    let demo = read_demo_json(dir.path());
    let url = demo["url"].as_str().unwrap();
    let token = demo["api_token"].as_str().unwrap();

    let document = reqwest::get(format!("{url}/api/openapi.json")).await.unwrap().bytes().await.unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &document).unwrap();
    let mut validator = tokio::process::Command::new(bin.join("openapi-spec-validator"));
    validator.args(["--validation-errors", "all"]).arg(&file);
    let (code, output) = run(validator, Duration::from_secs(60)).await;
    assert_eq!(code, Some(0), "openapi-spec-validator:\n{output}");

    let mut found = Vec::new();
    for (filter, seconds) in [("--exclude-operation-id", SECONDS[0]), ("--include-operation-id", SECONDS[1])] {
        let mut schemathesis = tokio::process::Command::new(bin.join("schemathesis"));
        schemathesis
            .arg("--config-file")
            .arg(tools_dir().join("schemathesis.toml"))
            .args(["--no-color", "run", &format!("{url}/api/openapi.json"), "--checks", "all"])
            .args([filter, "delete_token", "--max-time", &seconds.to_string()])
            // The same cases every run (no random seed, no example database).
            .arg("--generation-deterministic")
            .current_dir(dir.path())
            .env("SERVIO_TOKEN", token);
        let (code, output) = run(schemathesis, Duration::from_secs(u64::from(seconds) + 120)).await;
        // 0: nothing found; 1: failures found, read below; anything else: it could not run.
        assert!(matches!(code, Some(0 | 1)), "schemathesis could not run ({code:?}):\n{output}");
        eprintln!("{output}");
        // A summary to read: a run that generated nothing (or a changed format) finds nothing.
        assert!(output.contains(" generated, "), "schemathesis tested nothing:\n{output}");
        let failing = failure_codes(&output).into_iter().filter(|code| FAILING.contains(code));
        found.extend(failing.map(str::to_owned));
        let errors = error_kinds(&output).into_iter().filter(|kind| FAILING_ERRORS.contains(kind));
        found.extend(errors.map(str::to_owned));
    }
    assert!(found.is_empty(), "schemathesis found {found:?} (its output is above)");

    // Nothing it sent stopped or wedged the platform.
    let ready = reqwest::get(format!("{url}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200, "the platform after schemathesis");
}

#[test]
fn failure_codes_are_read_from_the_list_of_failures() {
    let output = "1. Test Case ID: b70kMH\n\n- ST202 Schema-valid request rejected\n\n    - ST103 Undocumented HTTP status code\n- STxyz\n";
    assert_eq!(failure_codes(output), ["ST202", "ST103"]);
}

#[test]
fn error_kinds_are_read_from_the_summary() {
    let output = "Errors:\n  🚫 Runtime Error: 2\n  🚫 Network Error: 1\n\nWarnings:\n  ⚠️ Missing test data: 3\n";
    assert_eq!(error_kinds(output), ["Runtime Error", "Network Error"]);
}
