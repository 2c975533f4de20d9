//! Who is asking: a session cookie (browsers) or a personal API token (programs, AI clients).
//!
//! One resolver, [`resolve`], behind two extractors: [`Caller`] for the JSON API (a token or the
//! session cookie; `401` for nobody) and [`PageUser`] for pages (the session cookie; nobody is
//! sent to sign in), with [`PageForm`] for the pages' form posts.
//!
//! Cookie-authenticated requests that change state must carry the session's CSRF token: API
//! requests in the `X-CSRF-Token` header, form posts in the `csrf_token` field. API tokens need
//! none, since a browser never sends them on its own.

use axum::body::{Body, Bytes};
use axum::extract::{Form, FromRequest, FromRequestParts, OptionalFromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::de::DeserializeOwned;
use servio_store::{Grant, Scope, User};

use crate::domain::accounts::secrets::{same_secret, token_hash};
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
    /// A personal API token, by its id, with what it grants.
    ApiToken {
        /// The token's id (the call log names it).
        token_id: i64,
        /// Its scope and the sites it is limited to (interpretation §10).
        grant: Grant,
    },
}

impl Via {
    /// The API token asking, if one is.
    pub fn token_id(&self) -> Option<i64> {
        match self {
            Via::ApiToken { token_id, .. } => Some(*token_id),
            Via::Session { .. } => None,
        }
    }

    /// The caller's scope: a browser session's is [`Scope::Account`].
    pub fn scope(&self) -> Scope {
        match self {
            Via::ApiToken { grant, .. } => grant.scope,
            Via::Session { .. } => Scope::Account,
        }
    }

    /// What the caller may do: a browser session everything, a token what it grants.
    pub fn grant(&self) -> Grant {
        match self {
            Via::ApiToken { grant, .. } => grant.clone(),
            Via::Session { .. } => Grant::all_sites(Scope::Account),
        }
    }
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

/// What a request presents to say who sends it.
#[derive(Debug, Clone, Copy)]
pub enum Presented<'a> {
    /// A personal API token (`Authorization: Bearer`).
    ApiToken(&'a str),
    /// The value of the session cookie.
    SessionCookie(&'a str),
}

impl Presented<'_> {
    /// What an API request presents: an API token, or else the session cookie.
    pub fn for_api(parts: &Parts) -> Option<Presented<'_>> {
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match bearer {
            Some(token) => Some(Presented::ApiToken(token.trim())),
            None => Presented::for_page(parts),
        }
    }

    /// What a page request presents: the session cookie only (a browser never sends a token).
    pub fn for_page(parts: &Parts) -> Option<Presented<'_>> {
        cookie(parts, SESSION_COOKIE).map(Presented::SessionCookie)
    }
}

/// The one answer to "who is this": the signed-in caller that `presented` names, or `None` when
/// it names nobody (unknown, expired, deleted). Both extractors, [`Caller`] for the API and
/// [`PageUser`] for pages, go through here.
pub async fn resolve(state: &AppState, presented: Presented<'_>) -> Result<Option<Caller>, servio_store::StoreError> {
    let caller = resolve_presented(state, presented).await?;
    if let Some(caller) = &caller {
        // The shared check pool serves this request in its user's turn.
        servio_core::fair::set_owner(caller.user.id);
    }
    Ok(caller)
}

