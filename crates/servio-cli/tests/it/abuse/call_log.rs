//! Issue 25, point 4: the call log is bounded. MCP calls with a 3 MiB unknown tool name wrote
//! 1.0 GB in 20 s, and reading the log back took the server to 3.4 GB. Now an MCP request's
//! body is bounded (2 MiB, `413`), a logged tool name is cut to 256 bytes with its length, and
//! the log is read in pages of 200 calls at most.
//!
//! Issue 41, finding 7: 151,000 calls to unknown tools in 20 s added a GiB on disk and 1.6 GiB
//! in the log writer's unbounded queue. Now each user's gateway calls and the bytes they log
//! are limited, and the queue is bounded (what it cannot hold is dropped and counted).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;

use super::harness::{Backend, Platform, SITE_TOKEN, User, WithMetrics, start_site, within};

/// A 3 MiB name, over the MCP body's bound, and a 1.5 MiB one under it.
const HUGE: usize = 3 * 1024 * 1024;
const LARGE: usize = 1536 * 1024;
/// A name in a URL's path: 60 KiB, about as long as a URI may be (the `http` crate's bound).
const PATH_NAME: usize = 60 * 1024;
/// Calls of each kind.
const CALLS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_tool_names_neither_fill_the_disk_nor_the_memory() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let user = platform.user(&format!("names-{}@example.com", backend.name())).await;
        platform.add_site(&user, &site).await;
        let (status, _) =
            platform.send(&user, Method::PUT, "/api/me/log_arguments", Some(json!({ "log_arguments": true }))).await;
        assert_eq!(status, 200);
        let session = mcp_session(&platform, &user).await;
        let before = platform.stored_bytes().await;

        within(&platform, "calling unknown tools with huge names", Duration::from_secs(120), async {
            for i in 0..CALLS {
                for size in [HUGE, LARGE] {
                    let name = format!("{i}{}", "x".repeat(size));
                    let answer = mcp_call(&platform, &user, &session, &name).await;
                    match answer {
                        // Over the bound: refused before anything is read or logged (or the
                        // connection closed on the rest of the body after the 413).
                        Err(_) => assert_eq!(size, HUGE),
                        Ok((413, _)) => assert_eq!(size, HUGE),
                        Ok((status, body)) => {
                            assert!(status < 500, "{status}");
                            assert!(body.len() < 64 * 1024, "the error echoes the name cut: {} bytes", body.len());
                        }
                    }
                }
                // The plain HTTP gateway: the name in the path, as long as a URI may be.
                let name = format!("{i}{}", "x".repeat(PATH_NAME));
                let url = format!("{}/api/tools/{name}/call", platform.url);
                let response = platform.http.post(url).bearer_auth(&user.token).json(&json!({})).send().await.unwrap();
                assert_eq!(response.status(), 404, "an unknown tool");
                let body = response.bytes().await.unwrap();
                assert!(body.len() < 64 * 1024, "the error echoes the name cut: {} bytes", body.len());
            }
        })
        .await;

        // Let the log's writer catch up: the last call is logged.
        let mut logged = Value::Null;
        for _ in 0..100 {
            logged = log_page(&platform, &user, "limit=200").await;
            if logged["calls"].as_array().is_some_and(|calls| calls.len() >= 2 * CALLS) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let grown = platform.stored_bytes().await.saturating_sub(before);
        // Uncut, the 1.5 MiB names alone are 30 MiB (the 3 MiB ones 60 MiB more, the paths' 1.2).
        assert!(grown < 8 * 1024 * 1024, "{}: the log grew by {grown} bytes", backend.name());
        let calls = logged["calls"].as_array().unwrap();
        assert!(calls.iter().all(|c| c["tool"].as_str().unwrap().len() < 512), "names are kept cut");
        let large = format!("… ({} bytes)", LARGE + 1);
        assert!(calls.iter().any(|c| c["tool"].as_str().unwrap().ends_with(&large)), "a cut name says its length");

        // Reading the log back many times over: memory stays put, and the page has a bound.
        let rss_before = platform.rss_kib();
        within(&platform, "reading the call log back", Duration::from_secs(60), async {
            for _ in 0..20 {
                log_page(&platform, &user, "limit=200").await;
            }
        })
        .await;
        let grown_kib = platform.rss_kib().saturating_sub(rss_before);
        assert!(grown_kib < 200 * 1024, "{}: reading the log grew memory by {grown_kib} KiB", backend.name());
        let (status, refused) = platform.send(&user, Method::GET, "/api/tool-calls?limit=100000", None).await;
        assert_eq!(status, 400, "{refused}");
        let first = log_page(&platform, &user, "limit=10").await;
        let next = first["next_before"].as_i64().expect("a full page names the next");
        let older = log_page(&platform, &user, &format!("limit=200&before={next}")).await;
        assert!(older["calls"].as_array().unwrap().iter().all(|c| c["id"].as_i64().unwrap() < next));
    }
}

