//! The demo site itself: its manifest, a forum and a shop, bearer authentication, and switches
//! that make any path misbehave for tests.
//!
//! Shop figures are a pure function of the date and the time zone asked for, so tests and the
//! demo can predict them: [`daily_figures`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How a path can be made to misbehave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Answer after this long.
    Slow(Duration),
    /// Answer `500 Internal Server Error`.
    ServerError,
    /// Answer a JSON body of this many bytes.
    HugeBody(usize),
    /// Answer the usual body as `text/plain`.
    WrongContentType,
    /// Answer an HTML page, as a single-page app does for every path.
    Html,
    /// Redirect to itself forever.
    RedirectLoop,
    /// Redirect to this URL with `307 Temporary Redirect` (a `POST` is re-posted there).
    RedirectTo(String),
    /// Answer `200` with this text as the body, as JSON (it need not be valid JSON).
    Body(String),
    /// Answer the shop's usual shape with this raw JSON text as every total.
    Totals(String),
    /// Answer `503 Service Unavailable` with this `Retry-After` value (seconds or an HTTP date).
    Unavailable(String),
    /// Answer this status with this text as the body (any bytes a site may send, NUL included).
    Status(u16, String),
    /// Answer `200` with these bytes as JSON, as they are: they need not be UTF-8, as a site
    /// that saved its manifest in a legacy encoding sends it (no text form: tests only).
    Bytes(Vec<u8>),
}

impl std::str::FromStr for Misbehaviour {
    type Err = String;

    /// `slow:MILLIS`, `500`, `huge:BYTES`, `wrong-type`, `html`, `redirect-loop`,
    /// `redirect:URL`, `body:TEXT`, `totals:RAW_JSON`, `503:RETRY_AFTER`, `status:CODE:TEXT`.
    fn from_str(text: &str) -> Result<Misbehaviour, String> {
        let number = |n: &str| n.parse::<u64>().map_err(|_| format!("{n:?} is not a number"));
        Ok(match text.split_once(':') {
            Some(("slow", ms)) => Misbehaviour::Slow(Duration::from_millis(number(ms)?)),
            Some(("huge", bytes)) => Misbehaviour::HugeBody(number(bytes)? as usize),
            None if text == "500" => Misbehaviour::ServerError,
            None if text == "wrong-type" => Misbehaviour::WrongContentType,
            None if text == "html" => Misbehaviour::Html,
            None if text == "redirect-loop" => Misbehaviour::RedirectLoop,
            Some(("redirect", url)) => Misbehaviour::RedirectTo(url.to_owned()),
            Some(("body", raw)) => Misbehaviour::Body(raw.to_owned()),
            Some(("totals", raw)) => Misbehaviour::Totals(raw.to_owned()),
            Some(("503", retry_after)) => Misbehaviour::Unavailable(retry_after.to_owned()),
            Some(("status", rest)) => {
                let (code, body) = rest.split_once(':').unwrap_or((rest, ""));
                Misbehaviour::Status(number(code)? as u16, body.to_owned())
            }
            _ => {
                return Err(format!(
                    "unknown misbehaviour {text:?}: expected slow:MS, 500, 503:RETRY_AFTER, huge:BYTES, wrong-type, html, \
                     redirect-loop, redirect:URL, body:TEXT, totals:RAW_JSON or status:CODE:TEXT"
                ));
            }
        })
    }
}

/// Settings of the demo site.
#[derive(Debug, Clone)]
pub struct SiteConfig {
    /// The origin clients reach it at, such as `https://localhost:8443`.
    pub origin: String,
    /// The bearer token tool calls must carry (bearer mode).
    pub token: String,
    /// Bearer tokens, or an OAuth 2.0 authorization server issuing them.
    pub auth: DemoAuth,
}

impl SiteConfig {
    /// Settings with bearer authentication by `token`.
    pub fn bearer(origin: &str, token: &str) -> SiteConfig {
        SiteConfig { origin: origin.to_owned(), token: token.to_owned(), auth: DemoAuth::Bearer }
    }
}

