//! `servio demo` as a child process: the platform, the demo site and a demo user, as the
//! README's first command starts them, on ports of their own.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

/// Starts `servio demo` on `dir` and reads its output until it says it is running.
pub async fn start(dir: &Path) -> (tokio::process::Child, String) {
    start_with_log(dir, None).await
}

/// [`start`] with its log filtered by `filter` (`SERVIO_LOG`) when given: `warn` for a test
/// that sends thousands of requests, whose log lines would bury its own output.
pub async fn start_with_log(dir: &Path, filter: Option<&str>) -> (tokio::process::Child, String) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_servio"));
    if let Some(filter) = filter {
        command.env("SERVIO_LOG", filter);
    }
    let mut child = command
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

/// `DATA_DIR/demo.json`: the platform's `url`, the demo user's `email`, `password`, `api_token`.
pub fn read_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("demo.json")).unwrap()).unwrap()
}

/// The demo site's port (`DATA_DIR/demo-site-port`), which names its tools: `localhost_PORT_…`.
pub fn site_port(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("demo-site-port")).unwrap().trim().to_owned()
}
