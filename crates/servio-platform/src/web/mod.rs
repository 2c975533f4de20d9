//! What every web page shares. Pages are rendered on the server (askama, escaped by default)
//! and work without JavaScript; each feature's `pages` module renders its views.
//!
//! Forms carry the session's CSRF token in a hidden `csrf_token` field, checked by
//! [`crate::auth::PageForm`] before anything is read from the form.

use std::sync::OnceLock;

use askama::Template;
use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::MethodRouter;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::AppState;
use crate::auth::PageUser;
use crate::error::ApiError;

pub mod cards;
pub mod chart;

/// Every page route: method, path, and whether it needs a signed-in user. Tests walk this list.
pub const PAGES: &[(&str, &str, bool)] = &[
    ("GET", "/", false),
    ("GET", "/signin", false),
    ("GET", "/assets/time-zone.js", false),
    ("POST", "/signin", false),
    ("POST", "/signup", false),
    ("POST", "/signout", true),
    ("GET", "/vault", true),
    ("POST", "/vault", true),
    ("GET", "/vault/{id}", true),
    ("POST", "/vault/{id}/approve", true),
    ("POST", "/vault/{id}/refresh", true),
    ("POST", "/vault/{id}/credential", true),
    ("POST", "/vault/{id}/connect", true),
    ("GET", "/oauth/callback", true),
    ("GET", "/directory", false),
    ("GET", "/dashboard", true),
    ("GET", "/dashboard/log", true),
    ("GET", "/account", true),
    ("POST", "/account/time_zone", true),
    ("POST", "/account/tokens/{id}/revoke", true),
    ("POST", "/account/password", true),
    ("POST", "/account/sign_out_everywhere", true),
    ("POST", "/account/delete", true),
    ("POST", "/vault/{id}/collect", true),
    ("POST", "/vault/{id}/remove", true),
    ("POST", "/vault/{id}/backfill", true),
    ("GET", "/check", true),
    ("POST", "/check", true),
    ("GET", "/ai", true),
    ("POST", "/ai/tokens", true),
    ("POST", "/ai/log_arguments", true),
    ("POST", "/directory/claims", true),
    ("POST", "/directory/claims/{id}/verify", true),
    ("POST", "/directory/claims/{id}/withdraw", true),
    ("GET", "/directory/claims/{id}/health", true),
];

/// What the layout (`base.html`) shows of the visitor: who is signed in, and the CSRF token
/// its forms (sign-out, the page's own) carry. Empty for a visitor not signed in.
#[derive(Debug)]
pub struct Layout {
    /// The signed-in user's email.
    pub signed_in: Option<String>,
    /// The session's CSRF token.
    pub csrf_token: String,
    /// Whether the page knows who is visiting (an error page may not): when not, the header
    /// offers neither sign-in nor sign-out.
    pub known: bool,
}

impl Layout {
    /// The layout for `user`, signed in or not.
    pub fn of(user: Option<&PageUser>) -> Layout {
        Layout {
            signed_in: user.map(|user| user.user.email.clone()),
            csrf_token: user.map(|user| user.csrf_token.clone()).unwrap_or_default(),
            known: true,
        }
    }

    /// The layout of a page that does not know who is visiting.
    pub fn unknown() -> Layout {
        Layout { signed_in: None, csrf_token: String::new(), known: false }
    }
}

/// The content security policy of every page: nothing but this origin, scripts only from its
/// own files (one: [`TIME_ZONE_JS`]; never inline), inline styles (the base template's and a
/// few `style` attributes), and no framing, against clickjacking.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
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

/// An error as a page: for browser routes, instead of the API's JSON.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    layout: Layout,
    status: u16,
    title: &'static str,
    message: String,
}

/// The largest error body read back to be shown on its page.
const ERROR_BODY_LIMIT: usize = 16 * 1024;

/// Turns an error a page route answered in JSON or plain text (an [`ApiError`], an extractor's
/// rejection) into an HTML page with the same status, message and headers (`Retry-After`).
pub async fn html_errors(response: Response) -> Response {
    let status = response.status();
    let kind = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let (json, text) = (kind.starts_with("application/json"), kind.starts_with("text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !(json || text) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, ERROR_BODY_LIMIT).await.unwrap_or_default();
    let message = if json {
        serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|body| body["error"].as_str().map(str::to_owned))
            .unwrap_or_default()
    } else {
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let page = error_page(status, message);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::CONTENT_TYPE);
    let (page_parts, page_body) = page.into_parts();
    parts.headers.extend(page_parts.headers);
    Response::from_parts(parts, page_body)
}

/// The page of an error `status` saying `message` (or what the status means).
pub fn error_page(status: StatusCode, message: String) -> Response {
    let title = match status.as_u16() {
        404 => "Not found",
        403 => "Not allowed",
        401 => "Sign in first",
        429 => "Too many requests",
        400 | 422 => "That did not work",
        code if code >= 500 => "Something went wrong on our side",
        _ => status.canonical_reason().unwrap_or("Error"),
    };
    let message = match (status.as_u16(), message.is_empty()) {
        (404, true) => "There is nothing at this address.".to_owned(),
        (code, true) if code >= 500 => "The error is logged. Try again in a moment.".to_owned(),
        _ => message,
    };
    let mut response = render(&ErrorPage { layout: Layout::unknown(), status: status.as_u16(), title, message });
    *response.status_mut() = status;
    response
}

/// What an address no route answers gets: the API's JSON under `/api/`, a page elsewhere.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    if uri.path().starts_with("/api/") {
        return ApiError::NotFound.into_response();
    }
    error_page(StatusCode::NOT_FOUND, String::new())
}

/// The one script of the pages: on sign-up, picks the browser's time zone.
pub const TIME_ZONE_JS: &str = include_str!("../../assets/time-zone.js");

/// `GET /assets/time-zone.js`.
pub async fn time_zone_js() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], TIME_ZONE_JS).into_response()
}

/// A router from a table of routes, one `(path, method router)` a line.
pub(crate) fn table<const N: usize>(routes: [(&'static str, MethodRouter<AppState>); N]) -> Router<AppState> {
    routes.into_iter().fold(Router::new(), |router, (path, method)| router.route(path, method))
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

/// A form with no field but its CSRF token.
#[derive(serde::Deserialize)]
pub(crate) struct NoFields {}

/// Every IANA zone the platform knows, sorted, read once.
pub(crate) fn zones() -> &'static [String] {
    static ZONES: OnceLock<Vec<String>> = OnceLock::new();
    ZONES.get_or_init(|| {
        // Only what a user may choose: the host's database also names files that are no zone.
        let names = jiff::tz::db().available().map(|name| name.as_str().to_owned());
        let mut zones: Vec<String> =
            names.filter(|name| crate::domain::accounts::secrets::check_time_zone(name).is_ok()).collect();
        zones.sort();
        zones.dedup();
        zones
    })
}
