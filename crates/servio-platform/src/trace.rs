//! Every request gets an id and a span, and ends with one log line: method, matched route
//! (never the raw path, which may carry ids, and never the query string or a header), request
//! id, then status and duration. The same answer counts in the request metrics
//! (`crate::metrics::request`).
//!
//! The id is the client's `X-Request-Id` when it is a short token of safe characters (a load
//! balancer's, say, so that its logs and ours meet), otherwise one of ours; either way the
//! answer carries it back.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The header that carries a request's id.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest client-given id kept.
const MAX_ID: usize = 64;

/// The route label of a request no route matched.
const UNMATCHED: &str = "unmatched";

/// Logs and counts every request (a middleware over the whole router, so that the matched
/// route is known).
pub async fn observe(mut request: Request, next: Next) -> Response {
    let id = request_id(&request);
    request.headers_mut().insert(REQUEST_ID.clone(), id.clone());
    let method = request.method().clone();
    // The matched path holds its text in an `Arc`: cloning it copies no text.
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let route = matched.as_ref().map_or(UNMATCHED, MatchedPath::as_str);
    let span = tracing::info_span!("request", %method, route, request_id = id.to_str().unwrap_or_default());
    let started = Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    let latency = started.elapsed();
    let status = response.status().as_u16();
    let duration_ms = latency.as_secs_f64() * 1000.0;
    span.in_scope(|| {
        // Probes and scrapes come every few seconds: their lines are `debug`.
        if crate::metrics::is_quiet(&response) {
            tracing::debug!(status, duration_ms, "answered");
        } else {
            tracing::info!(status, duration_ms, "answered");
        }
    });
    crate::metrics::request(&method, route, status, latency);
    response.headers_mut().insert(REQUEST_ID.clone(), id);
    response
}

/// The client's id when fit for a log line, else a new one.
fn request_id(request: &Request) -> HeaderValue {
    match request.headers().get(&REQUEST_ID) {
        Some(sent) if is_fit(sent.as_bytes()) => sent.clone(),
        _ => new_id(),
    }
}

/// Letters, digits and `.-_:`, 1 to [`MAX_ID`] of them.
fn is_fit(id: &[u8]) -> bool {
    (1..=MAX_ID).contains(&id.len()) && id.iter().all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(b))
}

/// This process's random prefix and a counter: unique across the processes of one platform,
/// with no randomness spent per request.
fn new_id() -> HeaderValue {
    static PREFIX: LazyLock<String> = LazyLock::new(|| {
        let mut bytes = [0u8; 4];
        // Without randomness the ids are still unique within this process.
        let _ = getrandom::fill(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    });
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = format!("{}-{}", *PREFIX, NEXT.fetch_add(1, Ordering::Relaxed));
    HeaderValue::from_str(&id).unwrap_or(HeaderValue::from_static("unnamed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_ids_of_safe_characters_are_kept() {
        assert!(is_fit(b"lb-1a2b.3:4_5"));
        for unfit in [&b""[..], b"a b", b"a\"b", b"{json}", b"\xc3\xa9", &[b'a'; MAX_ID + 1]] {
            assert!(!is_fit(unfit), "{:?} was kept", String::from_utf8_lossy(unfit));
        }
    }

    #[test]
    fn new_ids_differ() {
        assert_ne!(new_id(), new_id());
    }
}
