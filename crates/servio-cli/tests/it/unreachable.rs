//! What the CLI prints when it cannot reach a site: the URL once, the cause in words, and the
//! flag that fixes it where there is one. Regression: these used to print reqwest's error
//! chain, `error: https://x: https://x/.well-known/servio.json: error sending request for url
//! (https://x/.well-known/servio.json): client error (Connect): invalid peer certificate:
//! UnknownIssuer`.

use std::net::TcpListener;
use std::process::Output;

use servio_demo_site::DemoAuth;

use crate::common;

async fn servio(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_servio")).args(args).env("NO_COLOR", "1").output().await.unwrap()
}

/// The exit code and standard error, with the port (which changes every run) spelled `PORT`.
fn shown(output: &Output, port: Option<u16>) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr = match port {
        Some(port) => stderr.replace(&format!(":{port}"), ":PORT"),
        None => stderr.into_owned(),
    };
    format!("exit {}\n{stderr}", output.status.code().unwrap_or(-1))
}

#[tokio::test]
async fn an_unknown_issuer_says_so_and_suggests_ca_cert() {
    let demo = common::start("t0k3n", DemoAuth::Bearer).await;
    let port = demo.origin.rsplit(':').next().and_then(|p| p.parse().ok());
    for command in [vec!["check", &demo.origin], vec!["call", &demo.origin, "forum.searchThreads"]] {
        let output = servio(&command).await;
        insta::assert_snapshot!("unknown_issuer", shown(&output, port));
    }
}

#[tokio::test]
async fn a_host_that_does_not_resolve_is_named() {
    // `.invalid` never resolves (RFC 6761), with or without a network.
    let output = servio(&["check", "https://nonexistent.invalid"]).await;
    insta::assert_snapshot!("dns_failure", shown(&output, None));
}

#[tokio::test]
async fn a_closed_port_is_a_refused_connection() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let output = servio(&["brief", "test", &format!("https://127.0.0.1:{port}")]).await;
    insta::assert_snapshot!("connection_refused", shown(&output, Some(port)));
}

/// Plain http is refused with the flag that allows it here, and a word on the platform, which
/// has no such flag.
#[tokio::test]
async fn plain_http_names_the_flag_that_allows_it() {
    let output = servio(&["check", "http://127.0.0.1:9"]).await;
    let shown = shown(&output, Some(9));
    assert!(
        shown.starts_with("exit 2\nerror: http://127.0.0.1:PORT/.well-known/servio.json: the URL is plain http"),
        "{shown}"
    );
    assert!(shown.contains("help: for a site on your own machine, add --allow-http"), "{shown}");
}
