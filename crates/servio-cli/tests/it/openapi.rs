//! The API's OpenAPI document, judged by tools nobody here wrote, against `servio demo`:
//! `openapi-spec-validator` finds no error in it, and schemathesis (`--checks all`, about two
//! minutes, with an API token of the demo user) finds no server error, no answer that violates
//! its schema, no undocumented status code and no undocumented content type. Both come from
//! PyPI, pinned in `tests/openapi/requirements.txt`, installed by `.ci/run` into
//! `tests/openapi/.venv`; without them the test says it is skipped, except in CI.
//!
//! Schemathesis runs in phases, so that the token it tests with is not lost before the end: the
//! operations that end access (`sign_out_everywhere` revokes every API token, `delete_token`
//! may delete the one in use) each run last, alone, and the last with another user's token. A
//! run in which an operation only ever got `401`/`403` tested nothing of it and fails the test
//! (sign-in excepted, in `tests/openapi/schemathesis.toml`: its `401` is a wrong password), as
//! does any schema-valid request refused (`ST202`) except for the business rules listed in
//! [`BUSINESS_RULES`], each with why the document cannot say it. A run that could not reach the
//! platform, or could not use the document or one of its patterns, fails it too, and the
//! platform must still be ready after it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use common::servio_demo::{read_json as read_demo_json, start_with_log};

/// Schemathesis's failure codes that fail the test wherever they are found: a server error
/// (`ST101`, `ST102`), an undocumented status code (`ST103`), an undocumented or malformed
/// content type (`ST104`-`ST106`) and an answer its documented schema rejects or that does not
/// parse as its type (`ST108`-`ST110`). `schemathesis explain CODE` says what each means.
const FAILING: [&str; 9] = ["ST101", "ST102", "ST103", "ST104", "ST105", "ST106", "ST108", "ST109", "ST110"];

/// A schema-valid request refused (not `401`, `403`, `404`, `409` or `429`).
const REFUSED_VALID: &str = "ST202";

/// The operations whose schema-valid requests may be refused (`ST202`), and why: each refusal
/// is a business rule, known only from the platform's data or from more than one field, which no
/// schema can state. Any other operation's `ST202` is a constraint the document keeps to itself,
/// and fails the test.
const BUSINESS_RULES: &[(&str, &str)] = &[
    (
        "POST /api/signup",
        "the time zone must be in the IANA database the platform bundles; the document does not copy it",
    ),
    ("PUT /api/me/time_zone", "the time zone must be in the IANA database the platform bundles"),
    ("PUT /api/me/password", "`current_password` must be the user's password (a wrong one is a 400)"),
    ("DELETE /api/me", "`current_password` must be the user's password (a wrong one is a 400)"),
    (
        "POST /api/tokens",
        "each of `sites` must be a site of the user's vault, and an `account` token needs the user's password",
    ),
    (
        "POST /api/vault",
        "the URL must name a site the address guard lets the platform fetch, with a valid manifest there (400, 422)",
    ),
    (
        "POST /api/directory/claims",
        "the URL must name an origin: a host name is taken without a scheme, so `format: uri` cannot say it",
    ),
    (
        "POST /api/directory/claims/{id}/verify",
        "the claimed site's manifest must be valid and list the claim's token (422)",
    ),
    ("GET /api/directory/claims/{id}/health", "the claim must be verified"),
    (
        "POST /api/vault/{id}/backfill",
        "`to` on or after `from` and at most 400 days later (two fields), within the periods a backfill may ask \
         for, of a site with a valid brief",
    ),
    ("POST /api/vault/{id}/collect", "the site must have a valid brief"),
    ("POST /api/tools/{name}/call", "the arguments must be valid against the tool's own input schema, the site's"),
    (
        "POST /api/vault/{id}/approve",
        "`version` is an integer written as one: JSON Schema counts 81705.0 as an integer, the API refuses it \
         with a 400 that says to write 81705",
    ),
    (
        "POST /api/vault/{id}/keep",
        "`version` is an integer written as one: JSON Schema counts 81705.0 as an integer, the API refuses it \
         with a 400 that says to write 81705",
    ),
];

/// What schemathesis prints when an operation only ever got `401` or `403` (its "Authentication
/// failed" warning, `cli/commands/run/handlers/output.py` in 4.32.5): its cases tested nothing.
const ONLY_401_403: &str = "returned only 401/403 responses";