/// A page of `user`'s call log.
async fn log_page(platform: &Platform, user: &User, query: &str) -> Value {
    let (status, page) = platform.send(user, Method::GET, &format!("/api/tool-calls?{query}"), None).await;
    assert_eq!(status, 200, "{page}");
    page
}

/// An MCP session of `user`'s, initialised.
async fn mcp_session(platform: &Platform, user: &User) -> String {
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "abuse", "version": "0" } } });
    let (status, session, _) =
        servio_platform::testing::mcp_post(&platform.http, &platform.url, &user.token, None, &initialize).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    servio_platform::testing::mcp_post(&platform.http, &platform.url, &user.token, Some(&session), &initialized).await;
    session
}

/// `tools/call` of `name` on `session`: the status and body, or the error when the connection
/// ended before an answer.
async fn mcp_call(
    platform: &Platform,
    user: &User,
    session: &str,
    name: &str,
) -> Result<(u16, Vec<u8>), reqwest::Error> {
    let message =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": name, "arguments": {} } });
    let response = platform
        .http
        .post(format!("{}/mcp", platform.url))
        .bearer_auth(&user.token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", servio_platform::testing::MCP_VERSION)
        .json(&message)
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.bytes().await?.to_vec()))
}

/// Issue 41, finding 7: 151,000 calls to unknown tools in 20 s through the gateway added a GiB
/// on disk and 1.6 GiB of memory, held in the log writer's unbounded queue. One user's calls
/// are now limited (300 at once, then 300 a minute): the same loop, over HTTP and MCP at once,
/// is refused past them with `429` and `Retry-After` (MCP: an error saying so), logs no more
/// than the limit lets through, and another user's calls go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unknown_tools_is_refused_past_the_users_limit() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let name = backend.name();
        let platform = Arc::new(WithMetrics::start(&backend, &site, &[]).await);
        let ana = Arc::new(platform.user(&format!("flood-ana-{name}@example.com")).await);
        let bob = Arc::new(platform.user(&format!("flood-bob-{name}@example.com")).await);
        platform.add_site(&bob, &site).await;
        // A session per worker: a session's requests are told apart by their ids.
        let mut sessions = Vec::new();
        for _ in 0..FLOODERS {
            sessions.push(mcp_session(&platform, &ana).await);
        }
        let tool = servio_manifest::Site::parse(&site.origin).unwrap().prefixed_name("shop.getSalesSummary");
        let before = platform.stored_bytes().await;
        let rss_before = platform.rss_kib();

        let started = Instant::now();
        let (outcomes, bobs) =
            within(&platform, "one user's flood of unknown tools", Duration::from_secs(120), async {
                let bobs = tokio::spawn(calls_of_another_user(platform.clone(), bob.clone(), tool.clone(), FLOOD_FOR));
                let floods = sessions.iter().enumerate().map(|(worker, session)| {
                    let (platform, ana, session) = (platform.clone(), ana.clone(), session.clone());
                    tokio::spawn(async move { flood(&platform, &ana, &session, worker).await })
                });
                let mut outcomes = Outcomes::default();
                for each in futures_util::future::join_all(floods).await {
                    outcomes.add(each.unwrap());
                }
                (outcomes, bobs.await.unwrap())
            })
            .await;
        let took = started.elapsed();
        eprintln!("{name}: {outcomes:?} in {took:?}; bob's calls: {bobs:?}");
        let worst = bobs.iter().max().copied().unwrap_or_default();
        assert!(!bobs.is_empty() && worst < Duration::from_secs(5), "{name}: bob's calls took up to {worst:?}");

        // What the limit lets through: 300 at once, then one every 200 ms; a little more for
        // the time the last requests took.
        let allowed = 300 + (took.as_secs_f64() / 0.2).ceil() as usize + 5;
        assert!(outcomes.refused > 0, "{name}: nothing was refused: {outcomes:?}");
        assert!(outcomes.logged() <= allowed, "{name}: {} calls went through (at most {allowed})", outcomes.logged());
        let retry_after = outcomes.retry_after.unwrap_or_else(|| panic!("{name}: an HTTP 429 without Retry-After"));
        assert!(retry_after >= 1, "{name}");
        assert!(outcomes.mcp_refused > 0, "{name}: MCP says so: {outcomes:?}");

        // On disk: the calls let through, no more (the writer catches up first).
        let store = platform.store().await;
        let ana_id = store.user_by_email(&ana.email).await.unwrap().unwrap().id;
        let rows = settled_rows(store.as_ref(), ana_id).await;
        assert!(rows <= allowed, "{name}: {rows} entries on disk (at most {allowed})");
        let grown = platform.stored_bytes().await.saturating_sub(before);
        eprintln!("{name}: {rows} entries, the database grew by {} KiB", grown / 1024);
        assert!(grown < 4 * 1024 * 1024, "{name}: the database grew by {grown} bytes");
        let grown_kib = platform.rss_kib().saturating_sub(rss_before);
        eprintln!("{name}: memory grew by {} MiB", grown_kib / 1024);
        assert!(grown_kib < 64 * 1024, "{name}: the flood grew memory by {grown_kib} KiB");
        // One user's calls never filled the queue before the log.
        assert_eq!(platform.metric("servio_call_log_dropped_total").await, 0.0, "{name}");
    }
}

