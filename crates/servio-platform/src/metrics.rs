//! The platform's metrics in the Prometheus text format (`/metrics`, served only on a listener
//! of its own, `--metrics-addr`: the main listener is public, and the metrics tell outcomes
//! such as sign-ins that are nobody's business there). Counters and histograms are recorded where things happen, through the
//! `metrics` facade (requests here, gateway calls in [`crate::domain::gateway`], manifest refreshes in
//! [`crate::refresh`], collections and token renewals in `servio_collector`); gauges of the
//! database (jobs to do, the connection pool) are read from the store at each scrape.
//!
//! Names follow Prometheus' conventions: a `servio_` prefix, `_total` on counters, base units
//! (`_seconds`). Labels are bounded sets: route templates (never paths), methods, statuses,
//! outcome words.

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use axum::extract::State;
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use metrics::SharedString;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use servio_store::Operations;

/// Histogram buckets of durations, in seconds: half a millisecond to ten seconds.
const LATENCY_BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// A pending job due for longer than this (seconds) and held by no one counts as overdue.
const OVERDUE_AFTER: i64 = 600;

/// The content type of the text exposition format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The process's recorder: installed on first use, which [`crate::AppState::new`] and a
/// worker's metrics listener make before anything is recorded. When another recorder was
/// installed first (a test harness, say), this one still renders, but stays empty.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new();
        let builder = builder
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics stays empty");
        }
        describe();
        keep_up(handle.clone());
        handle
    })
}

/// How often histograms' samples are folded into their buckets.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The name of the thread that does it.
const UPKEEP_THREAD: &str = "metrics-upkeep";

/// Folds the histograms' samples into their buckets every [`UPKEEP_EVERY`], on a thread of its
/// own. The recorder keeps every sample (8 bytes and more) until then, and only a scrape did
/// it: a process nobody scrapes (no `--metrics-addr`) grew by some 2 MiB a 100,000 requests,
/// without end.
fn keep_up(handle: PrometheusHandle) {
    let started = std::thread::Builder::new().name(UPKEEP_THREAD.into()).spawn(move || {
        loop {
            std::thread::sleep(UPKEEP_EVERY);
            handle.run_upkeep();
        }
    });
    if let Err(error) = started {
        tracing::warn!(error = %servio_client::error_chain(&error), "starting the metrics upkeep failed; histograms grow until scraped");
    }
}

/// The help lines of every metric.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!("servio_http_requests_total", "HTTP requests answered, by method, route template and status");
    describe_histogram!(
        "servio_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "Time to answer an HTTP request (to the response head), by method and route template"
    );
    describe_counter!("servio_gateway_calls_total", "Tool calls through the AI gateway (MCP and HTTP API), by outcome");
    describe_counter!(
        "servio_call_log_dropped_total",
        "Call-log entries dropped, not written, because the queue before the log's writer was full"
    );
    describe_counter!("servio_collections_total", "Collections of a metric's period, by outcome");
    describe_counter!("servio_token_renewals_total", "OAuth access-token renewals, by outcome");
    describe_counter!("servio_manifest_refreshes_total", "Manifest refreshes, by outcome");
    describe_gauge!("servio_jobs", "Collection jobs to do: pending, claimed (under a live lease), overdue");
    describe_gauge!("servio_db_connections", "Database pool connections: open, idle, max");
    describe_counter!(
        "servio_cache_requests_total",
        "Look-ups in the kept dashboards and catalogues, by cache and result (hit, miss): the hit rate"
    );
    describe_gauge!(
        "servio_cache_bytes",
        metrics::Unit::Bytes,
        "Bytes the kept dashboards and catalogues take, by cache"
    );
}

/// Counts one answered request. Per request, the route's label is one shared allocation and
/// the status's a table lookup: this runs on every request the platform answers.
pub(crate) fn request(method: &Method, route: &str, status: u16, latency: Duration) {
    let method = method_label(method);
    let route = SharedString::from_shared(Arc::<str>::from(route));
    let status = status_label(status);
    metrics::counter!("servio_http_requests_total", "method" => method, "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("servio_http_request_duration_seconds", "method" => method, "route" => route)
        .record(latency.as_secs_f64());
}

/// A status's label: from a table made once for 100 to 599 (what `http` lets a status be).
fn status_label(status: u16) -> SharedString {
    static LABELS: LazyLock<Vec<Arc<str>>> = LazyLock::new(|| (100..600).map(|s: u16| s.to_string().into()).collect());
    match LABELS.get(usize::from(status).wrapping_sub(100)) {
        Some(label) => SharedString::from_shared(label.clone()),
        None => SharedString::from_owned(status.to_string()),
    }
}

/// Standard methods by name, anything else as `other`, so a client cannot grow the label set.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    KNOWN.iter().find(|known| *known == method).map_or("other", |known| known.as_str())
}

/// A response that marks itself as a probe's or a scrape's, which the request log keeps at
/// `debug` (they come every few seconds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quiet;

/// Whether `response` is a probe's or a scrape's.
pub(crate) fn is_quiet(response: &Response) -> bool {
    response.extensions().get::<Quiet>().is_some()
}

/// The text of every metric, with the database's gauges read now.
pub async fn render(store: &dyn Operations) -> String {
    let now = crate::now();
    match store.job_gauges(now, now - OVERDUE_AFTER).await {
        Ok(jobs) => {
            // `claimed` is the label that dashboards and alerts query; the jobs' word is "lease".
            for (state, count) in [("pending", jobs.pending), ("claimed", jobs.leased), ("overdue", jobs.overdue)] {
                metrics::gauge!("servio_jobs", "state" => state).set(count as f64);
            }
        }
        Err(error) => tracing::warn!(error = %servio_client::error_chain(&error), "reading the job gauges failed"),
    }
    let pool = store.pool_use();
    for (state, count) in [("open", pool.open), ("idle", pool.idle), ("max", pool.max)] {
        metrics::gauge!("servio_db_connections", "state" => state).set(f64::from(count));
    }
    let handle = handle();
    handle.run_upkeep();
    handle.render()
}

/// The answer of a scrape.
pub(crate) async fn answer(store: &dyn Operations) -> Response {
    let mut response = ([(header::CONTENT_TYPE, TEXT_FORMAT)], render(store).await).into_response();
    response.extensions_mut().insert(Quiet);
    response
}

/// `/metrics` alone, for a listener of its own (`--metrics-addr`; a worker's only listener).
pub fn router(store: Arc<dyn Operations>) -> axum::Router {
    async fn scrape(State(store): State<Arc<dyn Operations>>) -> Response {
        answer(store.as_ref()).await
    }
    handle();
    axum::Router::new().route("/metrics", axum::routing::get(scrape)).with_state(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Histograms keep their samples until an upkeep: a thread does one every few seconds,
    /// whether or not anyone scrapes.
    #[cfg(target_os = "linux")]
    #[test]
    fn histograms_are_folded_without_a_scrape() {
        handle();
        let names = || -> Vec<String> {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .map(|name| name.trim().to_owned())
                .collect()
        };
        // A new thread names itself once it runs: until then it has its parent's name.
        let started = std::time::Instant::now();
        while !names().iter().any(|name| name == UPKEEP_THREAD) {
            assert!(started.elapsed() < Duration::from_secs(10), "no upkeep thread among {:?}", names());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn status_labels_are_the_numbers_whatever_the_status() {
        for status in [100, 200, 404, 599, 0, 99, 600, 1000] {
            assert_eq!(status_label(status).as_ref(), status.to_string());
        }
    }
}
