//! `servio demo`: the README's first command starts everything, writes demo.json, and the
//! dashboard has eight weeks of revenue and orders, read with the demo user's API token.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

/// Starts `servio demo` on `dir` and reads its output until it says it is running.
async fn start_demo(dir: &std::path::Path) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(["demo", "--addr", "127.0.0.1:0", "--data-dir", dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut output = String::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap_or_else(|| panic!("the demo stopped before it was running:\n{output}"));
        output.push_str(&line);
        output.push('\n');
        if line.contains("Press Ctrl-C") {
            break;
        }
    }
    (child, output)
}

async fn get(demo: &serde_json::Value, path: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(format!("{}{path}", demo["url"].as_str().unwrap()))
        .bearer_auth(demo["api_token"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn read_demo_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("demo.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn demo_seeds_eight_weeks_and_writes_demo_json() {
    let dir = tempfile::tempdir().unwrap();
    let (_child, output) = start_demo(dir.path()).await;
    assert!(output.contains("112 values stored, 0 dropped, 0 failed"), "{output}");
    let demo = read_demo_json(dir.path());
    for field in ["url", "email", "password", "api_token"] {
        assert!(demo[field].as_str().is_some_and(|v| !v.is_empty()), "{field} in {demo}");
    }
    let dashboard = get(&demo, "/api/dashboard").await;
    let metrics = dashboard["metrics"].as_array().unwrap();
    let keys: Vec<&str> = metrics.iter().map(|m| m["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["sales.revenue.daily", "sales.orders.daily"]);
    for metric in metrics {
        assert_eq!(metric["values"].as_array().unwrap().len(), 56, "{}", metric["key"]);
        assert!(metric["change"]["percent"].is_number(), "a trend against the same weekday a week earlier: {metric}");
    }
}

#[tokio::test]
async fn demo_restarted_on_its_data_directory_keeps_one_site_and_its_user() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, _) = start_demo(dir.path()).await;
    let before = read_demo_json(dir.path());
    first.kill().await.unwrap();

    let (_second, output) = start_demo(dir.path()).await;
    assert!(output.contains("112 values stored"), "{output}");
    let after = read_demo_json(dir.path());
    assert_eq!(before["email"], after["email"]);
    assert_eq!(before["api_token"], after["api_token"], "the saved user signs in again");
    let vault = get(&after, "/api/vault").await;
    let sites = vault["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1, "the demo site keeps its origin across restarts: {vault}");
}
