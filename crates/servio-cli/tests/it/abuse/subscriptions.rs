//! Issue 41, finding 9: what MCP clients watch was kept as sent. A `resources/subscribe` of a
//! metric's address padded to megabytes (the site's name with spaces before it reads as the
//! same site) was kept whole, 11 MiB a subscription; a 2026-07-28 `subscriptions/listen`
//! stream's filter kept 1,000 addresses of any length, 800 KiB a stream and 78 MiB an account.
//! Here one user sends both, padded, from many sessions and streams at once: every one is
//! refused with an error naming the bound (512 bytes an address), the memory stays put while
//! the legitimate sessions and streams of the same user stay open and watched, another user's
//! call goes on, and `/healthz` answers within a second.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;
use servio_platform::testing::mcp_post;

use super::harness::{Backend, Platform, SITE_TOKEN, User, start_site, within};

/// Sessions that subscribe to padded addresses, and how many each asks for.
const SESSIONS: usize = 20;
const SUBSCRIBES: usize = 5;
/// Listen streams asked for with a filter of padded addresses.
const STREAMS: usize = 30;
/// How long a padded address is: 1.5 MiB, under the 2 MiB body bound.
const PADDED: usize = 1536 * 1024;
/// A listen filter's addresses (the most one may name) and each one's padding: 1.5 MiB in all.
const FILTER_ADDRESSES: usize = 1000;
const FILTER_PADDING: usize = 1500;
/// Legitimate sessions and streams the user keeps open meanwhile.
const KEPT: usize = 20;
/// How much the platform's memory may grow: what the kept sessions and streams hold, and the
/// allocator's slack after megabytes of requests. Kept as sent, the padded addresses alone
/// would hold 150 MiB (the sessions') and 135 MiB (the streams', three copies each).
const GROWTH_KIB: u64 = 48 * 1024;
/// Requests in flight at once.
const CONCURRENCY: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn padded_subscriptions_and_listen_filters_are_refused_with_their_bound() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    let authority = site.origin.trim_start_matches("https://").to_owned();
    let revenue = format!("servio://metrics/{authority}/sales.revenue.daily");
    let orders = format!("servio://metrics/{authority}/sales.orders.daily");
    for backend in Backend::all().await {
        let name = backend.name();
        let platform = Arc::new(Platform::start(&backend, &site, &[]).await);
        let ana = Arc::new(platform.user(&format!("watch-ana-{name}@example.com")).await);
        platform.add_site(&ana, &site).await;
        let bob = platform.user(&format!("watch-bob-{name}@example.com")).await;
        platform.add_site(&bob, &site).await;
        // Warm up: a session subscribed and a stream listening, as every later one will be.
        let warm = session(&platform, &ana).await;
        assert!(subscribe(&platform, &ana, (&warm, 2), &revenue).await.get("result").is_some(), "{name}");
        let _warm_stream = listen(&platform, &ana, &[revenue.clone(), orders.clone()]).await.unwrap();
        let before = platform.rss_kib();

        let kept = within(&platform, "padded subscriptions and filters", Duration::from_secs(180), async {
            let mut sessions = Vec::new();
            for _ in 0..SESSIONS {
                sessions.push(session(&platform, &ana).await);
            }
            let asks = sessions.iter().flat_map(|session| (0..SUBSCRIBES).map(move |i| (session.clone(), i)));
            futures_util::stream::iter(asks)
                .for_each_concurrent(CONCURRENCY, |(session, i)| {
                    let (platform, ana) = (platform.clone(), ana.clone());
                    // The site with spaces before it names the same site; each address differs.
                    let padded = format!("servio://metrics/{}{authority}/sales.revenue.daily", " ".repeat(PADDED + i));
                    async move {
                        let answer = subscribe(&platform, &ana, (&session, 2 + i), &padded).await;
                        let message = answer["error"]["message"].as_str().unwrap_or_default();
                        assert!(message.contains("at most 512 bytes"), "{name}: a padded subscription: {answer}");
                    }
                })
                .await;
            let filter: Vec<String> = (0..FILTER_ADDRESSES)
                .map(|i| format!("servio://metrics/{}{authority}/sales.revenue{i}.daily", " ".repeat(FILTER_PADDING)))
                .collect();
            let filter = Arc::new(filter);
            futures_util::stream::iter(0..STREAMS)
                .for_each_concurrent(CONCURRENCY, |_| {
                    let (platform, ana, filter) = (platform.clone(), ana.clone(), filter.clone());
                    async move {
                        let Err(error) = listen(&platform, &ana, &filter).await else {
                            panic!("{name}: a padded filter was acknowledged")
                        };
                        let message = error["message"].as_str().unwrap_or_default();
                        assert!(message.contains("at most 512 bytes"), "{name}: {error}");
                    }
                })
                .await;
            // The user's legitimate sessions and streams, kept open while memory is measured.
            let mut kept = Vec::new();
            for _ in 0..KEPT {
                let session = session(&platform, &ana).await;
                for address in [&revenue, &orders] {
                    let answer = subscribe(&platform, &ana, (&session, 2), address).await;
                    assert!(answer.get("result").is_some(), "{name}: {answer}");
                }
                kept.push(listen(&platform, &ana, &[revenue.clone(), orders.clone()]).await.unwrap());
            }
            kept
        })
        .await;
        let grown = platform.rss_kib().saturating_sub(before);
        eprintln!("{name}: padded subscriptions and filters grew the platform by {} MiB", grown / 1024);
        assert!(grown < GROWTH_KIB, "{name}: padded subscriptions and filters grew the platform by {grown} KiB");
        assert_eq!(kept.len(), KEPT, "{name}");

        // Another user's call goes on.
        let tool = servio_manifest::Site::parse(&site.origin).unwrap().prefixed_name("shop.getSalesSummary");
        let url = format!("{}/api/tools/{tool}/call", platform.url);
        let args = json!({ "from": "2026-08-20", "to": "2026-08-20" });
        let answer = platform.http.post(url).bearer_auth(&bob.token).json(&args).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{name}: {}", answer.text().await.unwrap());
    }
}

