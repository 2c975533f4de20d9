//! Site credentials: the one place they are sealed and stored, opened, and the OAuth access
//! tokens among them renewed. Used by the collector and the AI gateway alike.
//!
//! Words: a *token renewal* gets a new OAuth access token with the refresh token (a manifest's
//! *refresh* is another thing, in the platform). Renewal is single-flight per (user, site):
//! many calls racing on an expired token wait for one renewal and then all use its result,
//! since an authorization server that rotates refresh tokens refuses every renewal but the
//! first. After a site answers `401` to an OAuth token, the token is renewed once and the call
//! sent again: [`Credentials::send_with_renewal`] is that rule, for every caller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use servio_client::oauth::{OAuthSite, Tokens};
use servio_client::{CallError, Client};
use servio_manifest::{Auth, Manifest};
use servio_store::{FetchedManifest, SiteRecord, Vault};

use crate::secrets::{Secrets, credential_aad};
use crate::{Error, now};

/// How long before it expires an access token is renewed.
const RENEWAL_MARGIN: std::time::Duration = std::time::Duration::from_secs(60);

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
pub fn oauth_site(config: &OAuthConfig, origin: &str, manifest: &Manifest) -> Option<Result<OAuthSite, Error>> {
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
        Err(_) => Err(Error::CallbackUrl(config.public_url.clone())),
    })
}

/// A vault credential, opened.
#[derive(Clone)]
pub enum Credential {
    /// A pasted bearer token.
    Token(String),
    /// Tokens from "Connect".
    OAuth(Tokens),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A credential is a secret: its kind only.
        f.write_str(match self {
            Credential::Token(_) => "Credential::Token(..)",
            Credential::OAuth(_) => "Credential::OAuth(..)",
        })
    }
}

impl Credential {
    /// The token a request carries.
    pub fn bearer(&self) -> &str {
        match self {
            Credential::Token(token) => token,
            Credential::OAuth(tokens) => &tokens.access_token,
        }
    }

    /// The plaintext that is sealed: a pasted token as it is, OAuth tokens as JSON that says
    /// which kind it is.
    fn plaintext(&self) -> Vec<u8> {
        match self {
            Credential::Token(token) => token.as_bytes().to_vec(),
            Credential::OAuth(tokens) => {
                // The tokens' members after `kind`, in this order: what is sealed stays
                // readable (`oauth_tokens_are_sealed_as_they_always_were`).
                #[derive(serde::Serialize)]
                struct Sealed<'a> {
                    kind: &'static str,
                    #[serde(flatten)]
                    tokens: &'a Tokens,
                }
                // Strings, integers and nulls always serialize.
                serde_json::to_vec(&Sealed { kind: "oauth2", tokens }).expect("tokens serialize")
            }
        }
    }

    /// Reads what [`Credential::plaintext`] made.
    fn from_plaintext(plain: Vec<u8>) -> Option<Credential> {
        match serde_json::from_slice::<Value>(&plain) {
            Ok(sealed @ Value::Object(_)) if sealed["kind"] == "oauth2" => {
                serde_json::from_value(sealed).ok().map(Credential::OAuth)
            }
            _ => String::from_utf8(plain).ok().map(Credential::Token),
        }
    }
}

/// When to renew OAuth tokens.
#[derive(Debug, Clone, Copy)]
pub enum Renewal<'a> {
    /// When the access token has expired or expires within a minute.
    IfExpiring,
    /// Because the site refused this access token (a `401`): unless another call has replaced
    /// it meanwhile, in which case the replacement is used.
    Refused(&'a str),
}

/// Whether a call was sent again after a `401`, by [`Credentials::send_with_renewal`].
#[derive(Debug)]
pub enum Retried {
    /// Sent once: it was not refused, or there was nothing to renew (a pasted token).
    No,
    /// Refused, the token renewed (or replaced by another call's renewal), and sent again.
    Renewed,
    /// Refused, and renewing the token failed, so it was not sent again.
    RenewalFailed(Error),
}

/// What [`Credentials::send_with_renewal`] came to: the last answer, and whether it is an
/// answer to a renewed token.
#[derive(Debug)]
pub struct Sent<T> {
    /// The answer to the last call sent.
    pub result: Result<T, CallError>,
    /// Whether the call was sent again.
    pub retried: Retried,
}

/// The lock held while one vault entry's OAuth tokens are renewed.
type EntryLock = Arc<tokio::sync::Mutex<()>>;

/// The credentials service: seals, stores, opens and renews vault credentials.
pub struct Credentials {
    store: Arc<dyn Vault>,
    client: Client,
    secrets: Arc<Secrets>,
    oauth: Arc<OAuthConfig>,
    /// One lock per (user, site) that ever renewed in this process: as many as vault entries
    /// with OAuth tokens, at most.
    locks: Mutex<HashMap<(i64, i64), EntryLock>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("oauth", &self.oauth).finish_non_exhaustive()
    }
}

