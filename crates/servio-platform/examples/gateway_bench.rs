//! The latency the AI gateway adds to a tool call: `shop.getSalesSummary` on the demo site
//! called directly (HTTPS, bearer token) against the same call through the platform, by
//! prefixed name over `POST /api/tools/{name}/call`, as `tools/call` on an `/mcp` session
//! (2025-06-18), and as a stateless `tools/call` of MCP 2026-07-28 (no session; the protocol
//! version and client capabilities in the request's `_meta`, the `Mcp-Method` header). And a
//! stateless `resources/read` of one day of a metric (collected before the run): the platform
//! answers it alone, so its whole latency is the platform's.
//! The platform stores in an SQLite file, as `servio serve` does by default.
//!
//! One call at a time (latency, not throughput), on kept-alive connections, in alternating
//! blocks so that the machine's noise falls on every path alike. Run by `bench/gateway.sh`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use servio_client::{Client, ClientConfig};
use servio_demo_site::{LocalCa, Site, SiteConfig, serve_https_on};
use servio_platform::router;
use servio_platform::throttle::{Throttle, ThrottleConfig};

const BLOCKS: usize = 20;
const PER_BLOCK: usize = 200;
const WARM_UP: usize = 200;

#[tokio::main]
async fn main() {
    let ca = LocalCa::generate(&[]).expect("a local CA");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let site = Site::new(SiteConfig::bearer(&origin, "bench-token"), None).await.unwrap();
    let _site = serve_https_on(listener, &ca, site.router()).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = servio_store::open(&format!("sqlite:{}", dir.path().join("servio.db").display())).await.unwrap();
    let client =
        Client::new(ClientConfig { extra_roots_pem: Some(ca.ca_pem.as_bytes().to_vec()), ..ClientConfig::default() })
            .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut state = servio_platform::testing::state(Arc::from(store), client, &base);
    // One user makes every call of the bench, thousands a minute: past the gateway's limits of
    // a user, which would answer most of them 429.
    let unlimited = ThrottleConfig {
        gateway_calls_per_user: None,
        gateway_log_bytes_per_user: None,
        refresh_per_site: Duration::ZERO,
        ..ThrottleConfig::default()
    };
    state.throttle = Arc::new(Throttle::new(&unlimited));
    let app = router(state.clone());
    tokio::spawn(async move { axum::serve(servio_platform::no_delay(listener), app).await });

    let user = state.store.create_user("bench@example.com", "unused", "UTC", 0).await.unwrap();
    let token = "svt_bench";
    state
        .store
        .create_api_token(
            user.id,
            "bench",
            &servio_platform::domain::accounts::secrets::token_hash(token),
            &servio_store::Grant::all_sites(servio_store::Scope::Ai),
            (0, 1),
        )
        .await
        .unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.ca_pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let added = http
        .post(format!("{base}/api/vault"))
        .bearer_auth(token)
        .json(&json!({ "url": origin, "token": "bench-token" }))
        .send()
        .await
        .unwrap();
    let added: Value = added.json().await.unwrap();
    let id = added["site"]["id"].as_i64().unwrap_or_else(|| panic!("adding the demo site: {added}"));
    let backfill = json!({ "from": "2026-08-13", "to": "2026-08-20" });
    let url = format!("{base}/api/vault/{id}/backfill");
    // The backfill waits for a worker, as `servio serve`'s scheduler would be.
    let filled = http.post(url).bearer_auth(token).json(&backfill).send();
    let filled = servio_platform::testing::with_worker(&state, filled).await.unwrap();
    assert!(filled.status().is_success(), "collecting a week: {}", filled.text().await.unwrap());
    let name = servio_manifest::Site::parse(&origin).unwrap().prefixed_name("shop.getSalesSummary");
    let args = json!({ "from": "2026-08-20", "to": "2026-08-20" });

    let direct =
        http.post(format!("{origin}/api/servio/tools/shop.getSalesSummary")).bearer_auth("bench-token").json(&args);
    let api = http.post(format!("{base}/api/tools/{name}/call")).bearer_auth(token).json(&args);
    let session = mcp_session(&http, &base, token).await;
    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": { "name": name, "arguments": args } });
    let mcp = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&call);
    let stateless = |method: &str, named: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": {} });
        http.post(format!("{base}/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", named)
            .json(&json!({ "jsonrpc": "2.0", "id": 8, "method": method, "params": params }))
    };
    let uri = format!("servio://metrics/{}/sales.revenue.daily?from=2026-08-20&to=2026-08-20", &origin[8..]);
    let read = stateless("resources/read", &uri, json!({ "uri": uri }));
    let stateless = stateless("tools/call", &name, json!({ "name": name, "arguments": args }));
    let paths = [
        ("direct to the site", direct),
        ("gateway, HTTP API", api),
        ("gateway, MCP 2025", mcp),
        ("gateway, MCP 2026", stateless),
        ("resource read, 2026", read),
    ];

    // `GATEWAY_BENCH_ONLY=resource` runs the paths whose label starts so (for a profiler).
    let only = std::env::var("GATEWAY_BENCH_ONLY").unwrap_or_default();
    let paths: Vec<_> = paths.into_iter().filter(|(label, _)| label.starts_with(only.as_str())).collect();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); paths.len()];
    for (_, request) in &paths {
        for _ in 0..WARM_UP {
            once(request).await;
        }
    }
    for _ in 0..BLOCKS {
        for (index, (_, request)) in paths.iter().enumerate() {
            for _ in 0..PER_BLOCK {
                samples[index].push(once(request).await);
            }
        }
    }
    let stats: Vec<(f64, f64)> = samples.iter_mut().map(|s| (percentile(s, 0.50), percentile(s, 0.99))).collect();
    println!("{} calls per path, one at a time, in {BLOCKS} alternating blocks", BLOCKS * PER_BLOCK);
    println!("{:<20} {:>9} {:>9} {:>14} {:>14}", "path", "p50 ms", "p99 ms", "p50 overhead", "p99 overhead");
    for ((label, _), (p50, p99)) in paths.iter().zip(&stats) {
        // A resource read calls no site: all of it is the platform's.
        let (base50, base99) = if label.starts_with("resource") { (0.0, 0.0) } else { stats[0] };
        println!("{label:<20} {p50:>9.3} {p99:>9.3} {:>11.3} ms {:>11.3} ms", p50 - base50, p99 - base99);
    }
}

/// Opens an MCP session and returns its id.
async fn mcp_session(http: &reqwest::Client, base: &str, token: &str) -> String {
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bench", "version": "0" } } });
    let response = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    response.bytes().await.unwrap();
    http.post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .send()
        .await
        .unwrap();
    session
}

/// One call, checked to have succeeded, and how long it took to its last byte.
async fn once(request: &reqwest::RequestBuilder) -> Duration {
    let started = Instant::now();
    let response = request.try_clone().unwrap().send().await.unwrap();
    let status = response.status();
    let body = response.bytes().await.unwrap();
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&body);
    assert!(status.is_success() && text.contains("revenue"), "a failed call ({status}): {text}");
    if let Ok(Value::Object(answer)) = serde_json::from_slice::<Value>(&body) {
        assert!(!answer.contains_key("error"), "{text}");
    }
    elapsed
}

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort_unstable();
    let at = ((samples.len() as f64 * p).ceil() as usize).saturating_sub(1).min(samples.len() - 1);
    samples[at].as_secs_f64() * 1000.0
}
