//! "Connect": OAuth 2.0 with PKCE for a vault site, through the platform's own callback.
//!
//! The manifest names the endpoints but no client id; the platform's configuration gives one,
//! per site where needed. Attempts in progress are kept in this process, keyed by their fresh
//! `state`, and bound to the user who started them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use servio_client::oauth::{OAuthSite, Pending, Tokens};
use servio_manifest::{Auth, Manifest};

/// The platform's OAuth client settings.
#[derive(Debug, Clone, Default)]
pub struct OAuthConfig {
    /// Where browsers reach the platform, such as `https://servio.example`; the callback is
    /// `{public_url}/oauth/callback`.
    pub public_url: String,
    /// The client id used with sites that have no entry of their own.
    pub client_id: String,
    /// Client ids per site origin.
    pub per_site: HashMap<String, String>,
}

impl OAuthConfig {
    /// The client id for `origin`.
    pub fn client_id_for(&self, origin: &str) -> &str {
        self.per_site.get(origin).map_or(self.client_id.as_str(), String::as_str)
    }

    /// The redirect URI registered with sites.
    pub fn callback(&self) -> String {
        format!("{}/oauth/callback", self.public_url.trim_end_matches('/'))
    }
}

/// The OAuth endpoints and client for a site whose manifest uses OAuth 2.0; `None` for a
/// bearer site, an error when the platform's public URL makes no callback URL.
pub fn oauth_site(config: &OAuthConfig, origin: &str, manifest: &Manifest) -> Option<Result<OAuthSite, String>> {
    let Auth::OAuth2 { authorization_url, token_url, scopes } = &manifest.auth else {
        return None;
    };
    Some(match config.callback().parse() {
        Ok(redirect_uri) => Ok(OAuthSite {
            authorization_url: authorization_url.clone(),
            token_url: token_url.clone(),
            scopes: scopes.clone(),
            client_id: config.client_id_for(origin).to_owned(),
            redirect_uri,
        }),
        Err(_) => Err(format!("the public URL {:?} does not make a callback URL", config.public_url)),
    })
}

/// One attempt in progress.
pub struct Attempt {
    /// Who started it.
    pub user_id: i64,
    /// For which vault site.
    pub site_id: i64,
    /// The endpoints and client.
    pub site: OAuthSite,
    /// The state and verifier.
    pub pending: Pending,
}

/// Attempts in progress, by `state`.
#[derive(Default, Clone)]
pub struct Attempts(Arc<Mutex<HashMap<String, Attempt>>>);

impl Attempts {
    /// Remembers an attempt.
    pub fn insert(&self, attempt: Attempt) {
        let state = attempt.pending.state().to_owned();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(state, attempt);
    }

    /// Takes the attempt with this `state` (each state is good once).
    pub fn take(&self, state: &str) -> Option<Attempt> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(state)
    }
}

/// Tokens as sealed into a vault credential: JSON, so that a credential says which kind it is.
pub fn seal_tokens(tokens: &Tokens) -> Vec<u8> {
    serde_json::json!({
        "kind": "oauth2",
        "access_token": tokens.access_token,
        "refresh_token": tokens.refresh_token,
        "expires_at": tokens.expires_at,
    })
    .to_string()
    .into_bytes()
}
