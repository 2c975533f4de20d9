//! The dashboard benchmark's server (`bench/dashboard.sh` drives it with `wrk`).
//!
//! Seeds one user on embedded SQLite with 50 metrics (5 sites of 10 metrics, revenue and orders
//! on each so the canonical slots hold five sites) and 730 days of daily values each (36,500
//! values, stored in one transaction: one durable commit per value took minutes), then serves
//! the real platform router plus, on the same server, a static file holding exactly the bytes
//! `GET /api/dashboard` returns (tower-http's `ServeFile`), the baseline. Connections have
//! Nagle's algorithm off, as `servio serve`'s do: without it, `ServeFile`'s answer (written in
//! pieces) waited some 40 ms for the client's delayed acknowledgement, and every ratio against
//! the static file flattered the dashboard.
//!
//! For the uncached mode, `USERS` more users (default 64) get the same 50 metrics with the last
//! 70 days of values, and a second listener serves the same store with no dashboard cache, so
//! that every request renders; `bench/dashboard.sh` rotates over their tokens (one render per
//! user at a time, so one user alone would measure one core).
//!
//! ```sh
//! cargo run --release -p servio-platform --example dashboard_bench -- DATA_DIR [ADDR]
//! ```
//!
//! Prints progress with timings, then one line `READY <json>` with the base URL, the API token,
//! a session cookie (for the dashboard page), the static file's path, the uncached server's
//! base URL and a file of the other users' tokens (one a line), and serves until interrupted.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use servio_manifest::period::{Granularity, resolve, zone};
use servio_platform::domain::accounts::secrets::{new_token, token_hash};
use servio_platform::router;
use servio_store::FetchedManifest;
use servio_store::testing::daily_slot;

/// The allocator `servio serve` runs on (crates/servio-cli): on glibc's malloc, the benchmark
/// measured an allocator the product does not use (a fifth of a render's CPU was malloc and free).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SITES: usize = 5;
const METRICS_PER_SITE: usize = 10;
const DAYS: i64 = 730;
/// Days of values of the uncached mode's users: the 62 the dashboard shows, and a week more.
const OTHER_DAYS: usize = 70;
const TIME_ZONE: &str = "UTC";

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let data_dir = std::path::PathBuf::from(args.next().ok_or("usage: dashboard_bench DATA_DIR [ADDR]")?);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?;
    runtime.block_on(run(&data_dir, &addr))
}

/// The manifest of bench site `n`: one tool, and a brief of revenue, orders and eight metrics
/// of its own.
fn manifest(n: usize) -> String {
    let mut metrics = vec![
        json!({ "key": "sales.revenue.daily", "tool": "shop.report", "args": { "from": "{{periodStart}}", "to": "{{periodEnd}}" },
                "valuePath": "data.revenue", "unit": "USD", "granularity": "day" }),
        json!({ "key": "sales.orders.daily", "tool": "shop.report", "args": { "from": "{{periodStart}}", "to": "{{periodEnd}}" },
                "valuePath": "data.orders", "unit": "count", "granularity": "day" }),
    ];
    for k in 0..METRICS_PER_SITE - 2 {
        metrics.push(json!({ "key": format!("shop{n}.metric{k}.daily"), "tool": "shop.report",
            "args": { "from": "{{periodStart}}", "to": "{{periodEnd}}" },
            "valuePath": format!("data.m{k}"), "unit": "count", "granularity": "day" }));
    }
    json!({
        "name": format!("Bench shop {n}"),
        "version": "1.0.0",
        "description": "A benchmark site.",
        "server": { "url": format!("https://shop{n}.bench.example/api/servio") },
        "auth": { "type": "bearer" },
        "tools": [{
            "name": "shop.report",
            "description": "Daily figures of the shop for a date range.",
            "input_schema": { "type": "object", "properties": {
                "from": { "type": "string", "description": "First local date" },
                "to": { "type": "string", "description": "Last local date" }
            }, "required": ["from", "to"] }
        }],
        "brief": { "metrics": metrics },
    })
    .to_string()
}

