//! A span for every request: method, matched route (never the raw path, which may carry ids
//! and query strings), and, once answered, status and latency. Failures (5xx) are logged at
//! `error` by tower-http; other answers at `debug`.

use std::time::Duration;

use axum::body::Body;
use axum::extract::MatchedPath;
use axum::http::{Request, Response};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultOnRequest, TraceLayer};
use tracing::Span;

/// Makes a request's span.
type MakeSpan = fn(&Request<Body>) -> Span;

/// Records the answer in the span.
type OnResponse = fn(&Response<Body>, Duration, &Span);

/// The layer giving each request its span.
pub type Layer = TraceLayer<SharedClassifier<ServerErrorsAsFailures>, MakeSpan, DefaultOnRequest, OnResponse>;

/// The layer giving each request its span.
pub fn layer() -> Layer {
    TraceLayer::new_for_http().make_span_with(request_span as MakeSpan).on_response(record_response as OnResponse)
}

fn request_span(request: &Request<Body>) -> Span {
    let route = request.extensions().get::<MatchedPath>().map_or("", MatchedPath::as_str);
    tracing::info_span!(
        "request",
        method = %request.method(),
        route,
        status = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    )
}

fn record_response(response: &Response<Body>, latency: Duration, span: &Span) {
    span.record("status", response.status().as_u16());
    span.record("latency_ms", latency.as_secs_f64() * 1000.0);
    tracing::debug!("answered");
}
