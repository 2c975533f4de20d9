//! A wrong secret key is refused at start. Regression (issue 24, point 9): a `servio worker` (or
//! `serve`) given another key than the one its database's credentials were sealed with started,
//! then failed every job with a misleading "renewing the OAuth token failed". Now the database
//! keeps a check value and such a process exits 2 saying so, and what to do; on every backend,
//! through the real binary.

use crate::common;

use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::process::Command;

const FIRST: &str = "0101010101010101010101010101010101010101010101010101010101010101";
const OTHER: &str = "0202020202020202020202020202020202020202020202020202020202020202";

/// `servio ARGS` on the database `url` with the key `key`, with the data directory `dir`.
fn servio(dir: &std::path::Path, url: &str, key: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_servio"));
    command
        .args(args)
        .args(["--database-url", url, "--data-dir"])
        .arg(dir)
        .env("SERVIO_SECRET_KEY", key)
        .env_remove("SERVIO_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs a command that should end by itself within a minute.
async fn finish(mut command: Command) -> Output {
    let output = command.output();
    tokio::time::timeout(Duration::from_secs(60), output).await.expect("the command ended").unwrap()
}

/// The databases to try: an SQLite file, and a fresh PostgreSQL schema when there is one.
async fn databases(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    let mut all = vec![("sqlite", format!("sqlite:{}", dir.join("servio.db").display()))];
    if let Some(url) = servio_store::testing::postgres_url() {
        all.push(("postgres", servio_store::testing::fresh_schema_url(&url).await));
    }
    all
}

#[tokio::test]
async fn a_process_with_another_key_exits_2_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in databases(dir.path()).await {
        // The first process keeps its key's check value.
        let mut serve = servio(dir.path(), &url, FIRST, &["serve", "--addr", "127.0.0.1:0"]).spawn().unwrap();
        common::served_url(&mut serve).await;
        serve.kill().await.unwrap();

        for command in [&["worker", "--drain"][..], &["serve", "--addr", "127.0.0.1:0"]] {
            let out = finish(servio(dir.path(), &url, OTHER, command)).await;
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name}: {command:?}: {stderr}");
            assert!(
                stderr.starts_with("error: the secret key does not match this database's"),
                "{name}: {command:?}: {stderr}"
            );
            assert!(stderr.contains("help: start it with the key this database was used with before"), "{stderr}");
        }
        let out = finish(servio(dir.path(), &url, FIRST, &["worker", "--drain"])).await;
        assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
