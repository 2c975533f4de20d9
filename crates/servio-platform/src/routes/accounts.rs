//! Accounts over the JSON API: sign-up, sign-in (a new session each time), sign-out, the
//! caller's profile and time zone, and personal API tokens (shown once, stored hashed).

use std::net::IpAddr;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use servio_store::{Session, User};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::accounts::{
    check_password, check_time_zone, decoy_hash, earlier_forms, hash_password, new_token, normalize_email, token_hash,
    verify_password,
};
use crate::auth::{Caller, SESSION_COOKIE, Via, cookie, refuse_cross_site};
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::throttle::ClientAddress;
use crate::{AppState, now};

/// How long a session lasts at most, however much it is used.
const SESSION_SECONDS: i64 = 14 * 24 * 3600;

/// How long a session lasts unused: a forgotten browser should not stay signed in for the
/// whole of [`SESSION_SECONDS`].
const IDLE_SECONDS: i64 = 7 * 24 * 3600;

/// The account routes. Their answers carry sessions, CSRF tokens and API tokens, so none is
/// ever kept by a cache.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/signup", post(sign_up))
        .route("/api/signin", post(sign_in))
        .route("/api/signout", post(sign_out))
        .route("/api/me", get(me))
        .route("/api/me/time_zone", put(set_time_zone))
        .route("/api/tokens", get(list_tokens).post(create_token))
        .route("/api/tokens/{id}", delete(delete_token))
        .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
}

#[derive(Deserialize)]
struct SignUp {
    email: String,
    password: String,
    time_zone: String,
}

#[derive(Deserialize)]
struct SignIn {
    email: String,
    password: String,
}

fn bad(field: &str, expected: &str) -> ApiError {
    ApiError::BadRequest(format!("`{field}` must be {expected}"))
}

fn user_json(user: &User) -> Value {
    json!({ "id": user.id, "email": user.email, "time_zone": user.time_zone })
}

/// Starts a session: a new random cookie value (so a session id planted before sign-in is never
/// reused), stored as a hash, with its CSRF token. Returns the `Set-Cookie` value and the CSRF
/// token.
pub(crate) async fn create_session(
    state: &AppState,
    user: &User,
    headers: &HeaderMap,
) -> Result<(HeaderValue, String), ApiError> {
    if let Some(old) = request_cookie(headers) {
        state.store.delete_session(&token_hash(&old)).await?;
    }
    let token = new_token("s_").map_err(ApiError::Internal)?;
    let csrf_token = new_token("c_").map_err(ApiError::Internal)?;
    let session = Session {
        user_id: user.id,
        csrf_token: csrf_token.clone(),
        expires_at: now() + SESSION_SECONDS,
        idle_seconds: IDLE_SECONDS,
    };
    state.store.create_session(&token_hash(&token), &session, now()).await?;
    let cookie = format!("{SESSION_COOKIE}={token}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age={SESSION_SECONDS}");
    Ok((HeaderValue::from_str(&cookie).map_err(|e| ApiError::Internal(e.to_string()))?, csrf_token))
}

/// The `Set-Cookie` value that ends a session in the browser.
pub(crate) fn expired_cookie() -> HeaderValue {
    HeaderValue::from_static("__Host-servio_session=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0")
}

async fn start_session(state: &AppState, user: &User, headers: &HeaderMap) -> Result<Response, ApiError> {
    let (cookie, csrf_token) = create_session(state, user, headers).await?;
    let mut response = Json(json!({ "user": user_json(user), "csrf_token": csrf_token })).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(response)
}

/// Who is trying to sign in or up: what the abuse checks look at.
#[derive(Clone, Copy)]
pub(crate) struct Attempt<'a> {
    /// The client's address, for the per-address limits.
    pub address: IpAddr,
    /// The request's headers, for the cross-site check.
    pub headers: &'a HeaderMap,
}

impl Attempt<'_> {
    /// Refuses an attempt a browser made for another site.
    fn refuse_cross_site(&self, state: &AppState) -> Result<(), ApiError> {
        refuse_cross_site(&state.oauth.public_url, self.headers)
    }
}

/// Creates an account after checking who asks (same site, within the address's sign-up limit,
/// so that taken addresses cannot be enumerated at speed) and then its fields.
pub(crate) async fn register(
    state: &AppState,
    attempt: Attempt<'_>,
    email: &str,
    password: &str,
    time_zone: &str,
) -> Result<User, ApiError> {
    attempt.refuse_cross_site(state)?;
    state.throttle.sign_up(attempt.address)?;
    let normalized = normalize_email(email).map_err(|e| bad("email", e))?;
    check_password(password).map_err(|e| bad("password", e))?;
    check_time_zone(time_zone).map_err(|e| bad("time_zone", e))?;
    // The unique index sees stored forms only: an account made before NFC under another form
    // of this address is looked for too.
    if find_user(state, &earlier_forms(email, &normalized)).await?.is_some() {
        return Err(ApiError::Conflict("this email is already taken".into()));
    }
    let password = password.to_owned();
    let hash = state.throttle.hashing.run(move || hash_password(&password)).await?.map_err(ApiError::Internal)?;
    Ok(state.store.create_user(&normalized, &hash, time_zone, now()).await?)
}

