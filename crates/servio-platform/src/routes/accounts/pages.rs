//! The account pages: sign-in and sign-up on one page, their form posts, and sign-out.

use askama::Template;
use axum::Router;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use servio_store::User;

use super::service::{self, Attempt, SignIn, SignUp, create_session, expired_cookie};
use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::error::ApiError;
use crate::routes::pages::render;
use crate::throttle::ClientAddress;

/// The account pages.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/signin", get(sign_in_page).post(sign_in))
        .route("/signup", post(sign_up))
        .route("/signout", post(sign_out))
}

async fn home(user: Option<PageUser>) -> Redirect {
    match user {
        Some(_) => Redirect::to("/dashboard"),
        None => Redirect::to("/signin"),
    }
}

#[derive(Template)]
#[template(path = "signin.html")]
struct SignInPage {
    signed_in: Option<String>,
    csrf_token: String,
    error: Option<String>,
}

async fn sign_in_page() -> Response {
    render(&SignInPage { signed_in: None, csrf_token: String::new(), error: None })
}

/// The sign-in page again, saying why: `400` for what the user can correct, and the error's
/// own status (with `Retry-After`) for a cross-site post, a throttled attempt or a busy server.
fn sign_in_error(error: &ApiError) -> Response {
    error.log_if_internal();
    let mut response =
        render(&SignInPage { signed_in: None, csrf_token: String::new(), error: Some(error.to_string()) });
    *response.status_mut() = match error {
        ApiError::CrossSite | ApiError::TooManyRequests { .. } | ApiError::Busy | ApiError::Internal(_) => {
            error.status()
        }
        _ => StatusCode::BAD_REQUEST,
    };
    error.with_retry_after(response)
}

/// Redirects to `to` with a new session cookie.
fn with_session(cookie: HeaderValue, to: &str) -> Response {
    let mut response = Redirect::to(to).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    response
}

async fn sign_in(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let user = service::authenticate(&state, Attempt { address, headers: &headers }, &form).await;
    into_session(&state, user, &headers).await
}

/// After sign-in or sign-up: a new session and off to the vault, or the form again with why.
async fn into_session(state: &AppState, user: Result<User, ApiError>, headers: &HeaderMap) -> Response {
    let user = match user {
        Ok(user) => user,
        Err(error) => return sign_in_error(&error),
    };
    match create_session(state, &user, headers).await {
        Ok((cookie, _)) => with_session(cookie, "/vault"),
        Err(error) => error.into_response(),
    }
}

async fn sign_up(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(form): Form<SignUp>,
) -> Response {
    let user = service::register(&state, Attempt { address, headers: &headers }, &form).await;
    into_session(&state, user, &headers).await
}

/// A form with no field but its CSRF token.
#[derive(serde::Deserialize)]
pub(crate) struct NoFields {}

async fn sign_out(State(state): State<AppState>, posted: PageForm<NoFields>) -> Result<Response, ApiError> {
    state.store.delete_session(&posted.user.token_hash).await?;
    let mut response = Redirect::to("/signin").into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    Ok(response)
}
