//! The Servio platform behind `servio serve`: accounts, the vault, refresh, the Directory,
//! web pages, collection and the dashboard, and the AI gateway (MCP at `/mcp`, `/api/tools`).
//!
//! [`router`] builds the HTTP API over an [`AppState`] holding the [`servio_store::Store`].
//! Routes live by feature in [`routes`]; [`auth`] says who is asking; [`json_body`] reads every
//! JSON request body; [`error`] maps failures to statuses without leaking internals.
#![deny(missing_docs)]

pub mod accounts;
pub mod approval;
pub mod auth;
pub mod collect;
pub mod connect;
pub mod credential;
pub mod error;
pub mod gateway;
pub mod jobs;
pub mod json_body;
pub mod mcp;
pub mod refresh;
pub mod routes;
pub mod secrets;
pub mod slots;
pub mod text;
pub mod throttle;
pub mod trace;
pub mod upkeep;

use std::sync::Arc;

use axum::Router;
use servio_store::Store;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The outbound client (the address guard in `public` mode unless configured otherwise).
    pub client: servio_client::Client,
    /// The key that seals site credentials.
    pub secrets: Arc<secrets::Secrets>,
    /// OAuth client settings for "Connect".
    pub oauth: Arc<connect::OAuthConfig>,
    /// One lock per (user, site) while OAuth tokens are refreshed.
    pub refresh_locks: credential::RefreshLocks,
    /// The AI gateway's caches, call-log writer and change notices.
    pub gateway: Arc<gateway::Gateway>,
    /// API tokens resolved a moment ago.
    pub tokens: Arc<auth::TokenCache>,
    /// Sign-in and sign-up limits, and the password hashing gate.
    pub throttle: Arc<throttle::Throttle>,
}

impl AppState {
    /// The state of a platform over `store`.
    pub fn new(
        store: Arc<dyn Store>,
        client: servio_client::Client,
        secrets: secrets::Secrets,
        oauth: connect::OAuthConfig,
    ) -> AppState {
        AppState {
            store,
            client,
            secrets: Arc::new(secrets),
            oauth: Arc::new(oauth),
            refresh_locks: credential::RefreshLocks::default(),
            gateway: Arc::default(),
            tokens: Arc::default(),
            throttle: Arc::default(),
        }
    }
}

/// The platform's HTTP routes, with the MCP endpoint at `/mcp`.
pub fn router(state: AppState) -> Router {
    // The MCP endpoint checks `Host` against DNS rebinding: loopback, plus the public name.
    let public_host = url::Url::parse(&state.oauth.public_url).ok().and_then(|url| {
        let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
        Some(match url.port() {
            Some(port) => vec![host.clone(), format!("{host}:{port}")],
            None => vec![host],
        })
    });
    let (api, _) = routes::api().split_for_parts();
    Router::new()
        .nest_service("/mcp", mcp::service(state.clone(), public_host.unwrap_or_default()))
        .merge(api)
        .merge(routes::pages())
        .layer(trace::layer())
        .with_state(state)
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The platform's listener with Nagle's algorithm off on every connection: MCP answers are
/// server-sent events written in several pieces, and Nagle's algorithm with the client's
/// delayed acknowledgements would hold each answer back by some 40 ms.
pub fn no_delay(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    use axum::serve::ListenerExt;
    fn set_no_delay(connection: &mut tokio::net::TcpStream) {
        if let Err(error) = connection.set_nodelay(true) {
            tracing::warn!(%error, "turning Nagle's algorithm off failed");
        }
    }
    listener.tap_io(set_no_delay as fn(&mut tokio::net::TcpStream))
}
