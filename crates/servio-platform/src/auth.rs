//! Who is asking: a session cookie (browsers) or a personal API token (programs, AI clients).
//!
//! Cookie-authenticated requests that change state must carry the session's CSRF token in
//! the `X-CSRF-Token` header; API tokens need none, since a browser never sends them on its own.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{Method, header};
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
            let user = state.store.user_by_api_token(&token_hash(token.trim()), now()).await?;
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