/// A session of `user`'s (2025-06-18), initialised.
async fn session(platform: &Platform, user: &User) -> String {
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": servio_platform::testing::MCP_VERSION, "capabilities": {},
        "clientInfo": { "name": "abuse", "version": "0" } } });
    let (status, session, _) = mcp_post(&platform.http, &platform.url, &user.token, None, &initialize).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    mcp_post(&platform.http, &platform.url, &user.token, Some(&session), &initialized).await;
    session
}

/// The answer to `resources/subscribe` of `uri` on `session`, as request `id` (a session's
/// requests in flight at once are told apart by their ids).
async fn subscribe(platform: &Platform, user: &User, (session, id): (&str, usize), uri: &str) -> Value {
    let message = json!({ "jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": { "uri": uri } });
    let (status, _, messages) = mcp_post(&platform.http, &platform.url, &user.token, Some(session), &message).await;
    assert_eq!(status, 200);
    messages.into_iter().find(|m| m["id"] == id).expect("an answer to resources/subscribe")
}

/// A `subscriptions/listen` stream (2026-07-28) watching `addresses`, once acknowledged; or
/// the error it was answered with.
async fn listen(platform: &Platform, user: &User, addresses: &[String]) -> Result<reqwest::Response, Value> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "abuse", "version": "0" },
    });
    let params = json!({ "notifications": { "resourceSubscriptions": addresses }, "_meta": meta });
    let mut response = platform
        .http
        .post(format!("{}/mcp", platform.url))
        .bearer_auth(&user.token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    let acknowledged = "notifications/subscriptions/acknowledged";
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = response.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains(acknowledged) || text.trim_start().starts_with('{') && text.trim_end().ends_with('}') {
                return;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to subscriptions/listen: {text}");
    if text.contains(acknowledged) {
        return Ok(response);
    }
    let answer: Value = serde_json::from_str(text.trim()).unwrap_or_else(|_| panic!("{text}"));
    Err(answer["error"].clone())
}