impl Credentials {
    /// The credentials of `store`, sealed with `secrets`, renewed through `client` as `oauth`
    /// says.
    pub fn new(store: Arc<dyn Vault>, client: Client, secrets: Arc<Secrets>, oauth: Arc<OAuthConfig>) -> Credentials {
        Credentials { store, client, secrets, oauth, locks: Mutex::default() }
    }

    /// The sealing key (the platform also seals its OAuth "Connect" attempts with it).
    pub fn secrets(&self) -> &Arc<Secrets> {
        &self.secrets
    }

    /// The OAuth client settings.
    pub fn oauth(&self) -> &Arc<OAuthConfig> {
        &self.oauth
    }

    fn seal(&self, user_id: i64, site_id: i64, credential: &Credential) -> Vec<u8> {
        self.secrets.seal(&credential.plaintext(), &credential_aad(user_id, site_id))
    }

    /// Opens a sealed vault credential; `None` when it does not open (another key, or
    /// tampered).
    pub fn open(&self, user_id: i64, site_id: i64, sealed: &[u8]) -> Option<Credential> {
        Credential::from_plaintext(self.secrets.open(sealed, &credential_aad(user_id, site_id))?)
    }

    /// Seals `credential` and stores it as the credential of `user_id`'s vault site `site_id`;
    /// false when the site is not in their vault.
    pub async fn set_credential(&self, user_id: i64, site_id: i64, credential: &Credential) -> Result<bool, Error> {
        let sealed = self.seal(user_id, site_id, credential);
        Ok(self.store.set_credential(user_id, site_id, Some(&sealed)).await?)
    }

    /// Saves a fetched manifest and adds its site to `user_id`'s vault with `credential`
    /// sealed for it, in one transaction, unless they hold `limit` sites already (see
    /// [`Vault::add_site`]).
    pub async fn add_site(
        &self,
        fetched: &FetchedManifest<'_>,
        user_id: i64,
        credential: Option<&Credential>,
        (now, limit): (i64, i64),
    ) -> Result<SiteRecord, Error> {
        let seal = |site_id: i64| credential.map(|c| self.seal(user_id, site_id, c)).unwrap_or_default();
        Ok(self.store.add_site(fetched, user_id, credential.is_some().then_some(&seal), now, limit).await?)
    }

    /// The bearer token for `user_id` at `site`, renewing OAuth tokens as `when` says and
    /// storing new ones. `sealed` is the credential as the caller read it; `Ok(None)` when
    /// there is none. An error says why a needed renewal failed.
    pub async fn bearer(
        &self,
        user_id: i64,
        site: &SiteRecord,
        manifest: &Manifest,
        sealed: Option<&[u8]>,
        when: Renewal<'_>,
    ) -> Result<Option<String>, Error> {
        let Some(sealed) = sealed else { return Ok(None) };
        let credential = self.open(user_id, site.id, sealed).ok_or(Error::Unopenable)?;
        if !needs_renewal(&credential, when) {
            return Ok(Some(credential.bearer().to_owned()));
        }
        let lock = self.lock_for(user_id, site.id);
        let _held = lock.lock().await;
        // Another call may have renewed while this one waited: read the vault again.
        let entry = self.store.vault_entry(user_id, site.id).await?;
        let Some(current) =
            entry.and_then(|entry| entry.credential).and_then(|sealed| self.open(user_id, site.id, &sealed))
        else {
            return Ok(None);
        };
        // Replaced meanwhile (by the renewal this call waited for, or because the refused
        // token is gone): use the replacement rather than renew again.
        let seen = match when {
            Renewal::Refused(token) => token,
            Renewal::IfExpiring => credential.bearer(),
        };
        if current.bearer() != seen || !needs_renewal(&current, when) {
            return Ok(Some(current.bearer().to_owned()));
        }
        let tokens = match current {
            Credential::OAuth(tokens) => tokens,
            Credential::Token(token) => return Ok(Some(token)),
        };
        let refresh_token = tokens.refresh_token.as_deref().ok_or(Error::NoRefreshToken)?;
        let oauth = oauth_site(&self.oauth, &site.origin, manifest).ok_or(Error::NotOAuth)??;
        let renewed = servio_client::oauth::renew(&self.client, &oauth, refresh_token).await;
        let outcome = if renewed.is_ok() { "renewed" } else { "failed" };
        metrics::counter!("servio_token_renewals_total", "outcome" => outcome).increment(1);
        let new = renewed.map_err(Error::Renewal)?;
        let access_token = new.access_token.clone();
        if let Err(error) = self.set_credential(user_id, site.id, &Credential::OAuth(new)).await {
            // The new token still serves this call; the next one renews again.
            tracing::warn!(site = %site.origin, error = %servio_client::error_chain(&error), "keeping renewed OAuth tokens failed");
        }
        Ok(Some(access_token))
    }

