//! Every `curl` command of the README, run with the real `curl` against `servio demo`: a reader
//! types them as they are, so they must work as they are. Only what is the reader's own is
//! replaced: the API token `svt_...`, the address `http://127.0.0.1:8080` and the demo site's
//! port in tool names (`localhost_8443_…`).
//!
//! Regression (issue 11): the README's `curl -d` call of a tool failed verbatim with 400, since
//! `curl -d` sends `Content-Type: application/x-www-form-urlencoded`. The README's calls now say
//! they send JSON; the API answers the old form with a 415 that says what to send, and takes a
//! body sent without `Content-Type` as JSON (interpretation §5). A call with a body is therefore
//! also run in those two other forms.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;

/// The README, read at build time so that a change to it rebuilds this test.
const README: &str = include_str!("../../../../README.md");

/// How a README call with a body says it is JSON; without it, `curl -d` sends a form.
const JSON_TYPE: &str = r#"-H "Content-Type: application/json""#;

/// The `curl` commands in the README's fenced code blocks, continuation lines joined.
fn curl_commands(markdown: &str) -> Vec<String> {
    let mut in_block = false;
    let mut lines = Vec::new();
    let mut continued: Option<String> = None;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        let (text, continues) = match line.trim().strip_suffix('\\') {
            Some(text) => (text.trim_end(), true),
            None => (line.trim(), false),
        };
        let joined = match continued.take() {
            Some(start) => format!("{start} {text}"),
            None => text.to_owned(),
        };
        if continues {
            continued = Some(joined);
        } else {
            lines.push(joined);
        }
    }
    lines.into_iter().filter(|line| line.starts_with("curl ")).collect()
}

/// What the reader's own setup puts in place of the README's placeholders.
struct Setup {
    url: String,
    token: String,
    site_port: String,
}

impl Setup {
    fn localize(&self, command: &str) -> String {
        command
            .replace("svt_...", &self.token)
            .replace("http://127.0.0.1:8080", &self.url)
            .replace("localhost_8443_", &format!("localhost_{}_", self.site_port))
    }
}

/// An HTTP answer as `curl` got it.
struct Answer {
    status: u16,
    body: String,
}

/// Runs `command` through `sh`, as a reader's shell would, with options appended that write
/// the status to standard output and the body to a file.
fn run(command: &str, dir: &Path) -> Answer {
    let body_file = dir.join("curl-body");
    let _ = std::fs::remove_file(&body_file);
    let script =
        format!("{command} --silent --show-error --output '{}' --write-out '%{{http_code}}'", body_file.display());
    let output =
        Command::new("sh").args(["-c", &script]).output().unwrap_or_else(|e| panic!("sh could not be started: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{command}: curl failed (is curl installed? .ci/run installs it): {stderr}");
    let status = String::from_utf8_lossy(&output.stdout).trim().parse().unwrap_or(0);
    Answer { status, body: std::fs::read_to_string(&body_file).unwrap_or_default() }
}

/// A 2xx with a JSON object whose members are all there (no `error`, nothing null or empty).
fn assert_succeeded(command: &str, answer: &Answer) {
    let label = format!("{command}\n-> {} {}", answer.status, answer.body);
    assert!((200..300).contains(&answer.status), "{label}");
    let json: Value = serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("not JSON ({e}): {label}"));
    let members = json.as_object().unwrap_or_else(|| panic!("not a JSON object: {label}"));
    assert!(!members.is_empty() && !members.contains_key("error"), "{label}");
    for (name, value) in members {
        let empty = match value {
            Value::Null => true,
            Value::Array(items) => items.is_empty(),
            Value::Object(fields) => fields.is_empty(),
            _ => false,
        };
        assert!(!empty, "`{name}` is empty: {label}");
    }
}

/// A call with a body: sent as a form (what `curl -d` alone sends) it is refused with a 415
/// that says what to send; sent without `Content-Type` it is taken as JSON.
fn check_body_forms(command: &str, dir: &Path) {
    assert!(
        command.contains(JSON_TYPE),
        "a README call with a body must send {JSON_TYPE}: `curl -d` alone sends a form, which the API refuses: {command}"
    );
    let as_form = command.replace(JSON_TYPE, "");
    let answer = run(&as_form, dir);
    assert_eq!(answer.status, 415, "{as_form}\n-> {}", answer.body);
    let error: Value = serde_json::from_str(&answer.body).unwrap_or_default();
    let message = error["error"].as_str().unwrap_or_default();
    assert!(message.contains("Content-Type: application/json"), "the 415 says what to send: {}", answer.body);

    // An empty header makes curl drop the Content-Type it would have sent.
    let untyped = command.replace(JSON_TYPE, r#"-H "Content-Type:""#);
    assert_succeeded(&untyped, &run(&untyped, dir));
}

#[tokio::test]
async fn every_curl_command_in_the_readme_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let (_demo, _) = common::servio_demo::start(dir.path()).await;
    let demo = common::servio_demo::read_json(dir.path());
    let setup = Setup {
        url: demo["url"].as_str().unwrap().to_owned(),
        token: demo["api_token"].as_str().unwrap().to_owned(),
        site_port: common::servio_demo::site_port(dir.path()),
    };
    let commands = curl_commands(README);
    assert!(commands.len() >= 2, "the README's curl commands were not found: {commands:?}");
    for command in &commands {
        let command = setup.localize(command);
        assert_succeeded(&command, &run(&command, dir.path()));
        if command.contains(" -d ") || command.contains(" --data") {
            check_body_forms(&command, dir.path());
        }
    }
}

#[test]
fn curl_commands_are_read_from_fenced_blocks_with_their_continuations() {
    let markdown = "curl outside\n```sh\n# curl in a comment\ncurl -H \"A: b\" \\\n    -d '{}' \\\n    http://x/y\nservio call \\\n    curl\ncurl http://x/z\n```\n";
    assert_eq!(curl_commands(markdown), [r#"curl -H "A: b" -d '{}' http://x/y"#, "curl http://x/z"]);
}
