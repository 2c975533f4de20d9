//! The web pages, rendered on the server (askama, escaped by default) and working without
//! JavaScript: sign-in and sign-up, the vault, a site's page, the Directory.
//!
//! Forms carry the session's CSRF token in a hidden `csrf_token` field; every form handler
//! checks it before changing anything. Pages share the API's logic; only the rendering is here.

use askama::Template;
use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;
use servio_store::User;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::accounts::{same_secret, token_hash};
use crate::auth::{SESSION_COOKIE, cookie};
use crate::error::ApiError;
use crate::routes::accounts::{Attempt, authenticate, create_session, expired_cookie, register};
use crate::routes::vault::{add_site, entry_json, versions_json};
use crate::throttle::ClientAddress;
use crate::{AppState, now};

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

/// The page routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/signin", get(sign_in_page).post(sign_in))
        .route("/signup", post(sign_up))
        .route("/signout", post(sign_out))
        .route("/vault", get(vault_page).post(add))
        .route("/vault/{id}", get(site_page))
        .route("/vault/{id}/approve", post(approve))
        .route("/vault/{id}/refresh", post(refresh))
        .route("/vault/{id}/credential", post(credential))
        .route("/vault/{id}/connect", get(connect))
        .route("/oauth/callback", get(oauth_callback))
        .route("/directory", get(directory))
        .route("/directory/claims", post(claim))
        .route("/directory/claims/{id}/verify", post(verify))
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

/// The signed-in user of a page request, with the session's CSRF token.
struct PageUser {
    user: User,
    csrf_token: String,
    token_hash: String,
}

async fn page_user(state: &AppState, headers: &HeaderMap) -> Result<Option<PageUser>, ApiError> {
    let (mut parts, ()) = axum::http::Request::new(()).into_parts();
    parts.headers = headers.clone();
    let Some(token) = cookie(&parts, SESSION_COOKIE) else { return Ok(None) };
    let hash = token_hash(token);
    let Some(session) = state.store.session(&hash, now()).await? else { return Ok(None) };
    let Some(user) = state.store.user(session.user_id).await? else { return Ok(None) };
    Ok(Some(PageUser { user, csrf_token: session.csrf_token, token_hash: hash }))
}

/// The signed-in user, or a redirect to the sign-in page.
async fn require(state: &AppState, headers: &HeaderMap) -> Result<PageUser, Response> {
    match page_user(state, headers).await {
        Ok(Some(user)) => Ok(user),
        Ok(None) => Err(Redirect::to("/signin").into_response()),
        Err(error) => Err(error.into_response()),
    }
}

/// The signed-in user and the session's CSRF token, or a redirect to the sign-in page.
pub(crate) async fn require_user(state: &AppState, headers: &HeaderMap) -> Result<(User, String), Response> {
    require(state, headers).await.map(|u| (u.user, u.csrf_token))
}

/// [`require_form`] for the other page modules: the user and the session's CSRF token.
pub(crate) async fn require_form_user(
    state: &AppState,
    headers: &HeaderMap,
    sent_csrf: &str,
) -> Result<(User, String), Response> {
    require_form(state, headers, sent_csrf).await.map(|u| (u.user, u.csrf_token))
}

/// The signed-in user of a form post whose CSRF field is the session's token; otherwise the
/// response to send (sign in first, or 403).
async fn require_form(state: &AppState, headers: &HeaderMap, sent_csrf: &str) -> Result<PageUser, Response> {
    let user = require(state, headers).await?;
    if !csrf_ok(&user, sent_csrf) {
        return Err(ApiError::Csrf.into_response());
    }
    Ok(user)
}

/// Whether a form's CSRF token is the session's.
fn csrf_ok(user: &PageUser, sent: &str) -> bool {
    same_secret(sent, &user.csrf_token)
}

fn render(template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => Html(html).into_response(),
        Err(error) => ApiError::Internal(format!("template: {error}")).into_response(),
    }
}