/// The first user stored under one of `forms` of an email.
async fn find_user(state: &AppState, forms: &[String]) -> Result<Option<User>, ApiError> {
    for form in forms {
        if let Some(user) = state.store.user_by_email(form).await? {
            return Ok(Some(user));
        }
    }
    Ok(None)
}

/// The user with these credentials; the same answer, in the same time, whichever is wrong.
/// Checked first: same site, and within the limits of the client's address and of the account.
pub(crate) async fn authenticate(
    state: &AppState,
    attempt: Attempt<'_>,
    email: &str,
    password: &str,
) -> Result<User, ApiError> {
    attempt.refuse_cross_site(state)?;
    crate::text::require_text("email", email)?;
    let normalized = normalize_email(email);
    state.throttle.sign_in(attempt.address, normalized.as_deref().unwrap_or(email.trim()))?;
    let normalized = normalized.map_err(|_| ApiError::WrongCredentials)?;
    let mut forms = vec![normalized.clone()];
    forms.extend(earlier_forms(email, &normalized));
    let user = find_user(state, &forms).await?;
    let (password, hash) = (password.to_owned(), user.as_ref().map(|u| u.password_hash.clone()));
    let matches = state
        .throttle
        .hashing
        .run(move || match &hash {
            Some(hash) => verify_password(&password, hash),
            None => verify_password(&password, decoy_hash()),
        })
        .await?;
    match (matches, user) {
        (true, Some(user)) => Ok(user),
        _ => Err(ApiError::WrongCredentials),
    }
}

fn request_cookie(headers: &HeaderMap) -> Option<String> {
    let (mut parts, ()) = axum::http::Request::new(()).into_parts();
    parts.headers = headers.clone();
    cookie(&parts, SESSION_COOKIE).map(str::to_owned)
}

async fn sign_up(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    JsonBody(form): JsonBody<SignUp>,
) -> Result<Response, ApiError> {
    let attempt = Attempt { address, headers: &headers };
    let user = register(&state, attempt, &form.email, &form.password, &form.time_zone).await?;
    let mut response = start_session(&state, &user, &headers).await?;
    *response.status_mut() = StatusCode::CREATED;
    Ok(response)
}

async fn sign_in(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    JsonBody(form): JsonBody<SignIn>,
) -> Result<Response, ApiError> {
    let user = authenticate(&state, Attempt { address, headers: &headers }, &form.email, &form.password).await?;
    start_session(&state, &user, &headers).await
}

async fn sign_out(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    if let Via::Session { token_hash, .. } = &caller.via {
        state.store.delete_session(token_hash).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    Ok(response)
}

async fn me(caller: Caller) -> Json<Value> {
    let mut body = json!({ "user": user_json(&caller.user) });
    if let Via::Session { csrf_token, .. } = &caller.via {
        body["csrf_token"] = json!(csrf_token);
    }
    Json(body)
}

#[derive(Deserialize)]
struct TimeZone {
    time_zone: String,
}

async fn set_time_zone(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(form): JsonBody<TimeZone>,
) -> Result<Json<Value>, ApiError> {
    check_time_zone(&form.time_zone).map_err(|e| bad("time_zone", e))?;
    state.store.set_time_zone(caller.user.id, &form.time_zone).await?;
    state.tokens.forget_user(caller.user.id);
    Ok(Json(json!({ "time_zone": form.time_zone })))
}

#[derive(Deserialize)]
struct NewToken {
    name: String,
}

/// Makes a personal API token named `name` for the user: the stored record, and the token
/// itself (the only time it exists outside its hash).
pub(crate) async fn issue_token(
    state: &AppState,
    user_id: i64,
    name: &str,
) -> Result<(servio_store::ApiToken, String), ApiError> {
    let name = name.trim();
    crate::text::require_text("name", name)?;
    if name.is_empty() || name.chars().count() > 100 {
        return Err(bad("name", "a name of 1 to 100 characters"));
    }
    let token = new_token("svt_").map_err(ApiError::Internal)?;
    let stored = state.store.create_api_token(user_id, name, &token_hash(&token), now()).await?;
    Ok((stored, token))
}

async fn create_token(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(form): JsonBody<NewToken>,
) -> Result<Response, ApiError> {
    let (stored, token) = issue_token(&state, caller.user.id, &form.name).await?;
    let body = json!({ "id": stored.id, "name": stored.name, "token": token, "note": "shown once: store it now" });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

async fn list_tokens(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let tokens = state.store.api_tokens(caller.user.id).await?;
    let tokens: Vec<Value> = tokens
        .iter()
        .map(|t| json!({ "id": t.id, "name": t.name, "created_at": t.created_at, "last_used_at": t.last_used_at }))
        .collect();
    Ok(Json(json!({ "tokens": tokens })))
}

async fn delete_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    let deleted = state.store.delete_api_token(caller.user.id, id).await?;
    state.tokens.forget_user(caller.user.id);
    match deleted {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::NotFound),
    }
}
