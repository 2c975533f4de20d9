//! Accounts over the JSON API: sign-up, sign-in (a new session each time), sign-out, the
//! caller's profile and time zone, and personal API tokens (shown once, stored hashed).

use axum::Json;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use servio_store::User;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::session::{Visitor, expired_cookie};
use crate::AppState;
use crate::auth::{Api, Caller, Via};
use crate::domain::accounts::{
    self, AccessEnded, CurrentPassword, IssuedToken, NewToken, PasswordChange, RevokeTokens, SessionItem, SessionView,
    SignIn, SignUp, TimeZone, TokenList,
};
use crate::error::{ApiError, ErrorBody};
use crate::json_body::JsonBody;
use crate::params::{Id, Params};

/// The account routes of the API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(sign_up))
        .routes(routes!(sign_in))
        .routes(routes!(sign_out))
        .routes(routes!(me, delete_account))
        .routes(routes!(change_password))
        .routes(routes!(list_sessions, sign_out_everywhere))
        .routes(routes!(set_time_zone))
        .routes(routes!(list_tokens, create_token))
        .routes(routes!(delete_token))
}

async fn start_session(visitor: &Visitor, user: &User) -> Result<Response, ApiError> {
    let (cookie, csrf_token) = visitor.start_session(user).await?;
    let mut response = Json(SessionView { user: user.into(), csrf_token: Some(csrf_token) }).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(response)
}

/// How sign-up and sign-in refuse an attempt before its password is hashed or checked.
#[derive(utoipa::IntoResponses)]
#[expect(dead_code, reason = "documents responses that ApiError makes")]
enum Refused {
    /// Posted from another site
    #[response(status = 403)]
    CrossSite(ErrorBody),
    /// Too many attempts from this address, or for this account
    #[response(status = 429)]
    TooMany(ErrorBody),
    /// Too many password checks waiting already: try again in a moment
    #[response(status = 503)]
    Busy(ErrorBody),
}

/// How a route that checks the current password refuses before checking it (a password change,
/// an account deletion, an `account` token).
#[derive(utoipa::IntoResponses)]
#[expect(dead_code, reason = "documents responses that ApiError makes")]
enum PasswordRefused {
    /// Too many wrong passwords for this account
    #[response(status = 429)]
    TooMany(ErrorBody),
    /// Too many password checks waiting already: try again in a moment
    #[response(status = 503)]
    Busy(ErrorBody),
}

/// Create an account and start a session
#[utoipa::path(post, path = "/api/signup", security(()), request_body = SignUp, responses(
    (status = 201, description = "Signed up and signed in: the session cookie is set", body = SessionView),
    (status = 400, description = "A field is invalid; `error` says which", body = ErrorBody),
    (status = 409, description = "The email is taken", body = ErrorBody),
    Refused,
))]
async fn sign_up(visitor: Visitor, JsonBody(form): JsonBody<SignUp>) -> Result<Response, ApiError> {
    let user = visitor.register(&form).await?;
    let mut response = start_session(&visitor, &user).await?;
    *response.status_mut() = StatusCode::CREATED;
    Ok(response)
}

/// Start a session (a new one each time)
#[utoipa::path(post, path = "/api/signin", security(()), request_body = SignIn, responses(
    (status = 200, description = "Signed in: the session cookie is set", body = SessionView),
    (status = 401, description = "Wrong email or password", body = ErrorBody),
    Refused,
))]
async fn sign_in(visitor: Visitor, JsonBody(form): JsonBody<SignIn>) -> Result<Response, ApiError> {
    let user = visitor.authenticate(&form).await?;
    let mut response = start_session(&visitor, &user).await?;
    response.headers_mut().append(header::SET_COOKIE, visitor.known_device_cookie(&user)?);
    Ok(response)
}

/// End the current session
#[utoipa::path(post, path = "/api/signout", responses((status = 204, description = "Signed out: the cookie is expired")))]
async fn sign_out(api: Api) -> Result<Response, ApiError> {
    if let Via::Session { token_hash, .. } = &api.via {
        api.state.store.delete_session(token_hash).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    Ok(response)
}

/// The signed-in user (and the session's CSRF token)
#[utoipa::path(get, path = "/api/me", responses((status = 200, description = "The user; `csrf_token` only with a session cookie", body = SessionView)))]
async fn me(caller: Caller) -> Json<SessionView> {
    let csrf_token = match caller.via {
        Via::Session { csrf_token, .. } => Some(csrf_token),
        Via::ApiToken { .. } => None,
    };
    Json(SessionView { user: (&caller.user).into(), csrf_token })
}

/// Change the user's IANA time zone
#[utoipa::path(put, path = "/api/me/time_zone", request_body = TimeZone, responses(
    (status = 200, description = "The new time zone", body = TimeZone),
    (status = 400, description = "Not an IANA time zone", body = ErrorBody),
))]
async fn set_time_zone(api: Api, JsonBody(form): JsonBody<TimeZone>) -> Result<Json<TimeZone>, ApiError> {
    accounts::set_time_zone(&api.state, api.user.id, form).await.map(Json)
}

