//! A real Servio site over HTTPS on loopback, for tests, benchmarks and the demo.
//!
//! So far: [`tls`], a local certificate authority and a server certificate for `localhost`,
//! `127.0.0.1` and `::1`, and [`serve_https`] to serve any router with it. The demo site's
//! own manifest and tools follow (see the client issue).
#![deny(missing_docs)]

pub mod tls;

use std::net::SocketAddr;

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

/// Serves `app` over HTTPS with the certificate of `ca` on `addr` (port 0 picks a free port).
pub async fn serve_https(
    addr: SocketAddr,
    ca: &LocalCa,
    app: axum::Router,
) -> std::io::Result<Running> {
    let config = axum_server::tls_rustls::RustlsConfig::from_pem(
        ca.cert_pem.clone().into_bytes(),
        ca.key_pem.clone().into_bytes(),
    )
    .await?;
    let listener = std::net::TcpListener::bind(addr)?;
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
