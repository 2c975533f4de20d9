//! JSON-RPC batches: an array of messages in one `POST`, which MCP 2025-03-26 requires a server
//! to take, and which later revisions removed. The SDK reads one message a request, so a batch
//! is split here: each message goes to the SDK as a request of its own (with the batch's
//! headers, so the same session and user), one after the other in the batch's order, and the
//! answers to its requests come back together as one JSON array. A batch holding only
//! notifications and responses is accepted with `202`, as one such message is.
//!
//! A batch is refused, with a JSON-RPC error and `400`, when its request names a revision
//! after 2025-03-26 (`MCP-Protocol-Version`, which 2025-03-26 clients do not send), when it is
//! empty or holds more than [`MAX_MESSAGES`] messages, and for an `initialize` inside it
//! (which 2025-03-26 forbids). Its answers are held together up to [`ANSWER_BYTES`]: a request
//! after that is not run, and is answered with an error saying so.

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tower::ServiceExt;

/// The one revision with batches.
const BATCH_REVISION: &str = "2025-03-26";

/// The most messages a batch may hold: each runs in turn within the one HTTP request.
pub(crate) const MAX_MESSAGES: usize = 100;

/// The most bytes of answers a batch holds together (8 MiB).
pub(crate) const ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// Answers `request` through `inner`, splitting a JSON-RPC batch into its messages.
pub(super) async fn split<S>(inner: S, request: Request) -> Response
where
    S: tower::Service<Request, Error = Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
{
    if request.method() != Method::POST {
        return pass(inner, request).await;
    }
    let (parts, body) = request.into_parts();
    // The body's size is bounded by an outer layer.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return refused(StatusCode::BAD_REQUEST, -32700, "the body could not be read");
    };
    if bytes.iter().find(|byte| !byte.is_ascii_whitespace()) != Some(&b'[') {
        return pass(inner, Request::from_parts(parts, Body::from(bytes))).await;
    }
    let version = parts.headers.get("mcp-protocol-version").and_then(|value| value.to_str().ok());
    if let Some(version) = version.filter(|version| *version != BATCH_REVISION) {
        let message = format!("JSON-RPC batches are part of MCP {BATCH_REVISION} only, not of {version}");
        return refused(StatusCode::BAD_REQUEST, -32600, &message);
    }
    let messages: Vec<Value> = match serde_json::from_slice(&bytes) {
        Ok(messages) => messages,
        Err(error) => return refused(StatusCode::BAD_REQUEST, -32700, &format!("the batch is not JSON: {error}")),
    };
    if messages.is_empty() {
        return refused(StatusCode::BAD_REQUEST, -32600, "an empty batch");
    }
    if messages.len() > MAX_MESSAGES {
        let message = format!("a batch of {} messages: at most {MAX_MESSAGES} are taken", messages.len());
        return refused(StatusCode::BAD_REQUEST, -32600, &message);
    }
    let mut answers = Vec::new();
    let mut room = ANSWER_BYTES;
    for message in messages {
        let id = message.get("id").filter(|_| message.get("method").is_some()).cloned();
        if message.get("method").and_then(Value::as_str) == Some("initialize") {
            answers.push(error(id.unwrap_or(Value::Null), -32600, "initialize may not be part of a batch"));
            continue;
        }
        if room == 0 {
            // Not run: its answer would have no room.
            let full = format!("not run: the batch's answers passed {ANSWER_BYTES} bytes");
            answers.extend(id.map(|id| error(id, -32603, &full)));
            continue;
        }
        let mut one = Request::from_parts(parts.clone(), Body::from(message.to_string()));
        one.headers_mut().remove(header::CONTENT_LENGTH);
        let answer = pass(inner.clone(), one).await;
        match answer_of(answer, id.as_ref(), room).await {
            Ok(Some((answer, size))) => {
                room = room.saturating_sub(size);
                answers.push(answer);
            }
            Ok(None) => {}
            // The session is gone or belongs to no one: the whole batch gets that answer.
            Err(status) => return status,
        }
    }
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let mut response = Value::Array(answers).to_string().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn pass<S>(inner: S, request: Request) -> Response
where
    S: tower::Service<Request, Error = Infallible> + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
{
    match inner.oneshot(request).await {
        Ok(response) => response.into_response(),
        Err(never) => match never {},
    }
}

/// The answer to the request `id` (`None` for a notification or a response) in `response`,
/// read from JSON or from an event stream, with the bytes read (at most `room`; a larger
/// answer is an error taking all the room). A `404` (no such session) is the batch's answer.
async fn answer_of(response: Response, id: Option<&Value>, room: usize) -> Result<Option<(Value, usize)>, Response> {
    let status = response.status();
    if status == StatusCode::NOT_FOUND {
        return Err(response);
    }
    let Some(id) = id else { return Ok(None) };
    let Ok(bytes) = axum::body::to_bytes(response.into_body(), room).await else {
        let full = format!("the batch's answers passed {ANSWER_BYTES} bytes");
        return Ok(Some((error(id.clone(), -32603, &full), room)));
    };
    let size = bytes.len();
    let text = String::from_utf8_lossy(&bytes);
    let answer = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(text.trim_start().starts_with('{').then_some(text.as_ref()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id") == Some(id) && message.get("method").is_none());
    let answer = answer.unwrap_or_else(|| {
        error(
            id.clone(),
            -32603,
            &format!("no answer ({}): {}", status.as_u16(), text.chars().take(200).collect::<String>()),
        )
    });
    Ok(Some((answer, size)))
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

fn refused(status: StatusCode, code: i64, message: &str) -> Response {
    let mut response = (status, error(Value::Null, code, message).to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
