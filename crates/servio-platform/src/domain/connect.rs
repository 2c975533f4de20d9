//! "Connect": OAuth 2.0 with PKCE for a vault site, through the platform's own callback.
//!
//! The manifest names the endpoints but no client id; the platform's configuration gives one,
//! per site where needed. A started Connect ([`StartedConnect`], holding the client's OAuth
//! authorization) is kept in the store, sealed, found by the hash of its fresh `state`, bound to
//! the user who started it, for ten minutes at most and a few per user; so a callback may reach
//! any `servio serve` process on the same database.

use serde_json::{Value, json};
use servio_client::oauth::{OAuthSite, StartedAuthorization};
pub use servio_core::credentials::{OAuthConfig, oauth_site};

use crate::AppState;

/// Why "Connect" could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The authorization request could not be made.
    #[error("starting the authorization failed")]
    Start(#[source] servio_client::oauth::OAuthError),
    /// The store failed.
    #[error("keeping a started Connect failed")]
    Store(#[from] servio_store::StoreError),
    /// A kept Connect does not open with this platform's key.
    #[error("a started Connect could not be opened with this platform's key")]
    Unsealable,
    /// A kept Connect opened but does not read as one; says what is wrong.
    #[error("a stored started Connect is damaged: {0}")]
    Damaged(String),
}

/// How long a started "Connect" stays good: time enough to sign in at the site and consent.
pub const CONNECT_TTL_SECONDS: i64 = 600;

/// Started Connects one user may have at once; starting another ends their oldest, so
/// that visits of the Connect page cannot fill the store.
pub const CONNECTS_PER_USER: i64 = 5;

/// A started Connect, opened again when the browser comes back (the store keeps it sealed, as
/// a [`servio_store::StartedConnect`]).
pub struct StartedConnect {
    /// For which vault site.
    pub site_id: i64,
    /// The endpoints and client it was started with.
    pub site: OAuthSite,
    /// The OAuth authorization it started: the state and verifier.
    pub authorization: StartedAuthorization,
}

/// Starts "Connect" for `user_id` on the vault site `site_id`: a fresh `state` and PKCE pair,
/// kept in the store (sealed, for this user and site) so that any process on the database
/// can finish it. Returns where to send the browser.
pub async fn begin(state: &AppState, user_id: i64, site_id: i64, site: OAuthSite) -> Result<url::Url, ConnectError> {
    let authorization = servio_client::oauth::start(&site).map_err(ConnectError::Start)?;
    let kept = json!({
        "authorization_url": site.authorization_url.as_str(),
        "token_url": site.token_url.as_str(),
        "scopes": site.scopes,
        "client_id": site.client_id,
        "redirect_uri": site.redirect_uri.as_str(),
        "authorize_url": authorization.authorize_url.as_str(),
        "state": authorization.state(),
        "verifier": authorization.verifier(),
    });
    let now = crate::now();
    let started = servio_store::StartedConnect {
        state_hash: crate::domain::accounts::secrets::token_hash(authorization.state()),
        user_id,
        site_id,
        sealed: state.credentials().secrets().seal(kept.to_string().as_bytes(), &connect_aad(user_id, site_id)),
        created_at: now,
        expires_at: now + CONNECT_TTL_SECONDS,
    };
    state.store.keep_started_connect(&started, CONNECTS_PER_USER, now).await?;
    Ok(authorization.authorize_url)
}

/// Takes the started Connect of `user_id` whose `state` came back (each state is good once, for the
/// user who started it, until it expires); `None` when there is no such Connect.
pub async fn take(
    state: &AppState,
    user_id: i64,
    returned_state: &str,
) -> Result<Option<StartedConnect>, ConnectError> {
    let hash = crate::domain::accounts::secrets::token_hash(returned_state);
    let Some(kept) = state.store.take_started_connect(&hash, user_id, crate::now()).await? else {
        return Ok(None);
    };
    let opened = state
        .credentials()
        .secrets()
        .open(&kept.sealed, &connect_aad(user_id, kept.site_id))
        .ok_or(ConnectError::Unsealable)?;
    let value: Value = serde_json::from_slice(&opened).map_err(|e| ConnectError::Damaged(e.to_string()))?;
    let text = |key: &str| value[key].as_str().map(str::to_owned).ok_or(ConnectError::Damaged(format!("no {key}")));
    let url = |key: &str| text(key)?.parse::<url::Url>().map_err(|e| ConnectError::Damaged(format!("{key}: {e}")));
    let site = OAuthSite {
        authorization_url: url("authorization_url")?,
        token_url: url("token_url")?,
        scopes: value["scopes"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect(),
        client_id: text("client_id")?,
        redirect_uri: url("redirect_uri")?,
    };
    let authorization = StartedAuthorization::resume(url("authorize_url")?, text("state")?, text("verifier")?);
    Ok(Some(StartedConnect { site_id: kept.site_id, site, authorization }))
}

/// The associated data of a sealed started Connect: opened only for its user and site. Its
/// words are part of every seal, kept as first written ("attempt" is not the name any more).
fn connect_aad(user_id: i64, site_id: i64) -> String {
    format!("servio oauth attempt v1; user {user_id}; site {site_id}")
}
