//! Point 7: memory is bounded in bytes. The dashboard's response cache held up to 10,000
//! rendered dashboards (up to 1 MiB each) and the gateway up to 4,096 catalogues (megabytes
//! each at 1,000 tools), swept only once that many were held; users loading their dashboards
//! or listing their tools grew the process by hundreds of MiB. Now both are bounded by
//! `--dashboard-cache-bytes` and `--catalogue-cache-bytes`, and `/metrics` shows the hit rate.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;
use servio_store::testing::daily_slot;

use super::harness::{Backend, Demo, Platform, SITE_TOKEN, User, WithMetrics, start_site, within};

/// The bound both tests set (2 MiB), small next to what the old caches grew to.
const BOUND: &str = "2097152";

/// Peak memory growth allowed for the catalogues: the bound, what the request in flight
/// holds, and the allocator's slack, which plateaus at 70-95 MiB in a debug build (a second
/// round of the same requests adds nothing). With no bound the cache kept every catalogue,
/// about 2.2 MiB a user: 219 MiB for [`LISTERS`].
const GROWTH_KIB: u64 = 150 * 1024;

/// The same for the dashboards, where SQLite's page caches (one per pooled connection) and a
/// debug build's render of 20,000 values add about 45 MiB whatever is kept (49 MiB measured
/// with the bound); with the bound lifted it grew by 83 MiB.
const DASHBOARD_GROWTH_KIB: u64 = 68 * 1024;

/// One user signed up as `who` with `site` added, and `count` more with it made through the
/// store (sign-up is rate limited per address): the first, the site's id, and the others' ids
/// and API tokens.
async fn users_of_site(platform: &Platform, site: &Demo, who: &str, count: usize) -> (User, i64, Vec<(i64, String)>) {
    let first = platform.user(&format!("{who}-{}@example.com", platform.backend.name())).await;
    let added = platform.add_site(&first, site).await;
    let site_id = added["site"]["id"].as_i64().unwrap();
    let store = platform.store().await;
    let now = servio_platform::now();
    let mut users = Vec::new();
    for n in 0..count {
        let email = format!("many-{n}-{}@example.com", platform.backend.name());
        let (user, token) = super::harness::stored_user(&*store, &email).await;
        store.add_to_vault(user.id, site_id, now).await.unwrap();
        users.push((user.id, token));
    }
    (first, site_id, users)
}

/// `GET path` with `token` for each of `paths`, one at a time (so that what is kept, not what
/// is in flight, is measured); asserts each is a `200`.
async fn load(platform: &Platform, requests: Vec<(String, String)>) {
    futures_util::stream::iter(requests)
        .for_each_concurrent(1, |(token, path)| async move {
            let response =
                platform.http.get(format!("{}{path}", platform.url)).bearer_auth(&token).send().await.unwrap();
            let status = response.status();
            let body = response.bytes().await.unwrap();
            assert!(status.is_success(), "{path}: {status} {}", String::from_utf8_lossy(&body[..body.len().min(300)]));
        })
        .await;
}

/// The demo site, its manifest as `edit` makes it.
async fn site_with(edit: fn(&mut Value)) -> Demo {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    site.site.edit_manifest(Some(Arc::new(edit)));
    site
}

/// A platform on `backend` whose cache `flag` holds at most [`BOUND`] bytes, with the users
/// [`users_of_site`] makes (`who`, `count`).
async fn bounded(
    backend: &Backend,
    site: &Demo,
    flag: &str,
    who: &str,
    count: usize,
) -> (WithMetrics, (User, i64, Vec<(i64, String)>)) {
    let platform = WithMetrics::start(backend, site, &[flag, BOUND]).await;
    let users = users_of_site(&platform, site, who, count).await;
    (platform, users)
}

/// The value of the counter `servio_cache_requests_total{cache, result}` at `/metrics`.
async fn cache_count(platform: &WithMetrics, cache: &str, result: &str) -> u64 {
    let text = platform.metrics_text().await;
    let wanted = format!("servio_cache_requests_total{{cache=\"{cache}\",result=\"{result}\"}} ");
    text.lines().find_map(|line| line.strip_prefix(&wanted)).map_or(0, |n| n.trim().parse().unwrap())
}

const METRICS: usize = 50;
const DAYS: i64 = 400;
const USERS: usize = 3;
/// Windows each user asks for (`?days=381` to `400`): about 0.9 MiB each, 55 MiB in all.
const WINDOWS: u32 = 20;

/// The demo site's brief with [`METRICS`] daily metrics.
fn many_metrics(manifest: &mut Value) {
    let first = manifest["brief"]["metrics"][0].clone();
    let metrics = (0..METRICS).map(|n| {
        let mut metric = first.clone();
        metric["key"] = json!(format!("abuse.metric{n}.daily"));
        metric
    });
    manifest["brief"]["metrics"] = Value::Array(metrics.collect());
}

