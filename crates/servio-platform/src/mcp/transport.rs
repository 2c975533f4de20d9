//! The rules of the streamable HTTP transport (MCP 2025-11-25) that the SDK leaves to us, as
//! layers around its service:
//!
//! - a request whose `Origin` is not the platform's own is refused with `403`, so a page on
//!   another site cannot drive a signed-in user's client (requests without `Origin`, from
//!   programs rather than browsers, pass);
//! - a session belongs to the user who opened it, for `POST`, `GET` and `DELETE` alike, on
//!   whichever process the request lands (the owner is kept in the store): another
//!   user's token gets the `404` of a session that does not exist, since what belongs to another
//!   user answers "not found";
//! - a body that is not a JSON-RPC message is a `400` (the SDK answers `415`, which is for a
//!   wrong content type), and the owner's `DELETE` answers `204` (the SDK's `202`, meant for
//!   accepted messages, reads as a failure to the official Python client).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use servio_store::{McpSessions, User};

/// The header that carries a session's id.
const SESSION_HEADER: &str = "mcp-session-id";

/// The most of the SDK's own error text that is read to explain a refused body.
const SDK_ERROR_LIMIT: usize = 64 * 1024;

/// The origins `/mcp` accepts in `Origin` (`scheme://host[:port]`, as browsers send them).
#[derive(Debug, Clone)]
pub(super) struct OwnOrigins {
    /// The public URL's origin; `None` when that URL does not parse, and then every `Origin`
    /// is foreign.
    public: Option<String>,
    /// Whether the public URL is on a loopback address: a platform on this machine only (a
    /// developer's, or one behind a local proxy) accepts pages of this machine on any port, as
    /// the MCP SDKs' DNS-rebinding protection does; a page elsewhere is still foreign.
    local: bool,
}

/// The origins of the platform at `public_url`.
pub(super) fn own_origins(public_url: &str) -> Arc<OwnOrigins> {
    let url = url::Url::parse(public_url).ok();
    let public = url.as_ref().map(url::Url::origin).filter(url::Origin::is_tuple).map(|o| o.ascii_serialization());
    let local = url.as_ref().and_then(url::Url::host).is_some_and(|host| is_loopback(&host));
    Arc::new(OwnOrigins { public, local })
}

fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(address) => address.is_loopback(),
        url::Host::Ipv6(address) => address.is_loopback(),
    }
}