/// Issue 41, finding 7: what cannot be queued for the call log is not held. While the
/// database refuses to write the log (a lock held, as a stalled disk or a long migration
/// would), users within their own limits fill the queue before the writer: it holds 16 MiB
/// at most, drops the rest without making a request wait, counts each in
/// `servio_call_log_dropped_total` and says so in a warning at most every 10 s; another user's
/// call still works, and once the database writes again only what was queued reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_call_log_holds_its_bound_and_counts_what_it_drops() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let name = backend.name();
        let platform = Arc::new(WithMetrics::start(&backend, &site, &[]).await);
        let carl = platform.user(&format!("stall-carl-{name}@example.com")).await;
        platform.add_site(&carl, &site).await;
        let tool = servio_manifest::Site::parse(&site.origin).unwrap().prefixed_name("shop.getSalesSummary");
        let args = json!({ "from": "2026-08-20", "to": "2026-08-20" });
        let store = platform.store().await;
        let users = loggers(store.as_ref(), name).await;
        // Each token's first use is written (once a minute): before the database is locked.
        for (_, token) in &users {
            assert_eq!(http_call(&platform, token, "warm_up", &json!({})).await.0, 404);
        }
        assert_eq!(http_call(&platform, &carl.token, &tool, &args).await.0, 200);
        let rows_before = settled_total_rows(store.as_ref(), &users).await;
        let rss_before = platform.rss_kib();
        let lock = Lock::take(&platform).await;

        let started = Instant::now();
        let statuses = within(&platform, "filling a stalled call log", Duration::from_secs(180), async {
            let calls = users.iter().flat_map(|(_, token)| (0..LOGGER_CALLS).map(move |i| (token.clone(), i)));
            let statuses: Vec<u16> = futures_util::stream::iter(calls)
                .map(|(token, i)| {
                    let platform = platform.clone();
                    async move {
                        let arguments = json!({ "note": "x".repeat(LOGGED_ARGUMENTS - 100), "i": i });
                        http_call(&platform, &token, &format!("nothing_{i}"), &arguments).await.0
                    }
                })
                .buffer_unordered(FLOODERS)
                .collect()
                .await;
            // Carl's call goes through while the log is full: it waits for no queue.
            let (status, body) = http_call(&platform, &carl.token, &tool, &args).await;
            assert_eq!(status, 200, "{name}: {body}");
            statuses
        })
        .await;
        let took = started.elapsed();
        let let_through = statuses.iter().filter(|status| **status == 404).count();
        assert!(statuses.iter().all(|status| [404, 429].contains(status)), "{name}: {statuses:?}");
        let dropped = platform.metric("servio_call_log_dropped_total").await;
        eprintln!("{name}: {let_through} calls let through in {took:?}, {dropped} log entries dropped");
        assert!(dropped > 0.0, "{name}: nothing dropped: the queue held every entry");
        let grown_kib = platform.rss_kib().saturating_sub(rss_before);
        eprintln!("{name}: memory grew by {} MiB while the log was stalled", grown_kib / 1024);
        assert!(grown_kib < 64 * 1024, "{name}: a stalled log grew memory by {grown_kib} KiB");
        // Said, but not once per entry.
        let warnings = platform.log_text().matches("the call log's queue is full").count();
        let most = 2 + (took.as_secs() / 10) as usize;
        assert!((1..=most).contains(&warnings), "{name}: {warnings} warnings in {took:?}");

        lock.release().await;
        let rows = settled_total_rows(store.as_ref(), &users).await - rows_before;
        // 16 MiB of entries of 16.5 KiB at least (their arguments and 256 bytes): 1,013 at most,
        // the batch the writer held included.
        eprintln!("{name}: {rows} of {let_through} entries reached the database");
        assert!(rows <= 1_013, "{name}: {rows} entries written, more than the queue holds");
        assert!(rows as f64 + dropped >= let_through as f64, "{name}: every entry written or counted");
    }
}