async fn resolve_presented(
    state: &AppState,
    presented: Presented<'_>,
) -> Result<Option<Caller>, servio_store::StoreError> {
    match presented {
        Presented::ApiToken(token) => {
            let holder = state.tokens.user(state, &token_hash(token)).await?;
            Ok(holder
                .map(|(user, token)| Caller { user, via: Via::ApiToken { token_id: token.id, grant: token.grant } }))
        }
        Presented::SessionCookie(token) => {
            let hash = token_hash(token);
            let Some(session) = state.store.session(&hash, now()).await? else { return Ok(None) };
            let Some(user) = state.store.user(session.user_id).await? else { return Ok(None) };
            Ok(Some(Caller { user, via: Via::Session { token_hash: hash, csrf_token: session.csrf_token } }))
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, ApiError> {
        let presented = Presented::for_api(parts).ok_or(ApiError::Unauthorized)?;
        let caller = resolve(state, presented).await?.ok_or(ApiError::Unauthorized)?;
        let route = parts.extensions.get::<axum::extract::MatchedPath>().map_or("", |matched| matched.as_str());
        let needed = crate::scopes::needed(&parts.method, route);
        let granted = caller.via.scope();
        if !granted.covers(needed) {
            return Err(ApiError::Scope { needed, granted });
        }
        if let Via::Session { csrf_token, .. } = &caller.via
            && changes_state(&parts.method)
        {
            let sent = parts.headers.get("x-csrf-token").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if !same_secret(sent, csrf_token) {
                return Err(ApiError::Csrf);
            }
        }
        Ok(caller)
    }
}

/// A JSON API request of a signed-in caller: the state to act on and who asks, so that a handler
/// takes one value rather than `State` and [`Caller`] apart. Built over [`Caller`], so the same
/// `401` and CSRF rules apply.
#[derive(Clone)]
pub struct Api {
    /// What the handler acts on.
    pub state: AppState,
    /// The user.
    pub user: User,
    /// How.
    pub via: Via,
}

impl FromRequestParts<AppState> for Api {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Api, ApiError> {
        let Caller { user, via } = Caller::from_request_parts(parts, state).await?;
        Ok(Api { state: state.clone(), user, via })
    }
}

/// The signed-in user of a page request (session cookie only), with the session's CSRF token
/// for the page's forms. Nobody signed in is sent to the sign-in page.
#[derive(Debug, Clone)]
pub struct PageUser {
    /// The user.
    pub user: User,
    /// The session's CSRF token, for the forms of the page.
    pub csrf_token: String,
    /// The hash the session is stored under (sign-out deletes it).
    pub token_hash: String,
}

/// Why a page request was not let through.
#[derive(Debug)]
pub enum PageRejection {
    /// Nobody is signed in: off to the sign-in page.
    SignIn,
    /// A form without the session's CSRF token, an unreadable form, or a failure.
    Refused(Response),
}

impl IntoResponse for PageRejection {
    fn into_response(self) -> Response {
        match self {
            PageRejection::SignIn => Redirect::to("/signin").into_response(),
            PageRejection::Refused(response) => response,
        }
    }
}

async fn page_user(parts: &Parts, state: &AppState) -> Result<Option<PageUser>, ApiError> {
    let Some(presented) = Presented::for_page(parts) else { return Ok(None) };
    Ok(resolve(state, presented).await?.and_then(|caller| match caller.via {
        Via::Session { token_hash, csrf_token } => Some(PageUser { user: caller.user, csrf_token, token_hash }),
        Via::ApiToken { .. } => None,
    }))
}

impl FromRequestParts<AppState> for PageUser {
    type Rejection = PageRejection;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<PageUser, PageRejection> {
        match page_user(parts, state).await {
            Ok(Some(user)) => Ok(user),
            Ok(None) => Err(PageRejection::SignIn),
            Err(error) => Err(PageRejection::Refused(error.into_response())),
        }
    }
}

/// Pages that anyone may see (the Directory, the home page) take `Option<PageUser>`: a store
/// failure there shows the page as to nobody, and is logged.
impl OptionalFromRequestParts<AppState> for PageUser {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Option<PageUser>, Self::Rejection> {
        Ok(page_user(parts, state).await.unwrap_or_else(|error| {
            error.log_if_internal();
            None
        }))
    }
}

/// A form posted from a page: the signed-in user, checked first (who may post comes before what
/// was posted), then the form's `csrf_token` field against the session's, then the fields as `T`.
#[derive(Debug)]
pub struct PageForm<T> {
    /// Who posted.
    pub user: PageUser,
    /// The form's other fields.
    pub form: T,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for PageForm<T> {
    type Rejection = PageRejection;

    async fn from_request(request: Request, state: &AppState) -> Result<PageForm<T>, PageRejection> {
        let (mut parts, body) = request.into_parts();
        let user = <PageUser as FromRequestParts<AppState>>::from_request_parts(&mut parts, state).await?;
        let refuse = |response: Response| PageRejection::Refused(response);
        let (method, content_type) = (parts.method.clone(), parts.headers.get(header::CONTENT_TYPE).cloned());
        let bytes = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(|rejection| refuse(rejection.into_response()))?;
        let sent = url::form_urlencoded::parse(&bytes).find(|(name, _)| name == "csrf_token").map(|(_, value)| value);
        if !same_secret(sent.as_deref().unwrap_or_default(), &user.csrf_token) {
            return Err(refuse(ApiError::Csrf.into_response()));
        }
        let mut again = Request::new(Body::from(bytes));
        *again.method_mut() = method;
        if let Some(content_type) = content_type {
            again.headers_mut().insert(header::CONTENT_TYPE, content_type);
        }
        let Form(form) =
            Form::<T>::from_request(again, state).await.map_err(|rejection| refuse(rejection.into_response()))?;
        Ok(PageForm { user, form })
    }
}

/// How long a resolved API token is reused without asking the store.
pub const TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// API tokens resolved in the last [`TOKEN_TTL`], so that a client calling in quick succession
/// (an AI client's tool calls) costs no store read each time. Deleting a token or changing its
/// user drops that user's entries in this process at once; only a deletion made through another
/// process can take up to [`TOKEN_TTL`] to bite.
#[derive(Default)]
pub struct TokenCache(std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, TokenHolder)>>);

/// The owner of an API token, and the token's id and grant.
pub type TokenHolder = (servio_store::User, servio_store::TokenGrant);

impl TokenCache {
    /// The owner of the token with this hash, and the token's id.
    pub async fn user(&self, state: &AppState, hash: &str) -> Result<Option<TokenHolder>, servio_store::StoreError> {
        {
            let kept = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some((_, holder)) = kept.get(hash).filter(|(at, _)| at.elapsed() < TOKEN_TTL) {
                return Ok(Some(holder.clone()));
            }
        }
        let holder = state.store.user_by_api_token(hash, now()).await?;
        if let Some(holder) = &holder {
            let mut kept = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if kept.len() >= 4096 {
                kept.retain(|_, (at, _)| at.elapsed() < TOKEN_TTL);
            }
            kept.insert(hash.to_owned(), (std::time::Instant::now(), holder.clone()));
        }
        Ok(holder)
    }

    /// Drops every kept token of `user_id`.
    pub fn forget_user(&self, user_id: i64) {
        let mut kept = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.retain(|_, (_, (user, _))| user.id != user_id);
    }

    /// Drops every kept token (when notices from other processes may have been missed).
    pub fn forget_all(&self) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
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
