//! The account pages: sign-in and sign-up on one page, their form posts, and sign-out.

use askama::Template;
use axum::Router;
use axum::extract::{Form, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use servio_store::User;

use super::session::{Visitor, expired_cookie};
use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::domain::accounts::{SignIn, SignUp};
use crate::error::ApiError;
use crate::web::{Layout, NoFields, render};

/// The account pages.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/signin", get(sign_in_page).post(sign_in))
        .route("/signup", post(sign_up))
        .route("/signout", post(sign_out))
        .route("/assets/time-zone.js", get(crate::web::time_zone_js))
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
    layout: Layout,
    error: Option<String>,
    notice: Option<&'static str>,
    zones: &'static [String],
}

impl SignInPage {
    fn new(error: Option<String>, notice: Option<&'static str>) -> SignInPage {
        SignInPage { layout: Layout::of(None), error, notice, zones: crate::web::zones() }
    }
}

#[derive(serde::Deserialize)]
struct SignInQuery {
    deleted: Option<u8>,
    signed_out: Option<String>,
    tokens_kept: Option<u64>,
}

async fn sign_in_page(axum::extract::Query(query): axum::extract::Query<SignInQuery>) -> Response {
    let signed_out = query.signed_out.map(|_| match query.tokens_kept {
        Some(1..) => {
            "Signed out everywhere. Your API tokens still work, so AI clients using them keep their access: \
             sign in and revoke them on the account page if they may be in the wrong hands."
        }
        _ => "Signed out everywhere.",
    });
    let notice = query.deleted.map(|_| "Your account and everything in it are deleted.").or(signed_out);
    render(&SignInPage::new(None, notice))
}

/// The sign-in page again, saying why: `400` for what the user can correct, and the error's
/// own status (with `Retry-After`) for a cross-site post, a throttled attempt or a busy server.
fn sign_in_error(error: &ApiError) -> Response {
    error.log_if_internal();
    let mut response = render(&SignInPage::new(Some(error.to_string()), None));
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

async fn sign_in(visitor: Visitor, Form(form): Form<SignIn>) -> Response {
    let user = visitor.authenticate(&form).await;
    let device = user.as_ref().ok().map(|user| visitor.known_device_cookie(user));
    let mut response = into_session(&visitor, user).await;
    match device {
        Some(Ok(device)) if response.status().is_redirection() => {
            response.headers_mut().append(header::SET_COOKIE, device);
        }
        Some(Err(error)) => return error.into_response(),
        _ => {}
    }
    response
}

async fn sign_up(visitor: Visitor, Form(form): Form<SignUp>) -> Response {
    let user = visitor.register(&form).await;
    into_session(&visitor, user).await
}

/// After sign-in or sign-up: a new session and off to the vault, or the form again with why.
async fn into_session(visitor: &Visitor, user: Result<User, ApiError>) -> Response {
    let user = match user {
        Ok(user) => user,
        Err(error) => return sign_in_error(&error),
    };
    match visitor.start_session(&user).await {
        Ok((cookie, _)) => with_session(cookie, "/vault"),
        Err(error) => error.into_response(),
    }
}

async fn sign_out(State(state): State<AppState>, posted: PageForm<NoFields>) -> Result<Response, ApiError> {
    state.store.delete_session(&posted.user.token_hash).await?;
    let mut response = Redirect::to("/signin").into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    Ok(response)
}