/// The warnings of the JSON report that fail the test: the one above, and a pattern of the
/// document schemathesis cannot use (it would generate without it).
const FAILING_WARNINGS: [&str; 2] = ["missing_auth", "unsupported_regex"];

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

/// The phases of the run, in order: which operations (`--include-operation-id` or
/// `--exclude-operation-id`), and seconds of schemathesis. Every operation but the two that end
/// access first; then `delete_token`, which may delete the token in use; then
/// `sign_out_everywhere`, which revokes every API token of its user, with a token of a user of
/// its own. Each alone, so that no operation runs on after the token it uses is gone: the one
/// that ends it has got its answer first.
const PHASES: [(&str, &[&str], u32); 3] = [
    ("--exclude-operation-id", &["sign_out_everywhere", "delete_token"], 100),
    ("--include-operation-id", &["delete_token"], 12),
    ("--include-operation-id", &["sign_out_everywhere"], 8),
];

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

#[tokio::test]
async fn the_openapi_document_is_valid_and_true_to_schemathesis() {
    let Some(bin) = venv_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_demo, _) = start_with_log(dir.path(), Some("warn")).await;
    let demo = read_demo_json(dir.path());
    let url = demo["url"].as_str().unwrap();

    let document = reqwest::get(format!("{url}/api/openapi.json")).await.unwrap().bytes().await.unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &document).unwrap();
    let mut validator = tokio::process::Command::new(bin.join("openapi-spec-validator"));
    validator.args(["--validation-errors", "all"]).arg(&file);
    let (code, output) = run(validator, Duration::from_secs(60)).await;
    assert_eq!(code, Some(0), "openapi-spec-validator:\n{output}");
    let document: Value = serde_json::from_slice(&document).unwrap();
    let paths: Vec<&str> = document["paths"].as_object().unwrap().keys().map(String::as_str).collect();

    // The last phase revokes its token at once: it is another user's, made before the others
    // spend the limits of sign-ups from this address and of the demo user's password checks.
    let last_token = account_token_of_new_user(url).await;
    let mut found = Vec::new();
    for (phase, (filter, operations, seconds)) in PHASES.into_iter().enumerate() {
        let token = match phase + 1 == PHASES.len() {
            true => last_token.clone(),
            false => demo["api_token"].as_str().unwrap().to_owned(),
        };
        let report = dir.path().join(format!("phase-{phase}.json"));
        let mut schemathesis = tokio::process::Command::new(bin.join("schemathesis"));
        schemathesis
            .arg("--config-file")
            .arg(tools_dir().join("schemathesis.toml"))
            .args(["--no-color", "run", &format!("{url}/api/openapi.json"), "--checks", "all"])
            .args(operations.iter().flat_map(|operation| [filter, *operation]))
            .args(["--max-time", &seconds.to_string(), "--report", "json", "--report-json-path"])
            .arg(&report)
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
        if output.contains(ONLY_401_403) {
            found.push(format!("phase {phase}: an operation {ONLY_401_403}"));
        }
        let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let stateful = stateful_refusals(&output, url, &paths);
        found.extend(judged(&report, &stateful).into_iter().map(|what| format!("phase {phase}: {what}")));
    }
    assert!(found.is_empty(), "schemathesis found {found:#?} (its output is above)");

    // Nothing it sent stopped or wedged the platform.
    let ready = reqwest::get(format!("{url}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200, "the platform after schemathesis");
}

/// An `account` token of a user signed up for it, from the session signing up started.
async fn account_token_of_new_user(url: &str) -> String {
    let http = reqwest::Client::new();
    let password = "the last phase's own password";
    let credentials = json!({ "email": "last-phase@servio.test", "password": password, "time_zone": "UTC" });
    let signed_in = http.post(format!("{url}/api/signup")).json(&credentials).send().await.unwrap();
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let session: Value = signed_in.json().await.unwrap();
    let body = json!({ "name": "last phase", "scope": "account", "password": password });
    let request = http.post(format!("{url}/api/tokens")).header("cookie", cookie);
    let request = request.header("x-csrf-token", session["csrf_token"].as_str().unwrap()).json(&body);
    let issued: Value = request.send().await.unwrap().json().await.unwrap();
    issued["token"].as_str().unwrap_or_else(|| panic!("no token: {issued}")).to_owned()
}

/// The label schemathesis's report gives every failure of its stateful phase, whichever
/// operation failed.
const STATEFUL: &str = "Stateful tests";

/// The operations (`POST /api/vault`) of the schema-valid requests refused in the stateful
/// phase, which the JSON report only calls [`STATEFUL`]: read from the requests that reproduce
/// each (`curl -X POST … http://host/api/vault`, the last of the steps the refused one) in the
/// output's section of that name, its path matched against the document's `paths`, whose `{…}`
/// stand for any one segment.
fn stateful_refusals(output: &str, base: &str, paths: &[&str]) -> Vec<String> {
    let heading = |line: &str| line.starts_with("____") || line.starts_with("====");
    let start = |line: &&str| !(heading(line) && line.contains(&format!(" {STATEFUL} ")));
    let section = output.lines().skip_while(start).skip(1).take_while(|line| !heading(line));
    let (mut refused, mut last, mut labels) = (false, None, Vec::new());
    for line in section.map(str::trim) {
        if line.starts_with("- ") || line.starts_with("st replay ") {
            labels.extend(last.take());
            refused = line.starts_with(&format!("- {REFUSED_VALID} "));
        } else if refused && line.starts_with("curl ") {
            let words: Vec<&str> = line.split_whitespace().collect();
            let method = words.iter().position(|word| *word == "-X").map_or("GET", |at| words[at + 1]);
            let address = words.last().unwrap_or(&"").trim_matches('\'');
            let path = address.strip_prefix(base).unwrap_or(address).split('?').next().unwrap_or_default();
            let template = paths.iter().find(|template| matches_template(template, path)).unwrap_or(&path);
            last = Some(format!("{method} {template}"));
        }
    }
    labels.extend(last);
    labels
}

/// Whether `path` is one of `template`'s (`/api/vault/{id}` holds `/api/vault/7`).
fn matches_template(template: &str, path: &str) -> bool {
    let (template, path): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    template.len() == path.len()
        && template
            .iter()
            .zip(&path)
            .all(|(part, segment)| part == segment || (part.starts_with('{') && !segment.is_empty()))
}

/// What in schemathesis's JSON report (`--report json`) fails the test: a failure of a
/// [`FAILING`] code, a schema-valid request refused by an operation not in [`BUSINESS_RULES`]
/// (in the stateful phase, the operations `stateful` names), a [`FAILING_WARNINGS`] warning, or
/// a [`FAILING_ERRORS`] error.
fn judged(report: &Value, stateful: &[String]) -> Vec<String> {
    let list = |value: &Value| value.as_array().cloned().unwrap_or_default();
    let mut found = Vec::new();
    for failure in list(&report["failures"]) {
        let (code, title) =
            (failure["code"].as_str().unwrap_or_default(), failure["title"].as_str().unwrap_or_default());
        let operations = list(&failure["operations"]);
        let labels = operations.iter().filter_map(Value::as_str).flat_map(|label| match label {
            // A stateful refusal whose request was not found in the output stays unexplained.
            STATEFUL if code == REFUSED_VALID && !stateful.is_empty() => stateful.iter().map(String::as_str).collect(),
            label => vec![label],
        });
        if FAILING.contains(&code) {
            found.extend(labels.map(|label| format!("{code} {title} in {label}")));
        } else if code == REFUSED_VALID {
            let unexplained = labels.filter(|label| !BUSINESS_RULES.iter().any(|(rule, _)| rule == label));
            found.extend(unexplained.map(|label| format!("{code} {title} in {label}, not a business rule")));
        }
    }
    for warning in FAILING_WARNINGS {
        let labels = list(&report["warnings"][warning]);
        found.extend(labels.iter().filter_map(Value::as_str).map(|label| format!("warning {warning}: {label}")));
    }
    for error in list(&report["errors"]) {
        let title = error["title"].as_str().unwrap_or_default();
        if FAILING_ERRORS.contains(&title) {
            found.push(format!("error {title}"));
        }
    }
    found
}

#[test]
fn a_report_fails_on_undocumented_statuses_unexplained_refusals_and_only_401s() {
    let report = json!({
        "failures": [
            { "code": "ST103", "title": "Undocumented HTTP status code", "operations": ["POST /api/vault/{id}/refresh"] },
            { "code": "ST202", "title": "Schema-valid request rejected", "operations": ["DELETE /api/me", "GET /api/tool-calls"] },
            { "code": "ST201", "title": "API accepted schema-violating request", "operations": ["GET /api/me"] },
        ],
        "warnings": { "missing_auth": ["DELETE /api/tokens/{id}"], "missing_test_data": ["GET /api/vault"] },
        "errors": [{ "title": "Runtime Error", "count": 1 }, { "title": "Network Error", "count": 2 }],
    });
    assert_eq!(
        judged(&report, &[]),
        [
            "ST103 Undocumented HTTP status code in POST /api/vault/{id}/refresh",
            "ST202 Schema-valid request rejected in GET /api/tool-calls, not a business rule",
            "warning missing_auth: DELETE /api/tokens/{id}",
            "error Network Error",
        ]
    );
    assert!(judged(&json!({ "failures": [], "warnings": {}, "errors": [] }), &[]).is_empty());
    let stateful = json!({ "failures": [{ "code": "ST202", "title": "Schema-valid request rejected", "operations": [STATEFUL] }] });
    assert_eq!(judged(&stateful, &["POST /api/vault".to_owned()]), Vec::<String>::new());
    assert_eq!(judged(&stateful, &[]), ["ST202 Schema-valid request rejected in Stateful tests, not a business rule"]);
    assert_eq!(
        judged(&stateful, &["PUT /api/me/log_arguments".to_owned()]),
        ["ST202 Schema-valid request rejected in PUT /api/me/log_arguments, not a business rule"]
    );
}

#[test]
fn the_operations_refused_in_the_stateful_phase_are_read_from_their_requests() {
    let output = "\
________________________________ POST /api/vault ________________________________
- ST202 Schema-valid request rejected
    curl -X POST -d '{\"url\": \"0\"}' http://127.0.0.1:1/api/me/log_arguments
________________________________ Stateful tests ________________________________
1. Test Case ID: UgcwFg

- ST202 Schema-valid request rejected

    curl -X POST -H 'Content-Type: application/json' -d '{\"url\": \"a b\"}' http://127.0.0.1:1/api/vault

2. Test Case ID: X
- ST101 Server error
    curl -X DELETE http://127.0.0.1:1/api/tokens/7
- ST202 Schema-valid request rejected
    curl -X GET -H 'Authorization: [Filtered]' 'http://127.0.0.1:1/api/directory/claims/12/health?days=28'

    st replay X

3. Test Case ID: Y

- ST202 Schema-valid request rejected

Reproduce with:

    curl -X GET -H 'Authorization: [Filtered]' http://127.0.0.1:1/api/directory/claims
    curl -X POST -H 'Authorization: [Filtered]' http://127.0.0.1:1/api/directory/claims/2/verify
=================================== WARNINGS ===================================
    curl -X PUT http://127.0.0.1:1/api/me/password
";
    let paths = [
        "/api/vault",
        "/api/vault/{id}",
        "/api/directory/claims",
        "/api/directory/claims/{id}/health",
        "/api/directory/claims/{id}/verify",
        "/api/tokens/{id}",
    ];
    assert_eq!(
        stateful_refusals(output, "http://127.0.0.1:1", &paths),
        ["POST /api/vault", "GET /api/directory/claims/{id}/health", "POST /api/directory/claims/{id}/verify"]
    );
}

#[test]
fn every_business_rule_names_an_operation_of_the_document() {
    let document = servio_platform::routes::openapi::document().to_json().unwrap();
    let document: Value = serde_json::from_str(&document).unwrap();
    for (label, why) in BUSINESS_RULES {
        let (verb, path) = label.split_once(' ').unwrap();
        let operation = &document["paths"][path][verb.to_lowercase()];
        assert!(operation.is_object(), "{label} ({why}) is no operation of the document");
    }
    for (_, operations, _) in PHASES {
        for id in operations {
            let listed = document["paths"].as_object().unwrap().values();
            let mut operations = listed.flat_map(|item| item.as_object().unwrap().values());
            assert!(operations.any(|operation| operation["operationId"] == *id), "{id} is no operation id");
        }
    }
}