async fn run(data_dir: &std::path::Path, addr: &str) -> Result<(), String> {
    let started = Instant::now();
    std::fs::create_dir_all(data_dir).map_err(|e| format!("creating {}: {e}", data_dir.display()))?;
    let url = format!("sqlite:{}", data_dir.join("servio.db").display());
    let store = servio_store::open(&url).await.map_err(|e| format!("opening {url}: {e}"))?;
    let now = servio_platform::now();
    let other_users: usize = match std::env::var("USERS") {
        Ok(text) => text.parse().map_err(|e| format!("USERS {text:?}: {e}"))?,
        Err(_) => 64,
    };
    let user = store
        .create_user("bench@example.com", servio_platform::domain::accounts::secrets::decoy_hash(), TIME_ZONE, now)
        .await
        .map_err(|e| format!("creating the user (use a fresh DATA_DIR): {e}"))?;
    let mut others = Vec::new();
    let mut other_tokens = String::new();
    for n in 0..other_users {
        let email = format!("bench-{n}@example.com");
        let other = store
            .create_user(&email, servio_platform::domain::accounts::secrets::decoy_hash(), TIME_ZONE, now)
            .await
            .map_err(|e| format!("creating {email}: {e}"))?;
        let token = new_token("servio_").map_err(|e| e.to_string())?;
        store
            .create_api_token(
                other.id,
                "bench",
                &token_hash(&token),
                &servio_store::Grant::all_sites(servio_store::Scope::Ai),
                (now, 100),
            )
            .await
            .map_err(|e| e.to_string())?;
        other_tokens.push_str(&token);
        other_tokens.push('\n');
        others.push(other.id);
    }
    let token = new_token("servio_").map_err(|e| e.to_string())?;
    store
        .create_api_token(
            user.id,
            "bench",
            &token_hash(&token),
            &servio_store::Grant::all_sites(servio_store::Scope::Ai),
            (now, 1),
        )
        .await
        .map_err(|e| format!("the token: {e}"))?;
    // A browser session too, for the dashboard page.
    let cookie = new_token("s_").map_err(|e| e.to_string())?;
    let session = servio_store::Session {
        user_id: user.id,
        csrf_token: "bench".into(),
        expires_at: now + 86_400,
        idle_seconds: 86_400,
    };
    store.create_session(&token_hash(&cookie), &session, now).await.map_err(|e| format!("the session: {e}"))?;

    let mut sites = Vec::new();
    for n in 0..SITES {
        let text = manifest(n);
        let origin = format!("https://shop{n}.bench.example");
        let fetched = FetchedManifest {
            origin: &origin,
            manifest_url: &format!("{origin}/.well-known/servio.json"),
            manifest: &text,
            etag: None,
            last_modified: None,
        };
        let site = store.save_site(&fetched, now).await.map_err(|e| format!("saving {origin}: {e}"))?;
        store.add_to_vault(user.id, site.id, now).await.map_err(|e| format!("adding {origin}: {e}"))?;
        for other in &others {
            store.add_to_vault(*other, site.id, now).await.map_err(|e| format!("adding {origin}: {e}"))?;
        }
        let report = servio_manifest::check(text.as_bytes(), &servio_manifest::CheckOptions::default());
        let brief = report.brief.ok_or_else(|| format!("the bench manifest of {origin} has no valid brief"))?;
        sites.push((site.id, brief.metrics.into_iter().map(|m| m.key).collect::<Vec<_>>()));
    }
    eprintln!("{:>6.2} s  user, token and {SITES} sites", started.elapsed().as_secs_f64());

    // 730 days ending yesterday in the user's zone, so the newest 62 are on the dashboard.
    let zone = zone(TIME_ZONE).map_err(|e| e.to_string())?;
    let today = jiff::Timestamp::now().to_zoned_datetime(zone.clone()).date();
    let mut periods = Vec::new();
    for back in (1..=DAYS).rev() {
        let date = today.checked_sub(jiff::Span::new().days(back)).map_err(|e| e.to_string())?;
        let period = resolve(Granularity::Day, date, 0, &zone).map_err(|e| e.to_string())?;
        periods.push((period.start.as_second(), period.end.as_second(), date.to_string()));
    }
    let mut values = Vec::new();
    let recent = periods.len() - OTHER_DAYS;
    let owners = std::iter::once((user.id, 0)).chain(others.iter().map(|other| (*other, recent)));
    for (user_id, first_day) in owners {
        for (site_index, (site_id, keys)) in sites.iter().enumerate() {
            for (metric_index, key) in keys.iter().enumerate() {
                for (day, (start, end, date)) in periods.iter().enumerate().skip(first_day) {
                    let slot = daily_slot(user_id, *site_id, key, (*start, *end), date);
                    // Deterministic, varied figures with cents.
                    let value = ((day * 37 + metric_index * 101 + site_index * 13) % 5_000) as f64 + 0.25;
                    values.push((slot, value, "seeded"));
                }
            }
        }
    }
    // A few transactions of 5,000 rather than one, so progress shows while seeding.
    for (i, chunk) in values.chunks(5_000).enumerate() {
        store.store_values(chunk, now).await.map_err(|e| format!("seeding values: {e}"))?;
        eprintln!(
            "{:>6.2} s  {} of {} values stored",
            started.elapsed().as_secs_f64(),
            (i * 5_000 + chunk.len()),
            values.len()
        );
    }

    let client = servio_client::Client::new(servio_client::ClientConfig::default()).map_err(|e| e.to_string())?;
    let state = servio_platform::testing::state(Arc::from(store), client, "http://127.0.0.1");
    let static_path = data_dir.join("dashboard.json");
    // The same platform with no dashboard kept: every request renders.
    let mut uncached = state.clone();
    uncached.dashboards = Arc::new(servio_platform::cache::rendered::DashboardCache::new(0));
    let app = router(state).route_service("/static/dashboard.json", tower_http::services::ServeFile::new(&static_path));
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("listening on {addr}: {e}"))?;
    let base = format!("http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    let server = tokio::spawn(async move { axum::serve(servio_platform::no_delay(listener), app).await });
    let uncached_listener =
        tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| format!("listening for the uncached: {e}"))?;
    let uncached_base = format!("http://{}", uncached_listener.local_addr().map_err(|e| e.to_string())?);
    let uncached_app = router(uncached);
    tokio::spawn(async move { axum::serve(servio_platform::no_delay(uncached_listener), uncached_app).await });
    let tokens_path = data_dir.join("tokens.txt");
    std::fs::write(&tokens_path, other_tokens).map_err(|e| format!("writing {}: {e}", tokens_path.display()))?;

    // The baseline holds exactly what the API answers.
    let response = reqwest::Client::new()
        .get(format!("{base}/api/dashboard"))
        .bearer_auth(&token)
        .send()
        .await
        .map_err(|e| format!("GET /api/dashboard: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET /api/dashboard answered {}", response.status()));
    }
    let body = response.bytes().await.map_err(|e| format!("reading /api/dashboard: {e}"))?;
    std::fs::write(&static_path, &body).map_err(|e| format!("writing {}: {e}", static_path.display()))?;
    eprintln!("{:>6.2} s  serving; the dashboard is {} bytes", started.elapsed().as_secs_f64(), body.len());
    println!(
        "READY {}",
        json!({ "base": base, "token": token, "cookie": cookie, "static": "/static/dashboard.json", "bytes": body.len(),
                "uncached": uncached_base, "tokens": tokens_path })
    );

    tokio::select! {
        result = server => result.map_err(|e| e.to_string())?.map_err(|e| format!("serving: {e}")),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