/// How tool calls are authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemoAuth {
    /// One fixed bearer token, [`SiteConfig::token`].
    Bearer,
    /// Tokens from this site's own OAuth 2.0 server (`/oauth/authorize`, `/oauth/token`),
    /// authorization code with PKCE `S256`; access tokens live this long.
    OAuth2 {
        /// Lifetime of access tokens.
        access_ttl: Duration,
    },
}

/// The shared state: forum posts and the misbehaviour switches.
#[derive(Clone)]
pub struct Site {
    config: Arc<SiteConfig>,
    forum: crate::forum::Forum,
    switches: Arc<Mutex<HashMap<String, Misbehaviour>>>,
    pub(crate) oauth: Arc<Mutex<crate::oauth::Grants>>,
    descriptions: Arc<Mutex<HashMap<String, String>>>,
    verification: Arc<Mutex<Option<String>>>,
    verification_file: Arc<Mutex<Option<std::path::PathBuf>>>,
    revenue_unit: Arc<Mutex<Option<String>>>,
    endpoints: Arc<Mutex<Endpoints>>,
    /// The request log, while recording (off by default: benchmarks drive this site hard).
    seen: Arc<Mutex<Option<VecDeque<SeenRequest>>>>,
    /// An edit of the served manifest, applied last (tests: tools added or removed, scopes).
    edit: Arc<Mutex<Option<ManifestEdit>>>,
    /// How many requests for the manifest were answered `304 Not Modified`.
    not_modified: Arc<AtomicU64>,
    /// Tool calls being answered now, and the most at once since [`Site::reset_calls_at_once`].
    calls: Arc<CallsAtOnce>,
}

