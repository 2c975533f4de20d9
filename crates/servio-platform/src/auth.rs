//! Who is asking: a session cookie (browsers) or a personal API token (programs, AI clients).
//!
//! Cookie-authenticated requests that change state must carry the session's CSRF token in
//! the `X-CSRF-Token` header; API tokens need none, since a browser never sends them on its own.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use servio_store::User;

use crate::accounts::{same_secret, token_hash};
use crate::error::ApiError;
use crate::{AppState, now};

/// The session cookie. `__Host-` binds it to this exact origin, over HTTPS, with path `/`.
pub const SESSION_COOKIE: &str = "__Host-servio_session";

/// How the caller proved who they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A browser session; the hash of its cookie and its CSRF token.
    Session {
        /// The hash the session is stored under.
        token_hash: String,
        /// The CSRF token.
        csrf_token: String,
    },
    /// A personal API token.
    ApiToken,
}

/// A signed-in caller.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The user.
    pub user: User,
    /// How.
    pub via: Via,
}

/// The value of cookie `name` in the request, if sent.
pub fn cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

/// Refuses a sign-in or sign-up that a browser sent on behalf of another site (login CSRF: an
/// attacker's page signing the victim into the attacker's account): `Sec-Fetch-Site:
/// cross-site`, or an `Origin` that is neither the platform's public origin nor the one the
/// request was addressed to (`Host`, for a platform reached by another name than its public
/// URL, such as `localhost`). A request with neither header (older browsers, programs) passes:
/// browsers that send neither are also too old to post cross-site without a form, and the
/// `SameSite=Lax` cookie keeps the session out of such posts.
pub fn refuse_cross_site(public_url: &str, headers: &HeaderMap) -> Result<(), ApiError> {
    let value = |name: header::HeaderName| headers.get(name).map(|v| v.to_str().unwrap_or_default());
    if value(header::HeaderName::from_static("sec-fetch-site")) == Some("cross-site") {
        return Err(ApiError::CrossSite);
    }
    match value(header::ORIGIN) {
        None => Ok(()),
        Some(origin) if is_own_origin(public_url, value(header::HOST), origin) => Ok(()),
        Some(_) => Err(ApiError::CrossSite),
    }
}

/// Whether `origin` (an `Origin` header; `null` and garbage are foreign) is the public URL's
/// origin, or has the host and port of the request's `Host`.
fn is_own_origin(public_url: &str, host: Option<&str>, origin: &str) -> bool {
    let Ok(sent) = url::Url::parse(origin) else { return false };
    if url::Url::parse(public_url).is_ok_and(|public| public.origin() == sent.origin()) {
        return true;
    }
    let Some(sent_host) = sent.host_str() else { return false };
    let authority = match sent.port() {
        Some(port) => format!("{sent_host}:{port}"),
        None => sent_host.to_owned(),
    };
    host.is_some_and(|host| host.eq_ignore_ascii_case(&authority))
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, ApiError> {
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if let Some(token) = bearer {
            let user = state.tokens.user(state, &token_hash(token.trim())).await?;
            return user.map(|user| Caller { user, via: Via::ApiToken }).ok_or(ApiError::Unauthorized);
        }
        let token = cookie(parts, SESSION_COOKIE).ok_or(ApiError::Unauthorized)?;
        let hash = token_hash(token);
        let session = state.store.session(&hash, now()).await?.ok_or(ApiError::Unauthorized)?;
        if changes_state(&parts.method) {
            let sent = parts.headers.get("x-csrf-token").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if !same_secret(sent, &session.csrf_token) {
                return Err(ApiError::Csrf);
            }
        }
        let user = state.store.user(session.user_id).await?.ok_or(ApiError::Unauthorized)?;
        Ok(Caller { user, via: Via::Session { token_hash: hash, csrf_token: session.csrf_token } })
    }
}

/// How long a resolved API token is reused without asking the store.
pub const TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// API tokens resolved in the last [`TOKEN_TTL`], so that a client calling in quick succession
/// (an AI client's tool calls) costs no store read each time. Deleting a token or changing its
/// user drops that user's entries in this process at once; only a deletion made through another
/// process can take up to [`TOKEN_TTL`] to bite.
#[derive(Default)]
pub struct TokenCache(std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, servio_store::User)>>);

impl TokenCache {
    /// The owner of the token with this hash.
    pub async fn user(
        &self,
        state: &AppState,
        hash: &str,
    ) -> Result<Option<servio_store::User>, servio_store::StoreError> {
        {
            let kept = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some((_, user)) = kept.get(hash).filter(|(at, _)| at.elapsed() < TOKEN_TTL) {
                return Ok(Some(user.clone()));
            }
        }
        let user = state.store.user_by_api_token(hash, now()).await?;
        if let Some(user) = &user {
            let mut kept = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if kept.len() >= 4096 {
                kept.retain(|_, (at, _)| at.elapsed() < TOKEN_TTL);
            }
            kept.insert(hash.to_owned(), (std::time::Instant::now(), user.clone()));
        }
        Ok(user)
    }

    /// Drops every kept token of `user_id`.
    pub fn forget_user(&self, user_id: i64) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).retain(|_, (_, user)| user.id != user_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a sign-in with these headers is let through by a platform at this public URL.
    fn check(public_url: &str, sent: &[(&'static str, &str)]) -> bool {
        let mut headers = HeaderMap::new();
        for (name, value) in sent {
            headers.insert(*name, value.parse().unwrap());
        }
        refuse_cross_site(public_url, &headers).is_ok()
    }

    #[test]
    fn cross_site_sign_ins_are_refused() {
        let public = "https://servio.example";
        assert!(check(public, &[]), "programs and old browsers send neither header");
        assert!(check(public, &[("origin", "https://servio.example")]));
        assert!(check(public, &[("origin", "https://SERVIO.example"), ("sec-fetch-site", "same-origin")]));
        assert!(check(public, &[("origin", "http://localhost:8080"), ("host", "localhost:8080")]), "by another name");
        assert!(check("http://127.0.0.1:80", &[("origin", "http://127.0.0.1"), ("host", "127.0.0.1")]));
        assert!(!check(public, &[("origin", "https://evil.example"), ("host", "servio.example")]));
        assert!(!check(public, &[("origin", "null")]), "sandboxed frames and data: pages");
        assert!(!check(public, &[("origin", "https://servio.example.evil.example")]));
        assert!(!check(public, &[("sec-fetch-site", "cross-site")]), "even without Origin");
        assert!(!check(public, &[("origin", "https://servio.example"), ("sec-fetch-site", "cross-site")]));
    }
}