/// [`DAYS`] daily values of every metric for `user_id`, ending yesterday (UTC).
async fn seed_values(platform: &Platform, user_id: i64, site_id: i64) {
    let store = platform.store().await;
    let today = jiff::Timestamp::now().as_second() / 86_400;
    let days: Vec<(i64, String)> = (1..=DAYS)
        .map(|back| {
            let start = (today - back) * 86_400;
            let date = jiff::Timestamp::from_second(start).unwrap().to_zoned_datetime(jiff::tz::TimeZone::UTC).date();
            (start, date.to_string())
        })
        .collect();
    let keys: Vec<String> = (0..METRICS).map(|n| format!("abuse.metric{n}.daily")).collect();
    let mut values = Vec::new();
    for key in &keys {
        for (index, (start, date)) in days.iter().enumerate() {
            let slot = daily_slot(user_id, site_id, key, (*start, start + 86_400), date);
            values.push((slot, (index * 37 % 5_000) as f64 + 0.25, "seeded"));
        }
    }
    for chunk in values.chunks(5_000) {
        store.store_values(chunk, servio_platform::now()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboards_of_many_users_stay_within_the_cache_bound() {
    let site = site_with(many_metrics).await;
    for backend in Backend::all().await {
        let (platform, (_, site_id, users)) = bounded(&backend, &site, "--dashboard-cache-bytes", "dash", USERS).await;
        for (user_id, _) in &users {
            seed_values(&platform, *user_id, site_id).await;
        }
        let requests: Vec<(String, String)> = users
            .iter()
            .flat_map(|(_, token)| {
                (DAYS as u32 - WINDOWS + 1..=DAYS as u32)
                    .map(|days| (token.clone(), format!("/api/dashboard?days={days}")))
            })
            .collect();
        let before = platform.rss_kib();
        within(&platform, "many users' dashboards", Duration::from_secs(240), load(&platform, requests)).await;
        let growth = platform.peak_rss_kib().saturating_sub(before);
        eprintln!("{}: dashboards grew the process by {} MiB at the peak", backend.name(), growth / 1024);
        assert!(
            growth < DASHBOARD_GROWTH_KIB,
            "{}: grew by {} MiB (bound {BOUND} bytes)",
            backend.name(),
            growth / 1024
        );

        // The cache still serves: the same dashboard again is a hit, and /metrics says so.
        let (_, token) = &users[0];
        let again = vec![(token.clone(), "/api/dashboard?days=400".to_owned()); 2];
        let hits = cache_count(&platform, "dashboard", "hit").await;
        load(&platform, again).await;
        assert!(cache_count(&platform, "dashboard", "hit").await > hits, "{}: a hit counted", backend.name());
        assert!(cache_count(&platform, "dashboard", "miss").await >= (USERS as u64) * u64::from(WINDOWS));
    }
}

/// Tools of the catalogue site, each with a schema of about 2 KB: a catalogue of a few MiB.
const TOOLS: usize = 600;
const LISTERS: usize = 100;

/// The demo site's manifest with [`TOOLS`] more tools, each with a long schema.
fn many_tools(manifest: &mut Value) {
    let tools = manifest["tools"].as_array_mut().unwrap();
    let properties: serde_json::Map<String, Value> = (0..20)
        .map(|n| {
            (
                format!("field_{n}"),
                json!({ "type": "string", "description": format!("field {n} of the report, {}", "x".repeat(60)) }),
            )
        })
        .collect();
    for n in 0..TOOLS {
        tools.push(json!({
            "name": format!("bulk.tool{n}"),
            "description": format!("Bulk tool number {n}."),
            "input_schema": { "type": "object", "properties": properties.clone() },
        }));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalogues_of_many_users_stay_within_the_cache_bound() {
    let site = site_with(many_tools).await;
    for backend in Backend::all().await {
        let (platform, (first, _, users)) = bounded(&backend, &site, "--catalogue-cache-bytes", "tools", LISTERS).await;
        let requests: Vec<(String, String)> =
            users.iter().map(|(_, token)| (token.clone(), "/api/tools".to_owned())).collect();
        // The first catalogue checks the site's manifest, once for every user: not growth.
        load(&platform, vec![(first.token.clone(), "/api/tools".to_owned())]).await;
        platform.reset_peak();
        let before = platform.rss_kib();
        within(&platform, "many users' catalogues", Duration::from_secs(120), load(&platform, requests)).await;
        let growth = platform.peak_rss_kib().saturating_sub(before);
        eprintln!("{}: catalogues grew the process by {} MiB at the peak", backend.name(), growth / 1024);
        assert!(growth < GROWTH_KIB, "{}: grew by {} MiB (bound {BOUND} bytes)", backend.name(), growth / 1024);
        assert!(cache_count(&platform, "catalogue", "miss").await >= LISTERS as u64, "{}", backend.name());
    }
}

/// The figures cache's bound in the test below: a few users' figures, not all of them.
const FIGURES_BOUND: u64 = 32 * 1024;
const FIGURE_READERS: usize = 10;
/// Days of values each reader has, read as four resources of ten days.
const FIGURE_DAYS: i64 = 40;

/// The value of the gauge `servio_cache_bytes{cache="figures"}` at `/metrics`.
async fn figures_bytes(platform: &WithMetrics) -> u64 {
    let text = platform.metrics_text().await;
    let wanted = "servio_cache_bytes{cache=\"figures\"} ";
    text.lines().find_map(|line| line.strip_prefix(wanted)).map_or(0, |n| n.trim().parse::<f64>().unwrap() as u64)
}

/// A `resources/read` of `uri` (MCP 2026-07-28) with `token`: the resource's text.
async fn read_resource(platform: &Platform, token: &str, uri: &str) -> String {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": { "uri": uri, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "abuse", "version": "0" } } } });
    let response = platform
        .http
        .post(format!("{}/mcp", platform.url))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "resources/read")
        .header("mcp-name", uri)
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let json = text.lines().filter_map(|line| line.strip_prefix("data:")).next().unwrap_or(&text).trim().to_owned();
    let answer: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{uri}: {e}: {text}"));
    let read = answer["result"]["contents"][0]["text"].as_str();
    read.unwrap_or_else(|| panic!("{uri}: {answer}")).to_owned()
}

/// Issue 41, "bounded by design": the figure resources MCP served are kept within
/// `--figures-cache-bytes`. [`FIGURE_READERS`] users each read four resources of ten days of
/// their values, several times the bound in all: what is kept (`servio_cache_bytes`) never
/// passes the bound and something is kept; a resource read twice in a row is a hit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_of_many_users_stay_within_the_cache_bound() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    let bound = FIGURES_BOUND.to_string();
    for backend in Backend::all().await {
        let name = backend.name();
        let platform = WithMetrics::start(&backend, &site, &["--figures-cache-bytes", &bound]).await;
        let (_, site_id, users) = users_of_site(&platform, &site, "figures", FIGURE_READERS).await;
        let store = platform.store().await;
        let today = jiff::Timestamp::now().as_second() / 86_400;
        let days: Vec<(i64, String)> = (1..=FIGURE_DAYS)
            .map(|back| {
                let start = (today - back) * 86_400;
                let date =
                    jiff::Timestamp::from_second(start).unwrap().to_zoned_datetime(jiff::tz::TimeZone::UTC).date();
                (start, date.to_string())
            })
            .collect();
        for (user_id, _) in &users {
            let values: Vec<_> = days
                .iter()
                .map(|(start, date)| {
                    let slot = daily_slot(*user_id, site_id, "sales.revenue.daily", (*start, start + 86_400), date);
                    (slot, 1234.5, "seeded")
                })
                .collect();
            store.store_values(&values, servio_platform::now()).await.unwrap();
        }
        let metric = format!("servio://metrics/{}/sales.revenue.daily", site.origin.trim_start_matches("https://"));
        // The cache serves: a resource read twice in a row is a hit the second time.
        let first = format!("{metric}?from={}&to={}", days[9].1, days[0].1);
        read_resource(&platform, &users[0].1, &first).await;
        let hits = cache_count(&platform, "figures", "hit").await;
        read_resource(&platform, &users[0].1, &first).await;
        assert_eq!(cache_count(&platform, "figures", "hit").await, hits + 1, "{name}: read again, not a hit");
        let (mut rendered, mut most) = (0, 0);
        for (_, token) in &users {
            for window in days.chunks(10) {
                let (to, from) = (&window[0].1, &window[window.len() - 1].1);
                rendered +=
                    read_resource(&platform, token, &format!("{metric}?from={from}&to={to}")).await.len() as u64;
                let kept = figures_bytes(&platform).await;
                assert!(kept <= FIGURES_BOUND, "{name}: {kept} bytes of figures kept, bound {FIGURES_BOUND}");
                most = most.max(kept);
            }
        }
        eprintln!("{name}: {rendered} bytes of figures read, at most {most} kept (bound {FIGURES_BOUND})");
        assert!(rendered > 4 * FIGURES_BOUND, "{name}: only {rendered} bytes read, not past the bound");
        assert!(most > 0, "{name}: nothing was kept");
    }
}