/// How many tool calls a site answers at once: now, and the most so far (its high-water mark),
/// so that a test can show that a platform never had more calls in flight than it may.
#[derive(Debug, Default)]
struct CallsAtOnce {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// One tool call being answered, counted in [`CallsAtOnce`] until it is dropped (answered, or
/// its connection gone).
struct Answering(Arc<CallsAtOnce>);

impl Answering {
    fn start(calls: &Arc<CallsAtOnce>) -> Answering {
        let now = calls.now.fetch_add(1, Ordering::SeqCst) + 1;
        calls.most.fetch_max(now, Ordering::SeqCst);
        Answering(calls.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An edit a test makes to the manifest this site serves, as a site owner editing it would.
pub type ManifestEdit = Arc<dyn Fn(&mut Value) + Send + Sync>;

/// Endpoints the manifest names instead of this site's own, as a site taken over would.
#[derive(Debug, Clone, Default)]
struct Endpoints {
    server_url: Option<String>,
    token_url: Option<String>,
}

/// A request this site received, as its log keeps it: for tests that must show what reached
/// a site (and with which credential), or that nothing did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    /// The method.
    pub method: String,
    /// The path.
    pub path: String,
    /// The `Authorization` header, when there was one.
    pub authorization: Option<String>,
    /// The body as it arrived, byte for byte, up to [`SEEN_BODY_LIMIT`] bytes (a longer body
    /// is cut there), so that a test can see exactly what a tool received.
    pub body: Vec<u8>,
}

/// The most bytes of a request's body the request log keeps: 16 KiB, far above any tool call
/// a test makes; the request itself is served whole.
pub const SEEN_BODY_LIMIT: usize = 16 * 1024;

/// The most requests the request log keeps: 10,000, the oldest dropped first, so that a site
/// left recording holds at most 160 MiB of bodies.
pub const SEEN_REQUESTS_LIMIT: usize = 10_000;

impl Site {
    /// A site with the seed forum threads, its forum in the SQLite file `forum_db` or in
    /// memory.
    pub async fn new(config: SiteConfig, forum_db: Option<&std::path::Path>) -> Result<Site, sqlx::Error> {
        Ok(Site {
            config: Arc::new(config),
            forum: crate::forum::Forum::open(forum_db).await?,
            switches: Arc::default(),
            oauth: Arc::default(),
            descriptions: Arc::default(),
            verification: Arc::default(),
            verification_file: Arc::default(),
            revenue_unit: Arc::default(),
            endpoints: Arc::default(),
            seen: Arc::default(),
            edit: Arc::default(),
            not_modified: Arc::default(),
            calls: Arc::default(),
        })
    }

    /// Revokes every OAuth access token before it expires, as a site does when it rotates its
    /// keys; refresh tokens keep working. For tests of a refused, unexpired token.
    pub fn revoke_access_tokens(&self) {
        crate::oauth::revoke_access_tokens(&mut self.oauth.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Makes `path` misbehave, or behave again with `None`.
    pub fn set_misbehaviour(&self, path: &str, how: Option<Misbehaviour>) {
        let mut switches = self.switches.lock().unwrap_or_else(|e| e.into_inner());
        match how {
            Some(how) => switches.insert(path.to_owned(), how),
            None => switches.remove(path),
        };
    }

    /// Changes the description of `tool` in the manifest served from now on (as a site owner
    /// editing their manifest would; tests use it to see refresh and approval at work).
    pub fn set_tool_description(&self, tool: &str, description: &str) {
        self.descriptions.lock().unwrap_or_else(|e| e.into_inner()).insert(tool.to_owned(), description.to_owned());
    }

    /// Declares the revenue metric in `unit` instead of `USD` in the manifest served from now on
    /// (`None` goes back to `USD`), so tests can put sites whose units disagree in one vault.
    /// A switch rather than a [`SiteConfig`] field, like the other manifest edits here, so that
    /// every existing `SiteConfig { .. }` keeps compiling and the default stays `USD`.
    pub fn set_revenue_unit(&self, unit: Option<&str>) {
        *self.revenue_unit.lock().unwrap_or_else(|e| e.into_inner()) = unit.map(str::to_owned);
    }

    /// Names `server_url` as the manifest's `server.url` from now on (`None`: this site's own),
    /// as a site whose manifest was changed to send its users' calls elsewhere.
    pub fn set_server_url(&self, server_url: Option<&str>) {
        self.endpoints.lock().unwrap_or_else(|e| e.into_inner()).server_url = server_url.map(str::to_owned);
    }

    /// Names `token_url` as the manifest's OAuth `token_url` from now on (`None`: this site's
    /// own), so refresh tokens would be posted there.
    pub fn set_token_url(&self, token_url: Option<&str>) {
        self.endpoints.lock().unwrap_or_else(|e| e.into_inner()).token_url = token_url.map(str::to_owned);
    }

    /// Applies `edit` to the manifest served from now on, after every other switch (`None`: no
    /// edit), as a site owner changing their manifest would: tools added, removed or reworded,
    /// scopes widened.
    pub fn edit_manifest(&self, edit: Option<ManifestEdit>) {
        *self.edit.lock().unwrap_or_else(|e| e.into_inner()) = edit;
    }

    /// Starts keeping a log of every request received, empty from now on (again empty when
    /// called again), with each body's first [`SEEN_BODY_LIMIT`] bytes, the last
    /// [`SEEN_REQUESTS_LIMIT`] requests.
    pub fn record_requests(&self) {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(VecDeque::new());
    }

    /// Every request received since [`Site::record_requests`], oldest first.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).iter().flatten().cloned().collect()
    }

    /// The most tool calls this site has answered at once since it started or since
    /// [`Site::reset_calls_at_once`] (a slow answer counts for as long as it takes).
    pub fn most_calls_at_once(&self) -> usize {
        self.calls.most.load(Ordering::SeqCst)
    }

    /// Starts counting [`Site::most_calls_at_once`] again from the calls being answered now.
    pub fn reset_calls_at_once(&self) {
        self.calls.most.store(self.calls.now.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    /// Sets (or removes) the Directory `verification` token the manifest lists.
    pub fn set_verification(&self, token: Option<&str>) {
        *self.verification.lock().unwrap_or_else(|e| e.into_inner()) = token.map(str::to_owned);
    }

    /// Lists as `verification` whatever the file at `path` holds, read on every request (so a
    /// person running the demo can paste the Directory's token into it), until it is removed.
    pub fn watch_verification_file(&self, path: std::path::PathBuf) {
        *self.verification_file.lock().unwrap_or_else(|e| e.into_inner()) = Some(path);
    }

    /// The `ETag` the manifest is served with now: a strong validator of its bytes.
    pub fn manifest_etag(&self) -> String {
        etag_of(&self.manifest().to_string())
    }

    /// How many requests for the manifest were answered `304 Not Modified` so far, because
    /// their `If-None-Match` named the `ETag` it is served with.
    pub fn manifest_not_modified(&self) -> u64 {
        self.not_modified.load(Ordering::Relaxed)
    }

    /// The manifest this site serves.
    pub fn manifest(&self) -> Value {
        let mut manifest = manifest(&self.config.origin);
        let from_file = self
            .verification_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| text.trim().to_owned())
            .filter(|text| !text.is_empty());
        let set = self.verification.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(token) = set.or(from_file) {
            manifest["verification"] = Value::String(token);
        }
        if let Some(unit) = self.revenue_unit.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            for metric in manifest["brief"]["metrics"].as_array_mut().into_iter().flatten() {
                if metric["key"] == "sales.revenue.daily" {
                    metric["unit"] = Value::String(unit.clone());
                }
            }
        }
        let descriptions = self.descriptions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tools) = manifest["tools"].as_array_mut() {
            for tool in tools {
                if let Some(text) = tool["name"].as_str().and_then(|name| descriptions.get(name)) {
                    tool["description"] = Value::String(text.clone());
                }
            }
        }
        let endpoints = self.endpoints.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(url) = endpoints.server_url {
            manifest["server"]["url"] = Value::String(url);
        }
        if let DemoAuth::OAuth2 { .. } = self.config.auth {
            let origin = &self.config.origin;
            manifest["auth"] = json!({
                "type": "oauth2",
                "authorization_url": format!("{origin}/oauth/authorize"),
                "token_url": endpoints.token_url.unwrap_or_else(|| format!("{origin}/oauth/token")),
                "scopes": ["read", "write"],
            });
        }
        if let Some(edit) = self.edit.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            edit(&mut manifest);
        }
        manifest
    }

    /// The settings.
    pub fn config(&self) -> &SiteConfig {
        &self.config
    }

    /// The router: the manifest, the tools under `/api/servio/tools/`, and a home page.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(home))
            .route("/.well-known/servio.json", get(serve_manifest))
            .route("/api/servio/tools/{name}", post(call_tool))
            .route("/oauth/authorize", get(crate::oauth::consent).post(crate::oauth::approve))
            .route("/oauth/token", post(crate::oauth::token))
            .layer(middleware::from_fn_with_state(self.clone(), misbehave))
            .with_state(self.clone())
    }
}

async fn home() -> Html<&'static str> {
    Html(
        "<!doctype html><title>Servio demo site</title><h1>Servio demo site</h1><p>Manifest: <a href=\"/.well-known/servio.json\">/.well-known/servio.json</a></p>",
    )
}

