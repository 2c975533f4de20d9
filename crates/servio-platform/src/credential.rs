//! The bearer token a site gets for a user: a pasted token, or an OAuth access token kept
//! fresh. Used by the collector and the AI gateway alike.
//!
//! Refreshing is single-flight per (user, site): many calls racing on an expired token wait
//! for one refresh and then all use its result, since an authorization server that rotates
//! refresh tokens would refuse every refresh but the first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use servio_client::oauth::Tokens;
use servio_manifest::Manifest;
use servio_store::{SiteRecord, User};

use crate::secrets::credential_aad;
use crate::{AppState, now};

/// How long before it expires an access token is refreshed.
const REFRESH_MARGIN: std::time::Duration = std::time::Duration::from_secs(60);

/// The lock held while one vault entry's OAuth tokens are refreshed.
type EntryLock = Arc<tokio::sync::Mutex<()>>;

/// One lock per (user, site), held while its OAuth tokens are refreshed.
#[derive(Clone, Default)]
pub struct RefreshLocks(Arc<Mutex<HashMap<(i64, i64), EntryLock>>>);

impl RefreshLocks {
    fn lock_for(&self, user_id: i64, site_id: i64) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.entry((user_id, site_id)).or_default().clone()
    }
}

/// A vault credential, opened.
pub enum Credential {
    /// A pasted bearer token.
    Token(String),
    /// Tokens from "Connect".
    OAuth(Tokens),
}

impl Credential {
    /// The token a request carries.
    pub fn bearer(&self) -> &str {
        match self {
            Credential::Token(token) => token,
            Credential::OAuth(tokens) => &tokens.access_token,
        }
    }
}

/// Opens a sealed vault credential; `None` when it does not open (another key, or tampered).
pub fn open_credential(state: &AppState, user_id: i64, site_id: i64, sealed: &[u8]) -> Option<Credential> {
    let plain = state.secrets.open(sealed, &credential_aad(user_id, site_id))?;
    match serde_json::from_slice::<Value>(&plain) {
        Ok(Value::Object(tokens)) if tokens.get("kind").and_then(Value::as_str) == Some("oauth2") => {
            let text = |key: &str| tokens.get(key).and_then(Value::as_str).map(str::to_owned);
            Some(Credential::OAuth(Tokens {
                access_token: text("access_token")?,
                refresh_token: text("refresh_token"),
                expires_at: tokens.get("expires_at").and_then(Value::as_i64),
            }))
        }
        _ => String::from_utf8(plain).ok().map(Credential::Token),
    }
}

/// When to refresh OAuth tokens.
#[derive(Debug, Clone, Copy)]
pub enum Refresh<'a> {
    /// When the access token has expired or expires within a minute.
    IfExpiring,
    /// Because the site refused this access token (a `401`): unless another call has replaced
    /// it meanwhile, in which case the replacement is used.
    Refused(&'a str),
}

/// The bearer token for `user` at `site`, refreshing OAuth tokens as `when` says and sealing
/// new ones back into the vault. `sealed` is the credential as the caller read it; `Ok(None)`
/// when there is none. An error says why a needed refresh failed.
pub async fn bearer(
    state: &AppState,
    user: &User,
    site: &SiteRecord,
    manifest: &Manifest,
    sealed: Option<&[u8]>,
    when: Refresh<'_>,
) -> Result<Option<String>, String> {
    let Some(sealed) = sealed else { return Ok(None) };
    let credential = open_credential(state, user.id, site.id, sealed)
        .ok_or("the stored credential cannot be opened with this platform's key")?;
    if !needs_refresh(&credential, when) {
        return Ok(Some(credential.bearer().to_owned()));
    }
    let lock = state.refresh_locks.lock_for(user.id, site.id);
    let _held = lock.lock().await;
    // Another call may have refreshed while this one waited: read the vault again.
    let entry = state.store.vault_entry(user.id, site.id).await.map_err(|e| e.to_string())?;
    let Some(current) =
        entry.and_then(|entry| entry.credential).and_then(|sealed| open_credential(state, user.id, site.id, &sealed))
    else {
        return Ok(None);
    };
    // Replaced meanwhile (by the refresh this call waited for, or because the refused token
    // is gone): use the replacement rather than refresh again.
    let seen = match when {
        Refresh::Refused(token) => token,
        Refresh::IfExpiring => credential.bearer(),
    };
    if current.bearer() != seen || !needs_refresh(&current, when) {
        return Ok(Some(current.bearer().to_owned()));
    }
    let tokens = match current {
        Credential::OAuth(tokens) => tokens,
        Credential::Token(token) => return Ok(Some(token)),
    };
    let refresh_token = tokens.refresh_token.as_deref().ok_or("the site gave no refresh token")?;
    let oauth = match crate::connect::oauth_site(&state.oauth, &site.origin, manifest) {
        Some(result) => result.map_err(|e| e.to_string())?,
        None => return Err("the manifest no longer uses OAuth 2.0".to_owned()),
    };
    let new = servio_client::oauth::refresh(&state.client, &oauth, refresh_token).await.map_err(|e| e.to_string())?;
    let sealed = state.secrets.seal(&crate::connect::seal_tokens(&new), &credential_aad(user.id, site.id));
    if let Err(error) = state.store.set_credential(user.id, site.id, Some(&sealed)).await {
        eprintln!("servio: keeping refreshed tokens for {} failed: {error}", site.origin);
    }
    state.gateway.forget(user.id);
    Ok(Some(new.access_token))
}

/// After a site answered `401` to `refused`: the token to send once more, refreshed (or
/// already replaced by another call's refresh); `Ok(None)` when there is nothing new to try (a
/// pasted token, or no credential). An error says why the refresh failed.
pub async fn replacement(
    state: &AppState,
    user: &User,
    site: &SiteRecord,
    manifest: &Manifest,
    sealed: Option<&[u8]>,
    refused: &str,
) -> Result<Option<String>, String> {
    let token = bearer(state, user, site, manifest, sealed, Refresh::Refused(refused)).await?;
    Ok(token.filter(|fresh| fresh != refused))
}

fn needs_refresh(credential: &Credential, when: Refresh<'_>) -> bool {
    let Credential::OAuth(tokens) = credential else { return false };
    if tokens.refresh_token.is_none() {
        return false;
    }
    match when {
        Refresh::IfExpiring => tokens.expires_soon(now(), REFRESH_MARGIN),
        Refresh::Refused(token) => tokens.access_token == token,
    }
}

/// The collector's view of [`bearer`]: a token that has expired or is about to is refreshed
/// first; when refreshing fails the old token is used, so that the site's answer says what is
/// wrong, in the collection log.
pub async fn fresh_bearer(
    state: &AppState,
    user: &User,
    site: &SiteRecord,
    manifest: &Manifest,
    sealed: Option<&[u8]>,
) -> Option<String> {
    match bearer(state, user, site, manifest, sealed, Refresh::IfExpiring).await {
        Ok(token) => token,
        Err(error) => {
            eprintln!("servio: refreshing the OAuth token for {} failed: {error}", site.origin);
            open_credential(state, user.id, site.id, sealed?).map(|c| c.bearer().to_owned())
        }
    }
}
