//! The Servio platform behind `servio serve`: accounts and the vault so far; refresh, the
//! Directory and web pages follow (see the platform issue).
//!
//! [`router`] builds the HTTP API over an [`AppState`] holding the [`servio_store::Store`].
//! Routes live by feature in [`routes`]; [`auth`] says who is asking; [`error`] maps failures to
//! statuses without leaking internals.
#![deny(missing_docs)]

pub mod accounts;
pub mod auth;
pub mod collect;
pub mod connect;
pub mod error;
pub mod refresh;
pub mod routes;
pub mod secrets;
pub mod slots;

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
    /// "Connect" attempts in progress.
    pub attempts: connect::Attempts,
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
            attempts: connect::Attempts::default(),
        }
    }
}

/// The platform's HTTP routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(routes::accounts::router())
        .merge(routes::vault::router())
        .merge(routes::directory::router())
        .merge(routes::openapi::router())
        .merge(routes::pages::router())
        .merge(routes::dashboard::router())
        .merge(routes::dashboard_page::router())
        .with_state(state)
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
