//! The account page: time zone (a picker over the IANA zones), personal API tokens with their
//! last use and revocation, sessions with "sign out everywhere", password change and account
//! deletion (both with the current password). A wrong password shows the page again, saying so.

use std::sync::OnceLock;

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::pages::NoFields;
use super::service::{self, CurrentPassword, PasswordChange, SessionItem, TimeZone, TokenView, expired_cookie};
use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::error::ApiError;
use crate::routes::dashboard::pages::Today;
use crate::routes::pages::{Layout, render};

/// The account page and its forms.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account", get(account_page))
        .route("/account/time_zone", post(set_time_zone))
        .route("/account/tokens/{id}/revoke", post(revoke_token))
        .route("/account/password", post(change_password))
        .route("/account/sessions/end", post(sign_out_everywhere))
        .route("/account/delete", post(delete_account))
}

/// Every IANA zone the platform knows, sorted, read once.
pub(crate) fn zones() -> &'static [String] {
    static ZONES: OnceLock<Vec<String>> = OnceLock::new();
    ZONES.get_or_init(|| {
        let mut zones: Vec<String> = jiff::tz::db().available().map(|name| name.as_str().to_owned()).collect();
        zones.sort();
        zones.dedup();
        zones
    })
}

struct TokenRow {
    id: i64,
    name: String,
    created: String,
    last_used: String,
}

struct SessionRow {
    started: String,
    last_used: String,
    current: bool,
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    layout: Layout,
    email: String,
    time_zone: String,
    zones: &'static [String],
    /// The user's zone when the list lacks it (an alias stored before): offered first, so that
    /// saving the form never changes it unasked.
    other_zone: Option<String>,
    tokens: Vec<TokenRow>,
    sessions: Vec<SessionRow>,
    notice: Option<&'static str>,
    password_error: Option<String>,
    delete_error: Option<String>,
}

/// What the account page says of the action just done (`?done=`), a fixed message each.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Done {
    TimeZone,
    Revoked,
    Password,
}

impl Done {
    fn message(self) -> &'static str {
        match self {
            Done::TimeZone => "Time zone saved: periods are now worked out in it.",
            Done::Revoked => "Token revoked: it no longer works.",
            Done::Password => "Password changed. Every other session is signed out.",
        }
    }
}

#[derive(Deserialize)]
struct AccountQuery {
    done: Option<Done>,
}

/// Which form of the page went wrong, and why.
enum FormError {
    None,
    Password(String),
    Delete(String),
}

async fn account_view(state: &AppState, user: &PageUser, notice: Option<Done>, error: FormError) -> Response {
    match account_data(state, user, notice, error).await {
        Ok(page) => {
            let bad = page.password_error.is_some() || page.delete_error.is_some();
            let mut response = render(&page);
            if bad {
                *response.status_mut() = StatusCode::BAD_REQUEST;
            }
            response
        }
        Err(error) => error.into_response(),
    }
}

async fn account_data(
    state: &AppState,
    user: &PageUser,
    notice: Option<Done>,
    error: FormError,
) -> Result<AccountPage, ApiError> {
    let today = Today::of(&user.user)?;
    let when = |seconds: i64| today.time(seconds);
    let tokens = service::tokens(state, user.user.id).await?.tokens;
    let sessions = service::sessions(state, user.user.id, &user.token_hash).await?;
    let (password_error, delete_error) = match error {
        FormError::None => (None, None),
        FormError::Password(message) => (Some(message), None),
        FormError::Delete(message) => (None, Some(message)),
    };
    Ok(AccountPage {
        layout: Layout::of(Some(user)),
        email: user.user.email.clone(),
        time_zone: user.user.time_zone.clone(),
        zones: zones(),
        other_zone: Some(user.user.time_zone.clone()).filter(|zone| !zones().contains(zone)),
        tokens: tokens.into_iter().map(|t: TokenView| token_row(t, &when)).collect(),
        sessions: sessions
            .into_iter()
            .map(|s: SessionItem| SessionRow {
                started: when(s.created_at),
                last_used: when(s.last_used_at),
                current: s.current,
            })
            .collect(),
        notice: notice.map(Done::message),
        password_error,
        delete_error,
    })
}

fn token_row(token: TokenView, when: &impl Fn(i64) -> String) -> TokenRow {
    TokenRow {
        id: token.id,
        name: token.name,
        created: when(token.created_at),
        last_used: token.last_used_at.map_or_else(|| "never".to_owned(), when),
    }
}

async fn account_page(State(state): State<AppState>, user: PageUser, Query(query): Query<AccountQuery>) -> Response {
    account_view(&state, &user, query.done, FormError::None).await
}

fn done(what: &str) -> Response {
    Redirect::to(&format!("/account?done={what}")).into_response()
}

async fn set_time_zone(State(state): State<AppState>, posted: PageForm<TimeZone>) -> Result<Response, ApiError> {
    service::set_time_zone(&state, posted.user.user.id, posted.form).await?;
    Ok(done("time_zone"))
}

async fn revoke_token(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    posted: PageForm<NoFields>,
) -> Result<Response, ApiError> {
    service::delete_token(&state, posted.user.user.id, id).await?;
    Ok(done("revoked"))
}

async fn change_password(State(state): State<AppState>, posted: PageForm<PasswordChange>) -> Response {
    let PageForm { user, form } = posted;
    match service::change_password(&state, &user.user, &user.token_hash, &form).await {
        Ok(()) => done("password"),
        Err(ApiError::BadRequest(message)) => account_view(&state, &user, None, FormError::Password(message)).await,
        Err(error) => error.into_response(),
    }
}

/// Ends every session, this one too, and goes to the sign-in page.
async fn sign_out_everywhere(State(state): State<AppState>, posted: PageForm<NoFields>) -> Result<Response, ApiError> {
    service::sign_out_everywhere(&state, posted.user.user.id).await?;
    Ok(signed_out("/signin"))
}

async fn delete_account(State(state): State<AppState>, posted: PageForm<CurrentPassword>) -> Response {
    let PageForm { user, form } = posted;
    match service::delete_account(&state, &user.user, &form).await {
        Ok(()) => signed_out("/signin?deleted=1"),
        Err(ApiError::BadRequest(message)) => account_view(&state, &user, None, FormError::Delete(message)).await,
        Err(error) => error.into_response(),
    }
}

/// A redirect to `to` that ends the session in the browser too.
fn signed_out(to: &str) -> Response {
    let mut response = Redirect::to(to).into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    response
}
