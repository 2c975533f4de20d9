//! A demo site over HTTPS on loopback, for the CLI's tests, with its CA in a file.

#![allow(dead_code)] // Each test file uses part of this.

use std::path::PathBuf;

pub mod python_mcp;
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
