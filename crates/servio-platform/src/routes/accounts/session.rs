//! What a browser carries into sign-up and sign-in: the cross-site check, the session cookie a
//! sign-in starts (and the one it replaces), and the known-device cookie. The accounts' rules
//! themselves are [`crate::domain::accounts`].

use std::net::IpAddr;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use servio_store::{Session, User};

use crate::auth::{SESSION_COOKIE, cookie, refuse_cross_site};
use crate::domain::accounts::secrets::{new_token, token_hash};
use crate::domain::accounts::{self, SignIn, SignUp};
use crate::error::ApiError;
use crate::throttle::ClientAddress;
use crate::{AppState, now};

/// How long a session lasts at most, however much it is used.
const SESSION_SECONDS: i64 = 14 * 24 * 3600;

/// How long a session lasts unused: a forgotten browser should not stay signed in for the
/// whole of [`SESSION_SECONDS`].
const IDLE_SECONDS: i64 = 7 * 24 * 3600;

/// The cookie of a **known device**: a browser that signed in to an account, which skips the
/// account's sign-in limit (not its own pair's backoff) so that others' wrong passwords do not
/// lock the owner out. Its value is sealed with the platform's key (any process opens it) and
/// names the account and when it ends.
pub(crate) const DEVICE_COOKIE: &str = "__Host-servio_device";

/// How long a known device stays known after its last sign-in.
const DEVICE_SECONDS: i64 = 180 * 24 * 3600;

/// What a known-device cookie is sealed for, so that no other sealed value passes for one.
const DEVICE_AAD: &str = "servio known device";

/// Starts a session: a new random cookie value (so a session id planted before sign-in is never
/// reused), stored as a hash, with its CSRF token. Returns the `Set-Cookie` value and the CSRF
/// token.
async fn create_session(state: &AppState, user: &User, headers: &HeaderMap) -> Result<(HeaderValue, String), ApiError> {
    if let Some(old) = request_cookie(headers) {
        state.store.delete_session(&token_hash(&old)).await?;
    }
    let token = new_token("s_").map_err(ApiError::internal)?;
    let csrf_token = new_token("c_").map_err(ApiError::internal)?;
    let session = Session {
        user_id: user.id,
        csrf_token: csrf_token.clone(),
        expires_at: now() + SESSION_SECONDS,
        idle_seconds: IDLE_SECONDS,
    };
    state.store.create_session(&token_hash(&token), &session, now()).await?;
    // Sessions per user are bounded: a sign-in past the limit ends the least recently used.
    state.store.trim_sessions(user.id, state.quotas.browser_sessions).await?;
    let cookie = format!("{SESSION_COOKIE}={token}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age={SESSION_SECONDS}");
    Ok((HeaderValue::from_str(&cookie).map_err(ApiError::internal)?, csrf_token))
}

/// The `Set-Cookie` value that ends a session in the browser.
pub(crate) fn expired_cookie() -> HeaderValue {
    HeaderValue::from_static("__Host-servio_session=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0")
}

/// Who is trying to sign in or up: the platform, and what its abuse checks look at. Taken
/// from the request by the sign-in and sign-up handlers of the API and the pages alike.
pub(crate) struct Visitor {
    /// The platform.
    pub state: AppState,
    /// The client's address, for the per-address limits.
    pub address: IpAddr,
    /// The request's headers, for the cross-site check and the session it may replace.
    pub headers: HeaderMap,
}

impl FromRequestParts<AppState> for Visitor {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Visitor, Self::Rejection> {
        let ClientAddress(address) = ClientAddress::from_request_parts(parts, state).await?;
        Ok(Visitor { state: state.clone(), address, headers: parts.headers.clone() })
    }
}

impl Visitor {
    /// Refuses an attempt a browser made for another site.
    fn refuse_cross_site(&self) -> Result<(), ApiError> {
        refuse_cross_site(&self.state.oauth.public_url, &self.headers)
    }

    /// A new session for `user`, replacing the one the request carried: the `Set-Cookie`
    /// value and the session's CSRF token.
    pub(crate) async fn start_session(&self, user: &User) -> Result<(HeaderValue, String), ApiError> {
        create_session(&self.state, user, &self.headers).await
    }

    /// The `Set-Cookie` value making this browser a known device of `user`'s account (after a
    /// sign-in with the right password).
    pub(crate) fn known_device_cookie(&self, user: &User) -> Result<HeaderValue, ApiError> {
        use base64::Engine;
        let plain = format!("{}\n{}", user.email, now() + DEVICE_SECONDS);
        let sealed = self.state.credentials().secrets().seal(plain.as_bytes(), DEVICE_AAD);
        let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed);
        let cookie =
            format!("{DEVICE_COOKIE}={value}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age={DEVICE_SECONDS}");
        HeaderValue::from_str(&cookie).map_err(ApiError::internal)
    }

    /// Creates an account (see [`accounts::register`]), unless a browser asks for another site.
    pub(crate) async fn register(&self, form: &SignUp) -> Result<User, ApiError> {
        self.refuse_cross_site()?;
        accounts::register(&self.state, self.address, form).await
    }

    /// The user with these credentials (see [`accounts::authenticate`]), unless a browser asks
    /// for another site.
    pub(crate) async fn authenticate(&self, form: &SignIn) -> Result<User, ApiError> {
        self.refuse_cross_site()?;
        accounts::authenticate(&self.state, (self.address, |account: &str| self.is_known_device(account)), form).await
    }

    /// Whether the request carries an unexpired known-device cookie of the account `email`.
    fn is_known_device(&self, email: &str) -> bool {
        use base64::Engine;
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        parts.headers = self.headers.clone();
        let Some(value) = cookie(&parts, DEVICE_COOKIE) else { return false };
        let Ok(sealed) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(value) else { return false };
        let Some(plain) = self.state.credentials().secrets().open(&sealed, DEVICE_AAD) else { return false };
        let Some((account, until)) = std::str::from_utf8(&plain).ok().and_then(|text| text.split_once('\n')) else {
            return false;
        };
        account == email && until.parse::<i64>().is_ok_and(|until| until > now())
    }
}

fn request_cookie(headers: &HeaderMap) -> Option<String> {
    let (mut parts, ()) = axum::http::Request::new(()).into_parts();
    parts.headers = headers.clone();
    cookie(&parts, SESSION_COOKIE).map(str::to_owned)
}