    fn lock_for(&self, user_id: i64, site_id: i64) -> EntryLock {
        let mut locks = self.locks.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.entry((user_id, site_id)).or_default().clone()
    }

    /// The collector's view of [`Credentials::bearer`]: a token that has expired or is about
    /// to is renewed first; when that fails the old token is used, so that the site's answer
    /// says what is wrong, in the collection log.
    pub async fn fresh_bearer(
        &self,
        user_id: i64,
        site: &SiteRecord,
        manifest: &Manifest,
        sealed: Option<&[u8]>,
    ) -> Option<String> {
        match self.bearer(user_id, site, manifest, sealed, Renewal::IfExpiring).await {
            Ok(token) => token,
            Err(error) => {
                tracing::warn!(site = %site.origin, error = %servio_client::error_chain(&error), "renewing the OAuth token failed");
                self.open(user_id, site.id, sealed?).map(|c| c.bearer().to_owned())
            }
        }
    }

    /// Sends a call with `token` through `send`; when the site answers `401` to it, renews the
    /// token once (unless it is a pasted token, or another call renewed it meanwhile) and sends
    /// again. The one place of that rule, for the collector and the gateway alike.
    #[allow(
        clippy::too_many_arguments,
        reason = "the user, the site and its manifest, the sealed credential, the token and the sender: a struct for one call would only move the list"
    )]
    pub async fn send_with_renewal<T, F, Fut>(
        &self,
        user_id: i64,
        site: &SiteRecord,
        manifest: &Manifest,
        sealed: Option<&[u8]>,
        token: Option<&str>,
        send: F,
    ) -> Sent<T>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, CallError>>,
    {
        let result = send(token.map(str::to_owned)).await;
        let (Err(CallError::Failed { status: 401, .. }), Some(refused)) = (&result, token) else {
            return Sent { result, retried: Retried::No };
        };
        match self.bearer(user_id, site, manifest, sealed, Renewal::Refused(refused)).await {
            Ok(Some(fresh)) if fresh != refused => Sent { result: send(Some(fresh)).await, retried: Retried::Renewed },
            // Nothing new to try (a pasted token, or no credential): the 401 is the answer.
            Ok(_) => Sent { result, retried: Retried::No },
            Err(error) => Sent { result, retried: Retried::RenewalFailed(error) },
        }
    }
}

fn needs_renewal(credential: &Credential, when: Renewal<'_>) -> bool {
    let Credential::OAuth(tokens) = credential else { return false };
    if tokens.refresh_token.is_none() {
        return false;
    }
    match when {
        Renewal::IfExpiring => tokens.expires_soon(now(), RENEWAL_MARGIN),
        Renewal::Refused(token) => tokens.access_token == token,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_read_back_as_they_were_sealed() {
        let tokens = Tokens { access_token: "a".into(), refresh_token: Some("r".into()), expires_at: Some(5) };
        let Some(Credential::OAuth(read)) = Credential::from_plaintext(Credential::OAuth(tokens).plaintext()) else {
            panic!("OAuth tokens read back as another kind");
        };
        assert_eq!(
            (read.access_token.as_str(), read.refresh_token.as_deref(), read.expires_at),
            ("a", Some("r"), Some(5))
        );
        let pasted = Credential::from_plaintext(Credential::Token("{\"kind\":1}".into()).plaintext());
        assert_eq!(pasted.as_ref().map(Credential::bearer), Some("{\"kind\":1}"), "a pasted token stays a token");
        assert_eq!(format!("{:?}", Credential::Token("secret".into())), "Credential::Token(..)");
    }

    /// Credentials sealed before stay readable: the plaintext is byte for byte what it was.
    #[test]
    fn oauth_tokens_are_sealed_as_they_always_were() {
        let tokens = Tokens { access_token: "a".into(), refresh_token: None, expires_at: Some(5) };
        let sealed = String::from_utf8(Credential::OAuth(tokens).plaintext()).unwrap();
        assert_eq!(sealed, r#"{"kind":"oauth2","access_token":"a","refresh_token":null,"expires_at":5}"#);
        let old = br#"{"kind":"oauth2","access_token":"b","expires_at":null}"#.to_vec();
        let Some(Credential::OAuth(read)) = Credential::from_plaintext(old) else { panic!("not read as OAuth") };
        assert_eq!((read.access_token.as_str(), read.refresh_token, read.expires_at), ("b", None, None));
    }
}
