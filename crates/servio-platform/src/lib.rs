//! The Servio platform behind `servio serve`: accounts, the vault, refresh, the Directory,
//! web pages, collection and the dashboard, and the AI gateway (MCP at `/mcp`, `/api/tools`).
//!
//! [`router`] builds the HTTP API over an [`AppState`] holding the [`servio_store::Store`].
//! Routes live by feature in [`routes`]; [`auth`] says who is asking; [`json_body`] reads every
//! JSON request body and [`params`] every path and query; [`error`] maps failures to statuses
//! without leaking internals.
#![deny(missing_docs)]

pub mod auth;
pub mod cache;
pub mod connections;
pub mod domain;
pub mod error;
pub mod json_body;
pub mod mcp;
pub mod metrics;
pub mod notices;
pub mod params;
pub mod quotas;
pub mod refresh;
pub mod routes;
pub mod scopes;
pub mod shared;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;
pub mod throttle;
pub mod trace;
pub mod upkeep;
pub mod web;

use std::sync::Arc;

use axum::Router;
use servio_collector::Collector;
use servio_core::Credentials;
pub use servio_core::approval;
use servio_core::secrets::Secrets;
use servio_store::Store;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The outbound client (the address guard in `public` mode unless configured otherwise).
    pub client: servio_client::Client,
    /// OAuth client settings for "Connect".
    pub oauth: Arc<domain::connect::OAuthConfig>,
    /// The collector (collect-now, backfills, the scheduler), with the credentials service
    /// every site call goes through and the manifest cache the gateway and dashboard share.
    pub collector: Collector,
    /// The AI gateway's caches, call-log writer and change notices.
    pub gateway: Arc<domain::gateway::Gateway>,
    /// Change notices: told to what this process keeps, to MCP streams and to the other
    /// processes sharing the database.
    pub notices: Arc<notices::Notices>,
    /// API tokens resolved a moment ago.
    pub tokens: Arc<auth::TokenCache>,
    /// Sign-in and sign-up limits, and the password hashing gate.
    pub throttle: Arc<throttle::Throttle>,
    /// Whether the process is stopping (readiness says no, MCP streams end).
    pub stopping: Stopping,
    /// How long the logs are kept.
    pub retention: upkeep::Retention,
    /// When manifests are refreshed, and how failed refreshes back off.
    pub refresh: refresh::Schedule,
    /// Rendered dashboards, kept until their user's data changes.
    pub dashboards: Arc<cache::rendered::DashboardCache>,
    /// The figure resources MCP served (their JSON), kept until their user's data changes.
    pub figures: Arc<cache::rendered::FiguresCache>,
    /// What one user may hold at once (tokens, claims, sessions).
    pub quotas: quotas::Quotas,
    /// How long a backfill's request waits for the workers to try its periods before it answers
    /// `202` ([`domain::dashboard::BACKFILL_WAIT`], what the API document says).
    pub backfill_wait: std::time::Duration,
}

/// Whether the process is stopping: set once on SIGTERM, before the server stops accepting.
/// Readiness then answers 503, so a load balancer stops sending requests, and MCP's
/// long-lived event streams end, so that in-flight requests are all that is waited for.
#[derive(Debug, Clone, Default)]
pub struct Stopping(tokio_util::sync::CancellationToken);

impl Stopping {
    /// Marks the process as stopping.
    pub fn begin(&self) {
        self.0.cancel();
    }

    /// Whether [`Stopping::begin`] was called.
    pub fn is_stopping(&self) -> bool {
        self.0.is_cancelled()
    }

    /// A token cancelled when the process stops.
    pub fn token(&self) -> tokio_util::sync::CancellationToken {
        self.0.child_token()
    }
}

/// How many bytes the platform's caches of large values may hold (`servio serve`'s
/// `--dashboard-cache-bytes` and `--catalogue-cache-bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBytes {
    /// Rendered dashboards (up to 1 MiB each for a user with 200 metrics).
    pub dashboards: u64,
    /// The figure resources MCP served (a few KiB each; a year of hours, some 4 MiB).
    pub figures: u64,
    /// Users' catalogues (megabytes each at 1,000 tools).
    pub catalogues: u64,
}

impl Default for CacheBytes {
    fn default() -> CacheBytes {
        CacheBytes { dashboards: 64 << 20, catalogues: domain::gateway::DEFAULT_CATALOGUE_BYTES, figures: 16 << 20 }
    }
}

