//! The rules of the streamable HTTP transport (MCP 2025-11-25) that the SDK leaves to us, as
//! layers around its service:
//!
//! - a request whose `Origin` is not the platform's own is refused with `403`, so a page on
//!   another site cannot drive a signed-in user's client (requests without `Origin`, from
//!   programs rather than browsers, pass);
//! - a session belongs to the user who opened it, for `POST`, `GET` and `DELETE` alike: another
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
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use servio_store::User;

/// The header that carries a session's id.
const SESSION_HEADER: &str = "mcp-session-id";

/// The most of the SDK's own error text that is read to explain a refused body.
const SDK_ERROR_LIMIT: usize = 64 * 1024;

/// The platform's own origin (`scheme://host[:port]`, as browsers send it in `Origin`), from
/// its public URL; `None` when that URL does not parse, and then every `Origin` is foreign.
pub(super) fn own_origin(public_url: &str) -> Option<Arc<str>> {
    let origin = url::Url::parse(public_url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization().into())
}

/// Refuses a request that carries an `Origin` other than the platform's own with `403`, before
/// the token is even looked at.
pub(super) async fn refuse_foreign_origin(
    State(own): State<Option<Arc<str>>>,
    request: Request,
    next: Next,
) -> Response {
    match request.headers().get(header::ORIGIN) {
        Some(origin) if is_foreign(origin, own.as_deref()) => {
            let body = json!({ "error": "requests to /mcp from a page on another origin are refused" });
            (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
        }
        _ => next.run(request).await,
    }
}

/// Whether `origin` differs from `own`; an `Origin` that does not parse (`null`, from sandboxed
/// pages and some redirects, among them) is foreign.
fn is_foreign(origin: &HeaderValue, own: Option<&str>) -> bool {
    let sent = origin.to_str().ok().and_then(|origin| url::Url::parse(origin).ok()).map(|url| url.origin());
    match (sent, own) {
        (Some(sent), Some(own)) => !sent.is_tuple() || sent.ascii_serialization() != own,
        _ => true,
    }
}

/// Who opened each session, by session id, so that a request on a session is let through only
/// with the owner's token. Entries of sessions the SDK has ended (idle timeout, `DELETE`) are
/// dropped when a session is opened, so the map stays as large as the live sessions.
#[derive(Clone)]
pub(super) struct Owners {
    owners: Arc<Mutex<HashMap<String, i64>>>,
    sessions: Arc<LocalSessionManager>,
}

impl Owners {
    /// Owners of the sessions kept by `sessions`.
    pub(super) fn new(sessions: Arc<LocalSessionManager>) -> Owners {
        Owners { owners: Arc::default(), sessions }
    }

    fn owner(&self, session: &str) -> Option<i64> {
        self.owners.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(session).copied()
    }

    async fn record(&self, session: String, user_id: i64) {
        let live = self.sessions.sessions.read().await;
        let mut owners = self.owners.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        owners.retain(|id, _| live.contains_key(id.as_str()));
        owners.insert(session, user_id);
    }

    fn forget(&self, session: &str) {
        self.owners.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(session);
    }
}

/// Lets a request on a session through only when it comes from the session's owner, records the
/// owner of a session being opened, and forgets a session once it has ended.
///
/// A session id this process did not hand out (or handed to another user) answers like a
/// session that does not exist, so no token learns whether another user's session is live.
pub(super) async fn keep_sessions_to_owners(State(owners): State<Owners>, request: Request, next: Next) -> Response {
    let Some(user_id) = request.extensions().get::<User>().map(|user| user.id) else {
        eprintln!("servio: an MCP request reached the session check without a user");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let session = session_id(request.headers());
    if let Some(session) = &session
        && owners.owner(session) != Some(user_id)
    {
        return session_not_found();
    }
    let method = request.method().clone();
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
        }
    }
    response
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
        let own = own_origin("https://servio.example/");
        assert_eq!(own.as_deref(), Some("https://servio.example"));
        let foreign = |origin: &str| is_foreign(&HeaderValue::from_str(origin).unwrap(), own.as_deref());
        assert!(!foreign("https://servio.example") && !foreign("https://servio.example:443"));
        for origin in ["https://evil.example", "http://servio.example", "https://servio.example:8443", "null", "x"] {
            assert!(foreign(origin), "{origin}");
        }
        assert!(is_foreign(&HeaderValue::from_static("https://servio.example"), None), "no public URL");
    }
}