async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match page_user(&state, &headers).await {
        Ok(Some(_)) => Redirect::to("/dashboard").into_response(),
        _ => Redirect::to("/signin").into_response(),
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
    if let ApiError::Internal(detail) = error {
        eprintln!("servio: internal error: {detail}");
    }
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
fn with_session(cookie: axum::http::HeaderValue, to: &str) -> Response {
    let mut response = Redirect::to(to).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    response
}

#[derive(Deserialize)]
struct SignInForm {
    email: String,
    password: String,
}

async fn sign_in(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Response {
    let user = authenticate(&state, Attempt { address, headers: &headers }, &form.email, &form.password).await;
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

#[derive(Deserialize)]
struct SignUpForm {
    email: String,
    password: String,
    time_zone: String,
}

async fn sign_up(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(form): Form<SignUpForm>,
) -> Response {
    let attempt = Attempt { address, headers: &headers };
    let user = register(&state, attempt, &form.email, &form.password, &form.time_zone).await;
    into_session(&state, user, &headers).await
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf_token: String,
}

async fn sign_out(State(state): State<AppState>, headers: HeaderMap, Form(form): Form<CsrfForm>) -> Response {
    let user = match require_form(&state, &headers, &form.csrf_token).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    if let Err(error) = state.store.delete_session(&user.token_hash).await {
        return ApiError::from(error).into_response();
    }
    let mut response = Redirect::to("/signin").into_response();
    response.headers_mut().insert(header::SET_COOKIE, expired_cookie());
    response
}

struct SiteRow {
    id: i64,
    name: String,
    origin: String,
    tools: usize,
    stale: Option<String>,
}

#[derive(Template)]
#[template(path = "vault.html")]
struct VaultPage {
    signed_in: Option<String>,
    csrf_token: String,
    error: Option<String>,
    report: Option<Vec<String>>,
    sites: Vec<SiteRow>,
}

async fn vault_view(state: &AppState, user: &PageUser, error: Option<String>, report: Option<Vec<String>>) -> Response {
    let sites = match state.store.vault(user.user.id).await {
        Ok(sites) => sites,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let sites = sites
        .iter()
        .map(|site| {
            let report = servio_manifest::check(site.manifest.as_bytes(), &servio_manifest::CheckOptions::default());
            SiteRow {
                id: site.id,
                name: report.manifest.as_ref().map_or_else(|| site.origin.clone(), |m| m.name.clone()),
                origin: site.origin.clone(),
                tools: report.manifest.as_ref().map_or(0, |m| m.tools.len()),
                stale: site.stale_error.clone(),
            }
        })
        .collect();
    let page = VaultPage {
        signed_in: Some(user.user.email.clone()),
        csrf_token: user.csrf_token.clone(),
        error,
        report,
        sites,
    };
    render(&page)
}

async fn vault_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match require(&state, &headers).await {
        Ok(user) => vault_view(&state, &user, None, None).await,
        Err(response) => response,
    }
}

#[derive(Deserialize)]
struct AddForm {
    #[serde(default)]
    csrf_token: String,
    url: String,
    #[serde(default)]
    token: String,
}

/// Lines of a report JSON's errors, for people.
fn report_lines(report: &Value) -> Vec<String> {
    report["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    format!(
                        "{}:{} {} {} (at {})",
                        e["line"],
                        e["column"],
                        e["code"].as_str().unwrap_or_default(),
                        e["message"].as_str().unwrap_or_default(),
                        e["pointer"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn add(State(state): State<AppState>, headers: HeaderMap, Form(form): Form<AddForm>) -> Response {
    let user = match require_form(&state, &headers, &form.csrf_token).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    let token = Some(form.token.as_str()).filter(|t| !t.trim().is_empty());
    match add_site(&state, user.user.id, &form.url, token).await {
        Ok(site) => Redirect::to(&format!("/vault/{}", site["id"])).into_response(),
        Err(ApiError::Unprocessable(body)) => {
            let message = body["error"].as_str().unwrap_or("the site could not be added").to_owned();
            let report = body.get("report").map(report_lines);
            vault_view(&state, &user, Some(message), report).await
        }
        Err(error) => vault_view(&state, &user, Some(error.to_string()), None).await,
    }
}

struct ToolRow {
    name: String,
    prefixed: String,
    description: String,
    held_back: bool,
}

struct MetricRow {
    key: String,
    tool: String,
    granularity: String,
    unit: String,
}

struct VersionRow {
    id: i64,
    fetched: String,
    changes: String,
}

#[derive(Template)]
#[template(path = "site.html")]
struct SitePage {
    signed_in: Option<String>,
    csrf_token: String,
    id: i64,
    name: String,
    origin: String,
    manifest_url: String,
    version: String,
    stale: Option<String>,
    pending: Vec<String>,
    errors: Vec<String>,
    warnings: Vec<String>,
    tools: Vec<ToolRow>,
    brief_status: String,
    metrics: Vec<MetricRow>,
    has_credential: bool,
    oauth: bool,
    versions: Vec<VersionRow>,
}

fn text(value: &Value) -> String {
    value.as_str().map(str::to_owned).unwrap_or_default()
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().map(|a| a.iter().map(text).collect()).unwrap_or_default()
}

fn diagnostics(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .map(|d| {
                    format!(
                        "{} {} (line {}, at {})",
                        text(&d["code"]),
                        text(&d["message"]),
                        d["line"],
                        text(&d["pointer"])
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn site_page(State(state): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> Response {
    let user = match require(&state, &headers).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    let entry = match vault_entry(&state, &user, id).await {
        Ok(entry) => entry,
        Err(response) => return response,
    };
    let site = entry_json(&entry);
    let versions = versions_json(&state, user.user.id, id).await.unwrap_or_default();
    let report = &site["report"];
    let page = SitePage {
        signed_in: Some(user.user.email.clone()),
        csrf_token: user.csrf_token.clone(),
        id,
        name: text(&site["name"]),
        origin: text(&site["origin"]),
        manifest_url: text(&site["manifest_url"]),
        version: text(&site["version"]),
        stale: site["stale_error"].as_str().map(str::to_owned),
        pending: if site["pending"]["needs_approval"] == true {
            strings(&site["pending"]["changes"])
        } else {
            Vec::new()
        },
        errors: diagnostics(&report["errors"]),
        warnings: diagnostics(&report["warnings"]),
        tools: site["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| ToolRow {
                        name: text(&t["name"]),
                        prefixed: text(&t["prefixed_name"]),
                        description: text(&t["description"]),
                        held_back: t["held_back"] == true,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        brief_status: format!("Brief: {}", text(&report["brief"]["status"])),
        metrics: report["brief"]["metrics"]
            .as_array()
            .map(|metrics| {
                metrics
                    .iter()
                    .map(|m| MetricRow {
                        key: text(&m["key"]),
                        tool: text(&m["tool"]),
                        granularity: text(&m["granularity"]),
                        unit: text(&m["unit"]),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        has_credential: site["has_credential"] == true,
        oauth: site["auth"] == "oauth2",
        versions: versions["versions"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|v| VersionRow {
                        id: v["id"].as_i64().unwrap_or_default(),
                        fetched: jiff::Timestamp::from_second(v["fetched_at"].as_i64().unwrap_or_default())
                            .map(|t| t.to_string())
                            .unwrap_or_default(),
                        changes: strings(&v["changes"]).join("; "),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    render(&page)
}

/// The signed-in user's vault entry `id`; "not found" when it is not theirs.
async fn vault_entry(state: &AppState, user: &PageUser, id: i64) -> Result<servio_store::VaultEntry, Response> {
    match state.store.vault_entry(user.user.id, id).await {
        Ok(Some(entry)) => Ok(entry),
        Ok(None) => Err(ApiError::NotFound.into_response()),
        Err(error) => Err(ApiError::from(error).into_response()),
    }
}

/// Runs a site action for a form post, then goes back to the site's page.
async fn site_action(state: &AppState, headers: &HeaderMap, sent_csrf: &str, id: i64, action: Action<'_>) -> Response {
    let user = match require_form(state, headers, sent_csrf).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    let entry = match vault_entry(state, &user, id).await {
        Ok(entry) => entry,
        Err(response) => return response,
    };
    let done = match action {
        Action::Approve => {
            let approved = state.store.approve(user.user.id, id).await.map(|_| ()).map_err(ApiError::from);
            state.gateway.catalogue_changed(user.user.id);
            approved
        }
        Action::Refresh => crate::refresh::refresh_site(state, &entry.site).await.map(|_| ()).map_err(ApiError::from),
        Action::Credential(token) => crate::routes::vault::store_token(state, user.user.id, id, token).await,
    };
    match done {
        Ok(()) => Redirect::to(&format!("/vault/{id}")).into_response(),
        Err(error) => error.into_response(),
    }
}

enum Action<'a> {
    Approve,
    Refresh,
    Credential(&'a str),
}

async fn approve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CsrfForm>,
) -> Response {
    site_action(&state, &headers, &form.csrf_token, id, Action::Approve).await
}

async fn refresh(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CsrfForm>,
) -> Response {
    site_action(&state, &headers, &form.csrf_token, id, Action::Refresh).await
}

#[derive(Deserialize)]
struct CredentialForm {
    #[serde(default)]
    csrf_token: String,
    token: String,
}

async fn credential(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CredentialForm>,
) -> Response {
    site_action(&state, &headers, &form.csrf_token, id, Action::Credential(&form.token)).await
}

struct Hit {
    name: String,
    origin: String,
    description: String,
    tools: String,
}

struct ClaimRow {
    id: i64,
    origin: String,
    token: String,
}

#[derive(Template)]
#[template(path = "directory.html")]
struct DirectoryPage {
    signed_in: Option<String>,
    csrf_token: String,
    query: String,
    results: Vec<Hit>,
    claims: Vec<ClaimRow>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
}

async fn directory(State(state): State<AppState>, headers: HeaderMap, Query(query): Query<SearchQuery>) -> Response {
    let user = page_user(&state, &headers).await.ok().flatten();
    if let Err(refused) = crate::text::require_text("q", &query.q) {
        let mut page = directory_view(&state, user.as_ref(), String::new(), Some(refused.to_string())).await;
        *page.status_mut() = StatusCode::BAD_REQUEST;
        return page;
    }
    directory_view(&state, user.as_ref(), query.q, None).await
}

async fn directory_view(state: &AppState, user: Option<&PageUser>, query: String, message: Option<String>) -> Response {
    let found = match state.store.search(&query, 50).await {
        Ok(found) => found,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let results = found
        .iter()
        .map(|f| Hit {
            name: f.listing.name.clone(),
            origin: f.origin.clone(),
            description: f.listing.description.clone(),
            tools: f.listing.tools.lines().filter_map(|l| l.split(':').next()).collect::<Vec<_>>().join(", "),
        })
        .collect();
    let claims = match user {
        Some(user) => match state.store.claims(user.user.id).await {
            Ok(claims) => claims.into_iter().map(|c| ClaimRow { id: c.id, origin: c.origin, token: c.token }).collect(),
            Err(error) => return ApiError::from(error).into_response(),
        },
        None => Vec::new(),
    };
    let page = DirectoryPage {
        signed_in: user.map(|u| u.user.email.clone()),
        csrf_token: user.map(|u| u.csrf_token.clone()).unwrap_or_default(),
        query,
        results,
        claims,
        message,
    };
    render(&page)
}

#[derive(Deserialize)]
struct ClaimForm {
    #[serde(default)]
    csrf_token: String,
    url: String,
}

async fn claim(State(state): State<AppState>, headers: HeaderMap, Form(form): Form<ClaimForm>) -> Response {
    let user = match require_form(&state, &headers, &form.csrf_token).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    match crate::routes::directory::create_claim(&state, user.user.id, &form.url).await {
        Ok(_) => Redirect::to("/directory").into_response(),
        Err(error) => directory_view(&state, Some(&user), String::new(), Some(error.to_string())).await,
    }
}

async fn verify(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let user = match require_form(&state, &headers, &form.csrf_token).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    let message = match crate::routes::directory::verify_claim(&state, user.user.id, id).await {
        Ok(_) => "Verified: the site is listed.".to_owned(),
        Err(ApiError::NotFound) => return ApiError::NotFound.into_response(),
        Err(ApiError::Unprocessable(body)) => body["error"].as_str().unwrap_or("not verified").to_owned(),
        Err(error) => error.to_string(),
    };
    directory_view(&state, Some(&user), String::new(), Some(message)).await
}

/// Starts "Connect": a fresh PKCE attempt for this user and site, then off to the site.
async fn connect(State(state): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> Response {
    let user = match require(&state, &headers).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    let entry = match vault_entry(&state, &user, id).await {
        Ok(entry) => entry,
        Err(response) => return response,
    };
    // The approved manifest names the endpoints: a new `authorization_url` or `token_url`
    // waits for the user's approval like any other change of endpoint.
    let acting = crate::approval::acting_manifest(&entry);
    let report = servio_manifest::check(acting.as_bytes(), &servio_manifest::CheckOptions::default());
    let site =
        match report.manifest.as_ref().and_then(|m| crate::connect::oauth_site(&state.oauth, &entry.site.origin, m)) {
            Some(Ok(site)) => site,
            Some(Err(error)) => return ApiError::Internal(error.chain()).into_response(),
            None => {
                return ApiError::BadRequest("this site uses bearer tokens: paste one instead".into()).into_response();
            }
        };
    match crate::connect::begin(&state, user.user.id, id, site).await {
        Ok(to) => Redirect::to(to.as_str()).into_response(),
        Err(error) => ApiError::Internal(error).into_response(),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    #[serde(default)]
    state: String,
}

/// The end of "Connect": the attempt must be this user's; the tokens are sealed as the site's
/// credential.
async fn oauth_callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
    uri: axum::http::Uri,
) -> Response {
    let user = match require(&state, &headers).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    let attempt = match crate::connect::take(&state, user.user.id, &query.state).await {
        Ok(Some(attempt)) => attempt,
        Ok(None) => {
            return ApiError::BadRequest(
                "unknown, expired or used sign-in attempt: start again from the site's page".into(),
            )
            .into_response();
        }
        Err(error) => return ApiError::Internal(error).into_response(),
    };
    let callback = servio_client::oauth::Callback::from_query(uri.query().unwrap_or_default());
    let tokens = match servio_client::oauth::finish(&state.client, &attempt.site, attempt.pending, &callback).await {
        Ok(tokens) => tokens,
        Err(error) => return ApiError::BadRequest(error.to_string()).into_response(),
    };
    let credential = servio_collector::credentials::Credential::OAuth(tokens);
    let stored = state.credentials().set_credential(user.user.id, attempt.site_id, &credential).await;
    match stored {
        Ok(true) => Redirect::to(&format!("/vault/{}", attempt.site_id)).into_response(),
        Ok(false) => ApiError::NotFound.into_response(),
        Err(error) => ApiError::from(error).into_response(),
    }
}
