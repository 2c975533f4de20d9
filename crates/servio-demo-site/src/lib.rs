//! A real Servio site over HTTPS on loopback, for tests, benchmarks and the demo.
//!
//! - [`tls`]: a local certificate authority and a server certificate for `localhost`,
//!   `127.0.0.1` and `::1`; [`serve_https`] serves any router with it.
//! - [`forum`]: the forum's threads and posts in SQLite (sqlx).
//! - [`site`]: the site itself: a manifest with forum and shop tools and a brief, bearer
//!   authentication, deterministic sales figures, and per-path misbehaviour for tests.
//! - [`oauth`]: an OAuth 2.0 authorization server (code with PKCE `S256`, refresh tokens) for
//!   `--auth oauth2`.
#![deny(missing_docs)]

pub mod forum;
pub mod oauth;
pub mod site;
pub mod tls;

use std::net::SocketAddr;

pub use site::{DemoAuth, Misbehaviour, SeenRequest, Site, SiteConfig};
pub use tls::LocalCa;

/// A running HTTPS server; it stops when dropped.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    handle: axum_server::Handle<SocketAddr>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

/// The demo site served over HTTPS on a loopback port of its own, as tests use it.
pub struct LocalSite {
    /// `https://localhost:PORT`.
    pub origin: String,
    /// The site, to change its behaviour while it serves.
    pub site: Site,
    _running: Running,
}

impl LocalSite {
    /// Starts the demo site with bearer authentication (`token`) on a free loopback port, with
    /// a certificate of `ca`.
    pub async fn start(ca: &LocalCa, token: &str) -> std::io::Result<LocalSite> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let origin = format!("https://localhost:{}", listener.local_addr()?.port());
        let site = Site::new(SiteConfig::bearer(&origin, token), None).await.map_err(std::io::Error::other)?;
        let running = serve_https_on(listener, ca, site.router()).await?;
        Ok(LocalSite { origin, site, _running: running })
    }
}

/// Serves `app` over HTTPS with the certificate of `ca` on `addr` (port 0 picks a free port).
pub async fn serve_https(addr: SocketAddr, ca: &LocalCa, app: axum::Router) -> std::io::Result<Running> {
    serve_https_on(std::net::TcpListener::bind(addr)?, ca, app).await
}

/// Serves `app` over HTTPS on a listener already bound (so that its port can go into the
/// manifest before serving starts).
pub async fn serve_https_on(
    listener: std::net::TcpListener,
    ca: &LocalCa,
    app: axum::Router,
) -> std::io::Result<Running> {
    let config = axum_server::tls_rustls::RustlsConfig::from_pem(
        ca.cert_pem.clone().into_bytes(),
        ca.key_pem.clone().into_bytes(),
    )
    .await?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let handle = axum_server::Handle::new();
    let server = axum_server::from_tcp_rustls(listener, config)?.handle(handle.clone());
    tokio::spawn(async move {
        // Errors of single connections are the client's business; the server keeps going.
        let _ = server.serve(app.into_make_service()).await;
    });
    Ok(Running { addr, handle })
}
