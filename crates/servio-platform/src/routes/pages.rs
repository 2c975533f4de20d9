//! What every web page shares. Pages are rendered on the server (askama, escaped by default)
//! and work without JavaScript; each feature's `pages` module renders its views.
//!
//! Forms carry the session's CSRF token in a hidden `csrf_token` field, checked by
//! [`crate::auth::PageForm`] before anything is read from the form.

use askama::Template;
use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::AppState;
use crate::auth::PageUser;
use crate::error::ApiError;

/// Every page route: method, path, and whether it needs a signed-in user. Tests walk this list.
pub const PAGES: &[(&str, &str, bool)] = &[
    ("GET", "/", false),
    ("GET", "/signin", false),
    ("POST", "/signin", false),
    ("POST", "/signup", false),
    ("POST", "/signout", true),
    ("GET", "/vault", true),
    ("POST", "/vault", true),
    ("GET", "/vault/{id}", true),
    ("POST", "/vault/{id}/approve", true),
    ("POST", "/vault/{id}/refresh", true),
    ("POST", "/vault/{id}/credential", true),
    ("GET", "/vault/{id}/connect", true),
    ("GET", "/oauth/callback", true),
    ("GET", "/directory", false),
    ("GET", "/dashboard", true),
    ("GET", "/ai", true),
    ("POST", "/ai/tokens", true),
    ("POST", "/ai/log_arguments", true),
    ("POST", "/directory/claims", true),
    ("POST", "/directory/claims/{id}/verify", true),
];

/// What the layout (`base.html`) shows of the visitor: who is signed in, and the CSRF token
/// its forms (sign-out, the page's own) carry. Empty for a visitor not signed in.
#[derive(Debug, Default)]
pub struct Layout {
    /// The signed-in user's email.
    pub signed_in: Option<String>,
    /// The session's CSRF token.
    pub csrf_token: String,
}

impl Layout {
    /// The layout for `user`, signed in or not.
    pub fn of(user: Option<&PageUser>) -> Layout {
        user.map_or_else(Layout::default, |user| Layout {
            signed_in: Some(user.user.email.clone()),
            csrf_token: user.csrf_token.clone(),
        })
    }
}

/// The content security policy of every page: nothing but this origin, no scripts at all
/// (the pages have none), inline styles (the base template's and a few `style` attributes),
/// and no framing, against clickjacking.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'none'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The headers of every page, set as layers on `pages` (the page routers merged): pages show
/// CSRF tokens, a user's data and tokens shown once, so none is cached (`no-store`); the
/// policy above; no MIME sniffing; and no page address sent to other sites.
pub fn with_page_headers(pages: Router<AppState>) -> Router<AppState> {
    let headers = [
        (header::CACHE_CONTROL, "no-store"),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    headers.into_iter().fold(pages, |pages, (name, value)| {
        pages.layer(SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value)))
    })
}

/// A rendered page; a template that fails to render is an internal error.
pub(crate) fn render(template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => Html(html).into_response(),
        Err(error) => ApiError::internal(error).into_response(),
    }
}

/// The time of a Unix timestamp as the pages show it (RFC 3339, UTC).
pub(crate) fn timestamp(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds).map(|t| t.to_string()).unwrap_or_default()
}