/// The user's personal API tokens, without their secrets
#[utoipa::path(get, path = "/api/tokens", responses((status = 200, description = "The tokens", body = TokenList)))]
async fn list_tokens(api: Api) -> Result<Json<TokenList>, ApiError> {
    accounts::tokens(&api.state, api.user.id).await.map(Json)
}

/// Create a personal API token, shown once
#[utoipa::path(post, path = "/api/tokens", request_body = NewToken, responses(
    (status = 201, description = "The token, shown this once", body = IssuedToken),
    (status = 400, description = "A bad name, a site not in the vault, or a wrong password for an `account` token", body = ErrorBody),
    (status = 403, description = "An `account` token asked for with an API token (only a signed-in session makes one), \
                                  or an API token whose scope does not reach this route", body = ErrorBody),
    (status = 409, description = "As many tokens as one user may have (100 by default): revoke one first", body = ErrorBody),
    PasswordRefused,
))]
async fn create_token(api: Api, JsonBody(form): JsonBody<NewToken>) -> Result<Response, ApiError> {
    let issued = accounts::issue_token(&api.state, (&api.user, matches!(api.via, Via::Session { .. })), &form).await?;
    Ok((StatusCode::CREATED, Json(issued)).into_response())
}

/// Delete one of the user's API tokens
#[utoipa::path(delete, path = "/api/tokens/{id}", responses((status = 204, description = "Deleted")))]
async fn delete_token(api: Api, Id(id): Id) -> Result<StatusCode, ApiError> {
    accounts::delete_token(&api.state, api.user.id, id).await.map(|()| StatusCode::NO_CONTENT)
}

/// The hash of the session asking, if a session asks ("" for an API token).
fn session_hash(via: &Via) -> &str {
    match via {
        Via::Session { token_hash, .. } => token_hash,
        Via::ApiToken { .. } => "",
    }
}

/// Change the password; the current one is required, every other session ends, and API tokens are revoked when asked (`revoke_api_tokens`)
#[utoipa::path(put, path = "/api/me/password", request_body = PasswordChange, responses(
    (status = 200, description = "Changed; other sessions ended; which API tokens still work", body = AccessEnded),
    (status = 400, description = "The current password is wrong, or the new one too short", body = ErrorBody),
    PasswordRefused,
))]
async fn change_password(api: Api, JsonBody(form): JsonBody<PasswordChange>) -> Result<Json<AccessEnded>, ApiError> {
    accounts::change_password(&api.state, &api.user, session_hash(&api.via), &form).await.map(Json)
}

/// Delete the account and everything of it (vault, credentials, values, tokens, sessions)
#[utoipa::path(delete, path = "/api/me", request_body = CurrentPassword, responses(
    (status = 204, description = "Deleted"),
    (status = 400, description = "The current password is wrong", body = ErrorBody),
    PasswordRefused,
))]
async fn delete_account(api: Api, JsonBody(form): JsonBody<CurrentPassword>) -> Result<Response, ApiError> {
    accounts::delete_account(&api.state, &api.user, &form).await?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    Ok(response)
}

/// The user's live sessions, newest first
#[utoipa::path(get, path = "/api/sessions", responses((status = 200, description = "The sessions", body = Vec<SessionItem>)))]
async fn list_sessions(api: Api) -> Result<Json<Vec<SessionItem>>, ApiError> {
    accounts::sessions(&api.state, api.user.id, session_hash(&api.via)).await.map(Json)
}

/// Sign out everywhere: every session of the user ends, this one included; with `revoke_api_tokens=true` every API token too
#[utoipa::path(delete, path = "/api/sessions", params(RevokeTokens), responses(
    (status = 200, description = "Every session ended; which API tokens still work", body = AccessEnded),
))]
async fn sign_out_everywhere(
    api: Api,
    Params(Query(revoke)): Params<Query<RevokeTokens>>,
) -> Result<Response, ApiError> {
    let ended = accounts::sign_out_everywhere(&api.state, api.user.id, revoke.revoke_api_tokens).await?;
    let mut response = Json(ended).into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    Ok(response)
}
