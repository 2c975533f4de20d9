//! Accounts: sign-up, sign-in (a new session each time), sign-out, the caller's profile and
//! time zone, and personal API tokens (shown once, stored hashed). [`crate::domain::accounts`] does the work
//! and holds the typed views; [`api`](mod@api) and [`pages`](mod@pages) are its two faces.

pub mod account_page;
pub mod api;
pub mod pages;
pub mod session;

use axum::http::{HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::AppState;

/// The account routes of the API. Their answers carry sessions, CSRF tokens and API tokens, so
/// none is ever kept by a cache.
pub fn api() -> OpenApiRouter<AppState> {
    api::router().layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
}

/// The account pages: sign-in, sign-up, sign-out and the account page.
pub fn pages() -> axum::Router<AppState> {
    pages::router().merge(account_page::router())
}