/// Refuses a request that carries an `Origin` other than the platform's own with `403`, before
/// the token is even looked at.
pub(super) async fn refuse_foreign_origin(
    State(own): State<Arc<OwnOrigins>>,
    request: Request,
    next: Next,
) -> Response {
    match request.headers().get(header::ORIGIN) {
        Some(origin) if is_foreign(origin, &own) => {
            let body = json!({ "error": "requests to /mcp from a page on another origin are refused" });
            (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
        }
        _ => next.run(request).await,
    }
}

/// Whether `origin` is not the platform's own; an `Origin` that does not parse (`null`, from
/// sandboxed pages and some redirects, among them) is foreign.
fn is_foreign(origin: &HeaderValue, own: &OwnOrigins) -> bool {
    let Some(sent) = origin.to_str().ok().and_then(|origin| url::Url::parse(origin).ok()) else { return true };
    let serialized = sent.origin();
    if !serialized.is_tuple() {
        return true;
    }
    let local = own.local && sent.host().is_some_and(|host| is_loopback(&host));
    !local && own.public.as_deref() != Some(serialized.ascii_serialization().as_str())
}

/// Who opened each session, by session id: kept in the store, so that every process sharing
/// the database knows it, and here for the sessions this process has seen, with when each was
/// last used. Entries of sessions the SDK has ended here (idle timeout, `DELETE`) are dropped
/// when a session is opened, so the map stays as large as the live sessions.
///
/// A user's sessions are capped (`Quotas::mcp_sessions`): opening one more ends the least
/// recently used, here and in the store (each session holds a task, channels and its
/// `initialize` parameters; 5,000 of them were 709 MB). The store's last use is written a minute
/// apart at most, so that requests are not writes.
#[derive(Clone)]
pub(super) struct Owners {
    owners: Arc<Mutex<HashMap<String, Owner>>>,
    sessions: Arc<LocalSessionManager>,
    store: Arc<dyn McpSessions>,
    limit: usize,
}

/// Who opened a session, and when this process last saw it used.
#[derive(Debug, Clone, Copy)]
struct Owner {
    user_id: i64,
    /// The last request on it here (the clock only moves forward).
    used: std::time::Instant,
    /// When its last use was written to the store (seconds since the epoch).
    touched: i64,
}

/// How often (seconds) a session's last use is written to the store at most.
const TOUCH_EVERY: i64 = 60;

/// Milliseconds since the epoch: the store orders a user's sessions by their last use in
/// these, since hundreds may be opened within a second.
fn now_millis() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl Owners {
    /// Owners of the sessions kept by `sessions` and, for the others, by `store`; at most
    /// `limit` sessions per user.
    pub(super) fn new(sessions: Arc<LocalSessionManager>, store: Arc<dyn McpSessions>, limit: usize) -> Owners {
        Owners { owners: Arc::default(), sessions, store, limit: limit.max(1) }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Who opened `session`: known here, or else as the store says (`None` when the store
    /// fails too: the request is then answered as for an unknown session).
    async fn owner(&self, session: &str) -> Option<i64> {
        if let Some(owner) = self.owners().get(session) {
            return Some(owner.user_id);
        }
        match self.store.mcp_session(session).await {
            Ok(found) => found.and_then(|session| session.user_id),
            Err(error) => {
                tracing::error!(error = %servio_client::error_chain(&error), "reading an MCP session's owner failed");
                None
            }
        }
    }

    /// Records a request on `session` of `user_id`'s: its last use here, and in the store when
    /// the one there is a minute old.
    async fn used(&self, session: &str, user_id: i64) {
        let now = crate::now();
        let touch = {
            let mut owners = self.owners();
            let entry = owners.entry(session.to_owned()).or_insert(Owner {
                user_id,
                used: std::time::Instant::now(),
                touched: 0,
            });
            entry.used = std::time::Instant::now();
            let touch = now - entry.touched >= TOUCH_EVERY;
            if touch {
                entry.touched = now;
            }
            touch
        };
        if touch && let Err(error) = self.store.touch_mcp_session(session, now_millis()).await {
            tracing::warn!(error = %servio_client::error_chain(&error), "recording an MCP session's use failed");
        }
    }

    /// Records the owner of a session just opened, then ends the user's sessions beyond the
    /// limit, least recently used first: those this process holds (closed, and their rows
    /// deleted), then the rows of the others in the store (another process's, which that
    /// process still caps on its own). The store's order lags behind this process's (a use is
    /// written a minute apart), so a session held here is closed by this process's order only.
    async fn record(&self, session: String, user_id: i64) {
        let now = crate::now();
        let owner = servio_store::McpSession { user_id: Some(user_id), state: None };
        if let Err(error) = self.store.keep_mcp_session(&session, &owner, now).await {
            // The session still works on this process; another cannot take it over.
            tracing::error!(error = %servio_client::error_chain(&error), "keeping an MCP session's owner failed");
        }
        if let Err(error) = self.store.touch_mcp_session(&session, now_millis()).await {
            tracing::warn!(error = %servio_client::error_chain(&error), "recording an MCP session's use failed");
        }
        for id in self.beyond_limit_here(&session, user_id, now).await {
            self.end(&id).await;
        }
        let limit = i64::try_from(self.limit).unwrap_or(i64::MAX);
        if let Err(error) = self.store.trim_mcp_sessions(user_id, limit).await {
            tracing::warn!(error = %servio_client::error_chain(&error), "forgetting MCP sessions beyond the limit in the store failed");
        }
    }

    /// Adds `session` to the map (dropping entries of sessions that ended here) and returns the
    /// ids of `user_id`'s sessions here beyond the limit, least recently used first.
    async fn beyond_limit_here(&self, session: &str, user_id: i64, now: i64) -> Vec<String> {
        let live = self.sessions.sessions.read().await;
        let mut owners = self.owners();
        owners.retain(|id, _| live.contains_key(id.as_str()));
        drop(live);
        owners.insert(session.to_owned(), Owner { user_id, used: std::time::Instant::now(), touched: now });
        let mut mine: Vec<(std::time::Instant, &String)> =
            owners.iter().filter(|(_, owner)| owner.user_id == user_id).map(|(id, owner)| (owner.used, id)).collect();
        if mine.len() <= self.limit {
            return Vec::new();
        }
        mine.sort_unstable();
        let excess = mine.len() - self.limit;
        mine.into_iter().take(excess).map(|(_, id)| id.clone()).collect()
    }

    /// Ends `session` here (its worker, streams and handler go) and in the store.
    async fn end(&self, session: &str) {
        self.forget(session);
        let id: rmcp::transport::common::server_side_http::SessionId = session.into();
        if let Err(error) = self.sessions.close_session(&id).await {
            tracing::warn!(error = %servio_client::error_chain(&error), "ending an MCP session beyond the limit failed");
        }
        if let Err(error) = self.store.delete_mcp_session(session).await {
            tracing::warn!(error = %servio_client::error_chain(&error), "forgetting an MCP session beyond the limit failed");
        }
    }

    fn forget(&self, session: &str) {
        self.owners().remove(session);
    }
}

/// Lets a request on a session through only when it comes from the session's owner, records the
/// owner of a session being opened (ending the owner's least recently used beyond the limit),
/// and forgets a session once it has ended.
///
/// A session id this process did not hand out (or handed to another user) answers like a
/// session that does not exist, so no token learns whether another user's session is live.
pub(super) async fn keep_sessions_to_owners(State(owners): State<Owners>, request: Request, next: Next) -> Response {
    let Some(user_id) = request.extensions().get::<User>().map(|user| user.id) else {
        tracing::error!("an MCP request reached the session check without a user");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let session = session_id(request.headers());
    if let Some(session) = &session {
        if owners.owner(session).await != Some(user_id) {
            return session_not_found();
        }
        owners.used(session, user_id).await;
    }
    let method = request.method().clone();
    let request = match (&session, &method) {
        (None, &Method::POST) => match bounded_initialize(request).await {
            Ok(request) => request,
            Err(refused) => return refused,
        },
        _ => request,
    };
    let response = next.run(request).await;
    match session {
        None => {
            if let Some(opened) = session_id(response.headers()) {
                owners.record(opened, user_id).await;
            }
        }
        Some(session) => {
            let ended = method == Method::DELETE && response.status().is_success();
            if ended || response.status() == StatusCode::NOT_FOUND {
                owners.forget(&session);
            }
            if ended && let Err(error) = owners.store.delete_mcp_session(&session).await {
                tracing::warn!(error = %servio_client::error_chain(&error), "forgetting an ended MCP session failed");
            }
        }
    }
    response
}

/// The most bytes of an `initialize` request, whose parameters a session keeps (in memory and
/// in the store) for as long as it lives: with the sessions per user capped, this bounds what
/// one user's sessions hold.
pub(super) const INITIALIZE_MAX_BYTES: usize = 64 * 1024;

/// The most bytes of any MCP request: the SDK's own limit (4 MiB), which it applies again.
const MCP_MAX_BODY: usize = 4 * 1024 * 1024;

/// A request that may open a session (a `POST` without one), read whole within the body limit
/// of every request, and refused with `413` when it is an `initialize` over
/// [`INITIALIZE_MAX_BYTES`]; otherwise given back as it was.
async fn bounded_initialize(request: Request) -> Result<Request, Response> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MCP_MAX_BODY).await else {
        return Err(too_large(format!("the body is over {MCP_MAX_BODY} bytes, the most an MCP request may carry")));
    };
    let method = serde_json::from_slice::<Message>(&bytes).ok().and_then(|message| message.method);
    if method.as_deref() == Some("initialize") && bytes.len() > INITIALIZE_MAX_BYTES {
        return Err(too_large(format!(
            "the initialize request is {} bytes, over the {INITIALIZE_MAX_BYTES} a session may keep: send fewer \
             client capabilities or a shorter client description",
            bytes.len()
        )));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// A `413` with a JSON-RPC error saying why.
fn too_large(message: String) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32600, "message": message } });
    (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response()
}

fn session_id(headers: &HeaderMap) -> Option<String> {
    headers.get(SESSION_HEADER).and_then(|value| value.to_str().ok()).map(str::to_owned)
}

/// The SDK's answer for a session it does not know, word for word.
fn session_not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// Gives the SDK's answers the statuses the transport's clients expect: `400` with a JSON-RPC
/// parse error for a JSON body that is not a JSON-RPC message (the SDK's `415` stays for a
/// wrong content type), and `204` for a session ended by `DELETE` (the SDK's `202`).
pub(super) async fn answer_with_spec_statuses(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let sent_json = is_json(request.headers());
    let mut response = next.run(request).await;
    match (method, response.status()) {
        (Method::POST, StatusCode::UNSUPPORTED_MEDIA_TYPE) if sent_json => not_json_rpc(response).await,
        (Method::DELETE, StatusCode::ACCEPTED) => {
            *response.status_mut() = StatusCode::NO_CONTENT;
            response
        }
        _ => response,
    }
}

/// Whether the request says its body is JSON (`application/json`, parameters aside).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// A `400` with the JSON-RPC parse error (`-32700`, as the official TypeScript SDK answers), and
/// the SDK's reason.
async fn not_json_rpc(refused: Response) -> Response {
    let reason = axum::body::to_bytes(refused.into_body(), SDK_ERROR_LIMIT).await.unwrap_or_default();
    let message = format!("Parse error: the body is not a JSON-RPC message ({})", String::from_utf8_lossy(&reason));
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": message } });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_foreign_unless_it_is_the_public_urls() {
        let own = own_origins("https://servio.example/");
        let foreign = |own: &OwnOrigins, origin: &str| is_foreign(&HeaderValue::from_str(origin).unwrap(), own);
        assert!(!foreign(&own, "https://servio.example") && !foreign(&own, "https://servio.example:443"));
        for origin in [
            "https://evil.example",
            "http://servio.example",
            "https://servio.example:8443",
            "null",
            "x",
            "http://localhost",
        ] {
            assert!(foreign(&own, origin), "{origin}");
        }
        assert!(foreign(&own_origins("not a url"), "https://servio.example"), "no public URL");
        // A platform on a loopback address takes pages of this machine, nothing else.
        let local = own_origins("http://127.0.0.1:8080");
        for origin in ["http://localhost:8080", "http://127.0.0.1:9000", "http://[::1]:8080"] {
            assert!(!foreign(&local, origin), "{origin}");
        }
        for origin in ["http://evil.example:8080", "http://10.0.0.1:8080", "null"] {
            assert!(foreign(&local, origin), "{origin}");
        }
    }
}