impl AppState {
    /// The state of a platform over `store`, sealing credentials with `secrets`.
    pub fn new(
        store: Arc<dyn Store>,
        client: servio_client::Client,
        secrets: Secrets,
        oauth: domain::connect::OAuthConfig,
    ) -> AppState {
        AppState::with_limits(store, client, secrets, oauth, servio_core::CheckConfig::default(), CacheBytes::default())
    }

    /// [`AppState::new`], checking manifests and validating arguments as `checks` says (how
    /// many at once, how long a request waits, how many bytes of reports are kept), with caches
    /// of `cache_bytes`.
    pub fn with_limits(
        store: Arc<dyn Store>,
        client: servio_client::Client,
        secrets: Secrets,
        oauth: domain::connect::OAuthConfig,
        checks: servio_core::CheckConfig,
        cache_bytes: CacheBytes,
    ) -> AppState {
        let oauth = Arc::new(oauth);
        let credentials = Credentials::new(store.clone(), client.clone(), Arc::new(secrets), oauth.clone());
        let collector = Collector::with_checks(store.clone(), client.clone(), Arc::new(credentials), checks);
        AppState::around((store, collector), oauth, cache_bytes)
    }

    /// The state of a platform over `store` around `collector` (which holds what collecting needs
    /// of the same store, its client and credentials), with caches of `cache_bytes`.
    fn around(
        (store, collector): (Arc<dyn Store>, Collector),
        oauth: Arc<domain::connect::OAuthConfig>,
        cache_bytes: CacheBytes,
    ) -> AppState {
        // Before anything is recorded.
        metrics::handle();
        let notices = Arc::new(notices::Notices::default());
        notices.hear_store(store.clone());
        // Each part that keeps something of a user hears the notices of that user, in this
        // order: the catalogue first, then the caches, then (in `Notices::apply`) MCP streams.
        let gateway = Arc::new(domain::gateway::Gateway::new(cache_bytes.catalogues));
        let kept = gateway.clone();
        notices.on_change(move |change| kept.drop_kept(change));
        // New values, here or (through the notices) in another process, make the user's kept
        // dashboards stale.
        let dashboards = Arc::new(cache::rendered::DashboardCache::new(cache_bytes.dashboards));
        let stale = dashboards.clone();
        notices.on_change(move |change| stale.forget(change));
        let figures = Arc::new(cache::rendered::FiguresCache::figures(cache_bytes.figures));
        let stale = figures.clone();
        notices.on_change(move |change| stale.forget(change));
        // API tokens revoked here or in another process are not reused from what is kept, nor
        // is the user each one keeps once their row changed (time zone, password).
        let tokens = Arc::<auth::TokenCache>::default();
        let revoked = tokens.clone();
        notices.on_change(move |change| match change {
            Some(notices::Change::Access(user_id) | notices::Change::Context(user_id)) => revoked.forget_user(user_id),
            None => revoked.forget_all(),
            Some(_) => {}
        });
        AppState {
            store,
            client: collector.client().clone(),
            oauth,
            collector,
            gateway,
            notices,
            tokens,
            throttle: Arc::default(),
            stopping: Stopping::default(),
            retention: upkeep::Retention::default(),
            refresh: refresh::Schedule::default(),
            dashboards,
            figures,
            quotas: quotas::Quotas::default(),
            backfill_wait: domain::dashboard::BACKFILL_WAIT,
        }
    }

    /// The credentials service: the one place site credentials are sealed and stored.
    pub fn credentials(&self) -> &Credentials {
        self.collector.credentials()
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
        .merge(api.layer(axum::extract::DefaultBodyLimit::max(json_body::MAX_BODY)))
        .merge(routes::pages())
        .layer(axum::middleware::from_fn(trace::observe))
        .layer(axum::middleware::from_fn(owned_by_caller))
        .with_state(state)
}

/// Runs each request in a scope of its own, whose user [`auth::resolve`] names once known: the
/// shared check pool serves users in turn by it ([`servio_core::fair`]).
async fn owned_by_caller(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    servio_core::fair::owned_by(None, next.run(request)).await
}

pub use servio_core::now;

/// The platform's listener with Nagle's algorithm off on every connection: MCP answers are
/// server-sent events written in several pieces, and Nagle's algorithm with the client's
/// delayed acknowledgements would hold each answer back by some 40 ms.
pub fn no_delay(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    use axum::serve::ListenerExt;
    fn set_no_delay(connection: &mut tokio::net::TcpStream) {
        if let Err(error) = connection.set_nodelay(true) {
            tracing::warn!(error = %servio_client::error_chain(&error), "turning Nagle's algorithm off failed");
        }
    }
    listener.tap_io(set_no_delay as fn(&mut tokio::net::TcpStream))
}