/// How long one user floods, and with how many requests at once.
const FLOOD_FOR: Duration = Duration::from_secs(10);
const FLOODERS: usize = 16;
/// Users who keep their calls' arguments, and the calls each makes with 16 KiB of them: each
/// entry may weigh 17.5 KiB, so their log limit (4 MiB at once) lets some 230 through, and
/// their entries together are twice what the queue holds.
const LOGGERS: usize = 8;
const LOGGER_CALLS: usize = 240;
/// The most bytes of a call's arguments the log keeps.
const LOGGED_ARGUMENTS: usize = 16 * 1024;

/// What one flooding worker's calls came to.
#[derive(Debug, Default)]
struct Outcomes {
    /// Unknown tools answered over HTTP (`404`) and MCP (invalid params): let through, logged.
    http_unknown: usize,
    mcp_unknown: usize,
    /// Refused: `429` over HTTP, and MCP's error.
    refused: usize,
    mcp_refused: usize,
    /// A `429`'s `Retry-After`.
    retry_after: Option<u64>,
}

impl Outcomes {
    fn logged(&self) -> usize {
        self.http_unknown + self.mcp_unknown
    }

    fn add(&mut self, other: Outcomes) {
        self.http_unknown += other.http_unknown;
        self.mcp_unknown += other.mcp_unknown;
        self.refused += other.refused;
        self.mcp_refused += other.mcp_refused;
        self.retry_after = self.retry_after.or(other.retry_after);
    }
}

/// Calls unknown tools as `user` for [`FLOOD_FOR`], every other one over MCP.
async fn flood(platform: &Platform, user: &User, session: &str, worker: usize) -> Outcomes {
    let mut outcomes = Outcomes::default();
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < FLOOD_FOR {
        n += 1;
        let name = format!("unknown_{worker}_{n}");
        if n % 2 == 0 {
            let (status, body) = mcp_call(platform, user, session, &name).await.unwrap();
            let text = String::from_utf8_lossy(&body);
            assert_eq!(status, 200, "{text}");
            if text.contains("too many gateway calls") {
                outcomes.mcp_refused += 1;
                outcomes.refused += 1;
            } else {
                assert!(text.contains("no tool named"), "{text}");
                outcomes.mcp_unknown += 1;
            }
            continue;
        }
        let url = format!("{}/api/tools/{name}/call", platform.url);
        let response = platform.http.post(url).bearer_auth(&user.token).json(&json!({})).send().await.unwrap();
        match response.status().as_u16() {
            404 => outcomes.http_unknown += 1,
            429 => {
                outcomes.refused += 1;
                let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
                outcomes.retry_after = outcomes.retry_after.or(retry_after);
            }
            other => panic!("{other}: {}", response.text().await.unwrap()),
        }
    }
    outcomes
}

