//! `servio demo`: the README's first command starts everything, writes demo.json, and the
//! dashboard has eight weeks of revenue and orders, read with the demo user's API token.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn demo_seeds_eight_weeks_and_writes_demo_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(["demo", "--addr", "127.0.0.1:0", "--data-dir", dir.path().to_str().unwrap()])
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
            .expect("the demo starts");
        output.push_str(&line);
        output.push('\n');
        if line.contains("Press Ctrl-C") {
            break;
        }
    }
    assert!(output.contains("112 values stored, 0 dropped, 0 failed"), "{output}");
    let demo: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("demo.json")).unwrap()).unwrap();
    for field in ["url", "email", "password", "api_token"] {
        assert!(demo[field].as_str().is_some_and(|v| !v.is_empty()), "{field} in {demo}");
    }
    let dashboard: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/api/dashboard", demo["url"].as_str().unwrap()))
        .bearer_auth(demo["api_token"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let metrics = dashboard["metrics"].as_array().unwrap();
    let keys: Vec<&str> = metrics.iter().map(|m| m["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["sales.revenue.daily", "sales.orders.daily"]);
    for metric in metrics {
        assert_eq!(metric["values"].as_array().unwrap().len(), 56, "{}", metric["key"]);
        assert!(metric["change"]["percent"].is_number(), "a trend against the same weekday a week earlier: {metric}");
    }
}
