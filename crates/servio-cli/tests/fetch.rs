//! `servio check https://...` against a real HTTPS site on loopback.

use std::net::SocketAddr;
use std::process::Output;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use servio_demo_site::{LocalCa, serve_https};

const MANIFEST: &str = include_str!("../../../examples/devcommunity.json");

async fn servio(args: Vec<String>) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_servio")).args(args).env("NO_COLOR", "1").output().await.unwrap()
}

#[tokio::test]
async fn check_discovers_and_reports_like_a_file() {
    let ca = LocalCa::generate(&[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    let app = Router::new().route(
        "/servio.json",
        get(|| async { ([(header::CONTENT_TYPE, "application/json")], MANIFEST).into_response() }),
    );
    let site = serve_https(SocketAddr::from(([127, 0, 0, 1], 0)), &ca, app).await.unwrap();
    let url = format!("https://localhost:{}", site.addr.port());
    let ca_arg = ca_file.to_str().unwrap().to_owned();

    let out =
        servio(vec!["check".into(), "--format".into(), "json".into(), url.clone(), "--ca-cert".into(), ca_arg.clone()])
            .await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["source"], format!("{url}/servio.json"));
    assert_eq!(report["valid"], true);

    // Without the CA the certificate is not trusted: could not fetch, exit 2.
    let out = servio(vec!["check".into(), url.clone()]).await;
    assert_eq!(out.status.code(), Some(2));

    // The platform's guard refuses loopback and says which address and why.
    let out = servio(vec!["check".into(), url, "--ca-cert".into(), ca_arg, "--guard".into(), "public".into()]).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("localhost resolves to") && stderr.contains("a loopback address"), "{stderr}");
}