/// Calls `tool` as `user` every 500 ms for `during`; answers how long each took, asserting
/// each worked.
async fn calls_of_another_user(
    platform: Arc<WithMetrics>,
    user: Arc<User>,
    tool: String,
    during: Duration,
) -> Vec<Duration> {
    let args = json!({ "from": "2026-08-20", "to": "2026-08-20" });
    let started = Instant::now();
    let mut took = Vec::new();
    while started.elapsed() < during {
        let asked = Instant::now();
        let (status, body) = http_call(&platform, &user.token, &tool, &args).await;
        assert_eq!(status, 200, "another user's call: {body}");
        took.push(asked.elapsed());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    took
}

/// `POST /api/tools/{name}/call` with `token`: the status and the start of the body.
async fn http_call(platform: &Platform, token: &str, name: &str, args: &Value) -> (u16, String) {
    let url = format!("{}/api/tools/{name}/call", platform.url);
    let response = platform.http.post(url).bearer_auth(token).json(args).send().await.unwrap();
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    (status, body.chars().take(300).collect())
}

/// [`LOGGERS`] users who keep their calls' arguments, made through the store (sign-up is rate
/// limited per address): their ids and API tokens.
async fn loggers(store: &dyn servio_store::Store, backend: &str) -> Vec<(i64, String)> {
    let mut users = Vec::new();
    for n in 0..LOGGERS {
        let email = format!("logger-{n}-{backend}@example.com");
        let (user, token) = super::harness::stored_user(store, &email).await;
        store.set_log_arguments(user.id, true).await.unwrap();
        users.push((user.id, token));
    }
    users
}

/// The entries of `user_id`'s call log in the store.
async fn rows_of(store: &dyn servio_store::Store, user_id: i64) -> usize {
    let page = servio_store::CallPage { before: None, limit: 100_000 };
    store.tool_calls(user_id, page).await.unwrap().len()
}

async fn total_rows(store: &dyn servio_store::Store, users: &[(i64, String)]) -> usize {
    let mut total = 0;
    for (user_id, _) in users {
        total += rows_of(store, *user_id).await;
    }
    total
}

/// [`rows_of`] once the writer has caught up: the count stays the same for a second.
async fn settled_rows(store: &dyn servio_store::Store, user_id: i64) -> usize {
    settled(|| rows_of(store, user_id)).await
}

async fn settled_total_rows(store: &dyn servio_store::Store, users: &[(i64, String)]) -> usize {
    settled(|| total_rows(store, users)).await
}

async fn settled<F: Future<Output = usize>>(count: impl Fn() -> F) -> usize {
    let started = Instant::now();
    let mut last = count().await;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = count().await;
        if now == last || started.elapsed() > Duration::from_secs(90) {
            return now;
        }
        last = now;
    }
}

/// A lock on the platform's call log, taken from outside the process: PostgreSQL's table lock
/// (inserts wait for it), or SQLite's write lock on the file (writes wait, then fail).
enum Lock {
    Postgres(sqlx::PgConnection),
    Sqlite(sqlx::SqliteConnection),
}

impl Lock {
    async fn take(platform: &Platform) -> Lock {
        use sqlx::Connection;
        match &platform.backend {
            Backend::Postgres(url) => {
                let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query("BEGIN").execute(&mut connection).await.unwrap();
                sqlx::query("LOCK TABLE tool_calls IN SHARE MODE").execute(&mut connection).await.unwrap();
                Lock::Postgres(connection)
            }
            Backend::Sqlite => {
                let path = platform.data_dir.join("servio.db");
                let mut connection =
                    sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display())).await.unwrap();
                sqlx::query("BEGIN IMMEDIATE").execute(&mut connection).await.unwrap();
                Lock::Sqlite(connection)
            }
        }
    }

    async fn release(self) {
        match self {
            Lock::Postgres(mut connection) => {
                sqlx::query("ROLLBACK").execute(&mut connection).await.unwrap();
            }
            Lock::Sqlite(mut connection) => {
                sqlx::query("ROLLBACK").execute(&mut connection).await.unwrap();
            }
        }
    }
}
