//! A demo site over HTTPS on loopback, for the CLI's tests, with its CA in a file.

#![allow(dead_code)] // Each test file uses part of this.

use std::path::PathBuf;

pub mod mcp_clients;
pub mod servio_demo;

use servio_demo_site::{DemoAuth, LocalCa, Running, Site, SiteConfig, serve_https_on};

/// A running demo site.
pub struct Demo {
    /// `https://localhost:PORT`.
    pub origin: String,
    /// The CA certificate, for `--ca-cert`.
    pub ca_file: PathBuf,
    /// The CA, PEM.
    pub ca_pem: String,
    /// The site, to flip misbehaviour switches.
    pub site: Site,
    /// A private directory for the test's files.
    pub dir: tempfile::TempDir,
    _running: Running,
}

impl Demo {
    /// The `--ca-cert` argument.
    pub fn ca_arg(&self) -> String {
        self.ca_file.to_str().unwrap().to_owned()
    }
}

/// Starts the demo site with `token` (bearer) or `auth`.
pub async fn start(token: &str, auth: DemoAuth) -> Demo {
    let ca = LocalCa::generate(&[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let site = Site::new(SiteConfig { origin: origin.clone(), token: token.to_owned(), auth }, None).await.unwrap();
    let running = serve_https_on(listener, &ca, site.router()).await.unwrap();
    Demo { origin, ca_file, ca_pem: ca.ca_pem, site, dir, _running: running }
}

/// Starts `count` demo sites with `token` (bearer) or `auth`, all signed by one CA, so that one
/// platform trusting the first one's `ca_file` reaches them all.
pub async fn start_many(token: &str, auth: DemoAuth, count: usize) -> Vec<Demo> {
    let ca = LocalCa::generate(&[]).unwrap();
    let mut sites = Vec::new();
    for _ in 0..count {
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, &ca.ca_pem).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
        let config = SiteConfig { origin: origin.clone(), token: token.to_owned(), auth: auth.clone() };
        let site = Site::new(config, None).await.unwrap();
        let running = serve_https_on(listener, &ca, site.router()).await.unwrap();
        sites.push(Demo { origin, ca_file, ca_pem: ca.ca_pem.clone(), site, dir, _running: running });
    }
    sites
}

/// Signs `email` up with `password` on the platform at `base` (UTC), and makes them an API
/// token of scope `account`; answers the session cookie (`name=value`) and the token.
pub async fn sign_up_with_token(http: &reqwest::Client, base: &str, email: &str, password: &str) -> (String, String) {
    let signed_up = http
        .post(format!("{base}/api/signup"))
        .json(&serde_json::json!({ "email": email, "password": password, "time_zone": "UTC" }))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_up.status(), 201, "signing up {email}");
    let cookie = signed_up.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let body: serde_json::Value = signed_up.json().await.unwrap();
    let created: serde_json::Value = http
        .post(format!("{base}/api/tokens"))
        .header("cookie", &cookie)
        .header("x-csrf-token", body["csrf_token"].as_str().unwrap())
        // The tests act as the account's owner with it (adding sites, backfills, tokens).
        .json(&serde_json::json!({ "name": "test", "scope": "account", "password": password }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (cookie, created["token"].as_str().unwrap().to_owned())
}

/// The address `servio serve` listens on (`http://…`), from the first line of its piped
/// standard output.
pub async fn served_url(child: &mut tokio::process::Child) -> String {
    use tokio::io::AsyncBufReadExt;
    let stdout = child.stdout.take().expect("serve's standard output, piped");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let first = tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line()).await.unwrap().unwrap();
    first
        .as_deref()
        .and_then(|line| line.strip_prefix("Servio platform on "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("serve printed {first:?}"))
        .to_owned()
}

/// Runs `command` for at most `limit` (it is killed if the test ends first); whether it
/// succeeded, and what it printed on stdout and on stderr.
pub async fn run_for(command: &mut tokio::process::Command, limit: std::time::Duration) -> (bool, String, String) {
    let output = tokio::time::timeout(limit, command.kill_on_drop(true).output()).await;
    let output = output.unwrap_or_else(|_| panic!("{command:?} ran for more than {limit:?}")).unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.success(), text(&output.stdout), text(&output.stderr))
}