/// The manifest with a strong `ETag` of its bytes, or `304 Not Modified` to a request whose
/// `If-None-Match` names that tag, as an ordinary web server answers a conditional request.
async fn serve_manifest(State(site): State<Site>, headers: HeaderMap) -> Response {
    let text = site.manifest().to_string();
    let etag = etag_of(&text);
    if names_etag(&headers, &etag) {
        site.not_modified.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    ([(header::CONTENT_TYPE, "application/json"), (header::ETAG, etag.as_str())], text).into_response()
}

/// A strong entity tag for `text`: the first 16 hex digits of its SHA-256, quoted.
fn etag_of(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest[..8].iter().map(|byte| format!("{byte:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether the request's `If-None-Match` names `etag`: any of its list, weak or strong (the
/// comparison RFC 9110 §13.1.2 asks of it), or `*`.
fn names_etag(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag)
}

async fn misbehave(State(site): State<Site>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    // Counted around everything, a slow switch's wait included, as the caller sees the call.
    let _answering = path.starts_with("/api/servio/tools/").then(|| Answering::start(&site.calls));
    let request = match log_request(&site, request).await {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let how = site.switches.lock().unwrap_or_else(|e| e.into_inner()).get(&path).cloned();
    match how {
        None => next.run(request).await,
        Some(Misbehaviour::Slow(delay)) => {
            tokio::time::sleep(delay).await;
            next.run(request).await
        }
        Some(Misbehaviour::ServerError) => {
            (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": "made to fail"}))).into_response()
        }
        Some(Misbehaviour::Unavailable(retry_after)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, retry_after)],
            Json(json!({"error": "busy, try again later"})),
        )
            .into_response(),
        Some(Misbehaviour::HugeBody(size)) => {
            ([(header::CONTENT_TYPE, "application/json")], format!("\"{}\"", "x".repeat(size.saturating_sub(2))))
                .into_response()
        }
        Some(Misbehaviour::WrongContentType) => {
            let response = next.run(request).await;
            let (mut parts, body) = response.into_parts();
            parts.headers.insert(header::CONTENT_TYPE, "text/plain".parse().expect("a valid header"));
            Response::from_parts(parts, body)
        }
        Some(Misbehaviour::Html) => Html("<!doctype html><div id=app></div>").into_response(),
        Some(Misbehaviour::RedirectLoop) => Redirect::temporary(&path).into_response(),
        Some(Misbehaviour::RedirectTo(url)) => Redirect::temporary(&url).into_response(),
        Some(Misbehaviour::Body(text)) => ([(header::CONTENT_TYPE, "application/json")], text).into_response(),
        Some(Misbehaviour::Bytes(bytes)) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Some(Misbehaviour::Status(code, text)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, [(header::CONTENT_TYPE, "text/plain")], text).into_response()
        }
        Some(Misbehaviour::Totals(raw)) => {
            let body = format!(
                r#"{{"data": {{"totals": {{"revenue": {raw}, "orders": {raw}, "refunds": 0}}, "currency": "USD"}}}}"#
            );
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
    }
}

/// Adds `request` to the request log while it records, and hands it on with its body whole.
/// Nothing is read while the log is off.
async fn log_request(site: &Site, request: Request) -> Result<Request, Box<Response>> {
    if site.seen.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    // The limit of axum's body extractor, which the tools read their arguments with: 2 MiB.
    let bytes = axum::body::to_bytes(body, 2 * 1024 * 1024)
        .await
        .map_err(|e| Box::new(error(StatusCode::PAYLOAD_TOO_LARGE, format!("the body could not be read: {e}"))))?;
    let authorization = parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let seen = SeenRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        authorization,
        body: bytes[..bytes.len().min(SEEN_BODY_LIMIT)].to_vec(),
    };
    if let Some(log) = site.seen.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        if log.len() == SEEN_REQUESTS_LIMIT {
            log.pop_front();
        }
        log.push_back(seen);
    }
    Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

async fn call_tool(
    State(site): State<Site>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let presented =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let allowed = match (&site.config.auth, presented) {
        (_, None) => false,
        (DemoAuth::Bearer, Some(token)) => token == site.config.token,
        (DemoAuth::OAuth2 { .. }, Some(token)) => crate::oauth::is_valid_access_token(&site, token),
    };
    if !allowed {
        return error(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    }
    let args: Value = match serde_json::from_slice(&body) {
        Ok(Value::Object(args)) => Value::Object(args),
        _ => {
            return error(StatusCode::BAD_REQUEST, "the body must be a JSON object of arguments");
        }
    };
    let result = match name.as_str() {
        "shop.getSalesSummary" => sales_summary(&args),
        "forum.searchThreads" => search_threads(&site, &args).await,
        "forum.getThread" => get_thread(&site, &args).await,
        "forum.createPost" => create_post(&site, &args).await,
        other => return error(StatusCode::NOT_FOUND, format!("no tool named {other}")),
    };
    match result {
        Ok(value) => Json(value).into_response(),
        Err(message) => error(StatusCode::BAD_REQUEST, message),
    }
}

/// Revenue in cents and the order count for one local date in one zone: deterministic, so
/// that tests can predict what collection stores.
pub fn daily_figures(date: &str, timezone: &str) -> (u64, u64) {
    // FNV-1a: small, stable across platforms and versions.
    let hash = format!("{date}|{timezone}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let orders = 20 + hash % 60;
    let cents = orders * (2_500 + (hash >> 16) % 4_000);
    (cents, orders)
}

/// `1234567` cents as `$12,345.67`.
pub fn dollars(cents: u64) -> String {
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("${grouped}.{:02}", cents % 100)
}

fn sales_summary(args: &Value) -> Result<Value, String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let from = text("from").ok_or("`from` (YYYY-MM-DD) is required")?;
    let to = text("to").ok_or("`to` (YYYY-MM-DD) is required")?;
    let timezone = text("timezone").unwrap_or("UTC");
    let first: jiff::civil::Date = from.parse().map_err(|e| format!("`from` {from:?}: {e}"))?;
    let last: jiff::civil::Date = to.parse().map_err(|e| format!("`to` {to:?}: {e}"))?;
    if last < first || (last - first).get_days() > 366 {
        return Err("`to` must be on or after `from`, at most a year later".into());
    }
    let (mut cents, mut orders) = (0, 0);
    let mut day = first;
    while day <= last {
        let (c, o) = daily_figures(&day.to_string(), timezone);
        cents += c;
        orders += o;
        day = day.tomorrow().map_err(|e| e.to_string())?;
    }
    Ok(json!({
        "data": {
            "period": { "from": from, "to": to, "timezone": timezone },
            "totals": { "revenue": dollars(cents), "orders": orders, "refunds": 0 },
            "currency": "USD",
        }
    }))
}

async fn search_threads(site: &Site, args: &Value) -> Result<Value, String> {
    let query = args.get("query").and_then(Value::as_str).unwrap_or_default();
    let category = args.get("category").and_then(Value::as_str);
    let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(10).clamp(1, 50);
    site.forum.search(query, category, limit).await.map_err(|e| format!("the forum failed: {e}"))
}

async fn get_thread(site: &Site, args: &Value) -> Result<Value, String> {
    let id = args.get("thread_id").and_then(Value::as_i64).ok_or("`thread_id` (integer) is required")?;
    site.forum.thread(id).await.map_err(|e| format!("the forum failed: {e}"))?.ok_or(format!("no thread {id}"))
}

async fn create_post(site: &Site, args: &Value) -> Result<Value, String> {
    let id = args.get("thread_id").and_then(Value::as_i64).ok_or("`thread_id` (integer) is required")?;
    let content =
        args.get("content").and_then(Value::as_str).filter(|c| !c.trim().is_empty()).ok_or("`content` is required")?;
    let number = site.forum.reply(id, content).await.map_err(|e| format!("the forum failed: {e}"))?;
    let number = number.ok_or(format!("no thread {id}"))?;
    Ok(json!({ "thread_id": id, "post_number": number }))
}

/// The manifest the demo site publishes (`manifest.json`), its server URL under `origin`.
fn manifest(origin: &str) -> Value {
    let mut manifest: Value = serde_json::from_str(include_str!("manifest.json")).expect("manifest.json is JSON");
    manifest["server"]["url"] = json!(format!("{origin}/api/servio"));
    manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_are_grouped() {
        assert_eq!(dollars(234_000), "$2,340.00");
        assert_eq!(dollars(5), "$0.05");
        assert_eq!(dollars(123_456_789), "$1,234,567.89");
    }

    #[test]
    fn figures_depend_on_date_and_zone_only() {
        assert_eq!(daily_figures("2026-08-20", "UTC"), daily_figures("2026-08-20", "UTC"));
        assert_ne!(daily_figures("2026-08-20", "UTC"), daily_figures("2026-08-20", "Pacific/Auckland"));
    }

    #[test]
    fn if_none_match_names_the_tag_in_a_list_weakly_or_with_a_star() {
        let etag = etag_of("{}");
        let asked = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::IF_NONE_MATCH, value.parse().unwrap());
            names_etag(&headers, &etag)
        };
        assert!(asked(&etag));
        assert!(asked(&format!("\"other\", W/{etag}")));
        assert!(asked("*"));
        assert!(!asked("\"other\""));
        assert!(!names_etag(&HeaderMap::new(), &etag), "no header, no match");
        assert_eq!(etag.len(), 18, "16 hex digits, quoted: {etag}");
    }

    #[test]
    fn the_manifest_is_valid_with_a_valid_brief() {
        let text = manifest("https://localhost:8443").to_string();
        let report = servio_manifest::check(text.as_bytes(), &servio_manifest::CheckOptions::default());
        assert!(report.is_valid(), "{:?}", report.errors);
        assert_eq!(report.brief_status, servio_manifest::BriefStatus::Valid);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }
}
