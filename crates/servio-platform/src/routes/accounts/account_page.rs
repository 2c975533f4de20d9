//! The account page: time zone (a picker over the IANA zones), personal API tokens with their
//! last use and revocation, sessions with "sign out everywhere", password change and account
//! deletion (both with the current password). A wrong password shows the page again, saying so.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::session::expired_cookie;
use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::domain::accounts::{self, CurrentPassword, PasswordChange, SessionItem, TimeZone, TokenView};
use crate::error::ApiError;
use crate::params::{Id, Params};
use crate::shared::today::Today;
use crate::web::{Layout, NoFields, render, zones};

/// The account page and its forms.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account", get(account_page))
        .route("/account/tokens/{id}/revoke", post(revoke_token))
        // Time zone, password, sign out everywhere, delete.
        .route("/account/{action}", post(act))
}

struct TokenRow {
    id: i64,
    name: String,
    created: String,
    last_used: String,
    /// What it may do, for people: its scope, and its sites when limited.
    may: String,
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
    zone_error: Option<String>,
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
    PasswordAndTokens,
}

impl Done {
    fn message(self) -> &'static str {
        match self {
            Done::TimeZone => "Time zone saved: periods are now worked out in it.",
            Done::Revoked => "Token revoked: it no longer works.",
            Done::Password => {
                "Password changed. Every other session is signed out; the API tokens listed below still work: \
                 revoke any that may be in the wrong hands."
            }
            Done::PasswordAndTokens => {
                "Password changed. Every other session is signed out and every API token revoked: AI clients need a \
                 new token."
            }
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
    Zone(String),
    Password(String),
    Delete(String),
}

async fn account_view(state: &AppState, user: &PageUser, notice: Option<Done>, error: FormError) -> Response {
    match account_data(state, user, notice, error).await {
        Ok(page) => {
            let bad = page.zone_error.is_some() || page.password_error.is_some() || page.delete_error.is_some();
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
    let tokens = accounts::tokens(state, user.user.id).await?.tokens;
    let sessions = accounts::sessions(state, user.user.id, &user.token_hash).await?;
    let (zone_error, password_error, delete_error) = match error {
        FormError::None => (None, None, None),
        FormError::Zone(message) => (Some(message), None, None),
        FormError::Password(message) => (None, Some(message), None),
        FormError::Delete(message) => (None, None, Some(message)),
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
        zone_error,
        password_error,
        delete_error,
    })
}

fn token_row(token: TokenView, when: &impl Fn(i64) -> String) -> TokenRow {
    let may = token_may(&token);
    TokenRow {
        id: token.id,
        name: token.name,
        created: when(token.created_at),
        last_used: token.last_used_at.map_or_else(|| "never".to_owned(), when),
        may,
    }
}

/// What a token may do, as the account page says it.
fn token_may(token: &TokenView) -> String {
    let scope = match token.scope {
        accounts::TokenScope::Read => "read: the figures only",
        accounts::TokenScope::Ai => "ai: call your approved tools, read figures",
        accounts::TokenScope::Account => "account: everything you can do signed in",
    };
    match &token.sites {
        Some(sites) => format!("{scope} (sites {})", sites.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
        None => scope.to_owned(),
    }
}

async fn account_page(State(state): State<AppState>, user: PageUser, Query(query): Query<AccountQuery>) -> Response {
    account_view(&state, &user, query.done, FormError::None).await
}

fn done(what: &str) -> Response {
    Redirect::to(&format!("/account?done={what}")).into_response()
}

async fn revoke_token(
    State(state): State<AppState>,
    Id(id): Id,
    posted: PageForm<NoFields>,
) -> Result<Response, ApiError> {
    accounts::delete_token(&state, posted.user.user.id, id).await?;
    Ok(done("revoked"))
}

/// A form of the account page that acts on the account (`/account/{action}`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Action {
    /// Save the time zone (`time_zone`).
    TimeZone,
    /// Change the password (`current_password`, `new_password`).
    Password,
    /// End every session, this one too, and go to the sign-in page.
    SignOutEverywhere,
    /// Delete the account (`current_password`).
    Delete,
}

/// The fields of the account page's forms; each action reads its own.
#[derive(Deserialize)]
struct AccountForm {
    #[serde(default)]
    time_zone: String,
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
    /// The checkbox "also revoke my API tokens" (`on` when ticked).
    #[serde(default)]
    revoke_api_tokens: Option<String>,
}

async fn act(
    State(state): State<AppState>,
    Params(Path(action)): Params<Path<Action>>,
    posted: PageForm<AccountForm>,
) -> Response {
    let PageForm { user, form } = posted;
    let revoke_api_tokens = form.revoke_api_tokens.is_some();
    let AccountForm { time_zone, current_password, new_password, .. } = form;
    let (done_to, failed): (Result<Response, ApiError>, fn(String) -> FormError) = match action {
        Action::TimeZone => (
            accounts::set_time_zone(&state, user.user.id, TimeZone { time_zone }).await.map(|_| done("time_zone")),
            FormError::Zone,
        ),
        Action::Password => {
            let change = PasswordChange { current_password, new_password, revoke_api_tokens };
            let changed = accounts::change_password(&state, &user.user, &user.token_hash, &change).await;
            let what = if revoke_api_tokens { "password_and_tokens" } else { "password" };
            (changed.map(|_| done(what)), FormError::Password)
        }
        Action::SignOutEverywhere => {
            let ended = accounts::sign_out_everywhere(&state, user.user.id, revoke_api_tokens).await;
            (ended.map(|ended| signed_out(&signed_out_page(&ended))), |_| FormError::None)
        }
        Action::Delete => {
            let deleted = accounts::delete_account(&state, &user.user, &CurrentPassword { current_password }).await;
            (deleted.map(|()| signed_out("/signin?deleted=1")), FormError::Delete)
        }
    };
    match done_to {
        Ok(response) => response,
        // What the user can correct is said on the page, beside the form.
        Err(ApiError::BadRequest(message)) => account_view(&state, &user, None, failed(message)).await,
        Err(error) => error.into_response(),
    }
}

/// The sign-in page after "sign out everywhere", saying how many API tokens still work (their
/// names are not for a page without a session).
fn signed_out_page(ended: &accounts::AccessEnded) -> String {
    format!("/signin?signed_out=everywhere&tokens_kept={}", ended.api_tokens_kept.len())
}

/// A redirect to `to` that ends the session in the browser too.
fn signed_out(to: &str) -> Response {
    let mut response = Redirect::to(to).into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    response
}
