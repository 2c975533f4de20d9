//! Issue 25, point 4: the call log is bounded. MCP calls with a 3 MiB unknown tool name wrote
//! 1.0 GB in 20 s, and reading the log back took the server to 3.4 GB. Now an MCP request's
//! body is bounded (2 MiB, `413`), a logged tool name is cut to 256 bytes with its length, and
//! the log is read in pages of 200 calls at most.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;

use super::harness::{Backend, Platform, SITE_TOKEN, User, start_site, within};

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
        let before = stored_bytes(&platform).await;

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
        let grown = stored_bytes(&platform).await.saturating_sub(before);
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

/// The bytes the platform's database holds now: the data directory on SQLite, the database's
/// size on PostgreSQL (each platform has a schema of its own there, but only this test writes
/// to it while it runs).
async fn stored_bytes(platform: &Platform) -> u64 {
    match &platform.backend {
        Backend::Sqlite => platform.data_bytes(),
        Backend::Postgres(url) => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            let size: i64 = sqlx::query_scalar(
                "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::BIGINT FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            pool.close().await;
            size as u64
        }
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
