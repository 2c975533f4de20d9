//! Several `servio serve` processes on one PostgreSQL database, as two platforms in this test
//! sharing one schema, each hearing the other's notices: an MCP session opened on one is served
//! by the other (restored from the store, and still only for its owner), and a change of a
//! user's catalogue made through one is announced to the user's MCP stream held by the other.
//! Without `SERVIO_TEST_DATABASE_URL` the test says it is skipped and passes.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use servio_platform::testing::{Server, client, serve, state};

use crate::common;

/// Two platforms on one fresh schema, each listening to the other's notices.
async fn two_processes(url: &str) -> [Server; 2] {
    two_processes_trusting(url, None).await
}

/// [`two_processes`], reaching sites whose certificates `ca_pem` issued.
async fn two_processes_trusting(url: &str, ca_pem: Option<&str>) -> [Server; 2] {
    let stores = servio_store::testing::postgres_sharing(url, 2).await;
    let mut servers = Vec::new();
    for store in stores {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = state(Arc::new(store), client(ca_pem), &base);
        serve(listener, state.clone());
        tokio::spawn(servio_platform::notices::hear_other_processes(state.clone()));
        servers.push(Server { base, http: reqwest::Client::new(), state });
    }
    servers.try_into().unwrap_or_else(|_| unreachable!())
}

/// The user id and an API token of `email`, signed up on `server`.
async fn user_and_token(server: &Server, email: &str) -> (i64, String) {
    let token = common::token_of(server, email).await;
    let user = server.state.store.user_by_email(email).await.unwrap().expect("signed up");
    (user.id, token)
}

/// The shared database's URL, or `None` (the test is skipped) without one.
fn shared_database() -> Option<String> {
    servio_store::testing::postgres_url()
}

async fn list_tools(server: &Server, token: &str, session: &str) -> (StatusCode, String) {
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let response = common::mcp(server, Method::POST, token, Some(session)).json(&list).send().await.unwrap();
    (response.status(), response.text().await.unwrap())
}

#[tokio::test]
async fn a_session_opened_on_one_process_is_served_by_another_for_its_owner_only() {
    let Some(url) = shared_database() else { return };
    let [one, other] = two_processes(&url).await;
    let (_, ana) = user_and_token(&one, "ana-processes@example.com").await;
    let (_, ben) = user_and_token(&one, "ben-processes@example.com").await;
    let session = common::open_session(&one, &ana).await;

    let (status, listed) = list_tools(&other, &ana, &session).await;
    assert_eq!(status, StatusCode::OK, "the other process serves the session: {listed}");
    assert!(listed.contains("\"tools\""), "{listed}");
    let (status, _) = list_tools(&other, &ben, &session).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another user's token finds no session there either");
    let (status, _) = list_tools(&one, &ana, &session).await;
    assert_eq!(status, StatusCode::OK, "and the first process still serves it");

    // Ended through one process, the session is gone from the store: a third process could
    // not take it over (the first keeps it in memory, for its owner, until it idles out).
    let ended = common::mcp(&other, Method::DELETE, &ana, Some(&session)).send().await.unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    assert_eq!(other.state.store.mcp_session(&session).await.unwrap(), None);
}

#[tokio::test]
async fn a_change_made_through_one_process_reaches_the_mcp_stream_held_by_another() {
    let Some(url) = shared_database() else { return };
    let [holder, changer] = two_processes(&url).await;
    let (user_id, token) = user_and_token(&holder, "cai-processes@example.com").await;
    let mut stream = common::listen(&holder, &token).await;

    // What a vault change on the other process does (adding, removing or approving a site).
    changer.state.notices.told(&[servio_store::Change::Catalogue(user_id)]);
    let mut seen = String::new();
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("notifications/tools/list_changed") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard.ok(), Some(true), "the holder's stream heard the change; it got: {seen:?}");
}

/// Values stored through one process (a real collection there, not a notice sent by hand:
/// issue 43, point 2) drop the dashboard another keeps.
#[tokio::test]
async fn values_stored_through_one_process_drop_the_dashboard_another_keeps() {
    let Some(url) = shared_database() else { return };
    let ca = servio_demo_site::LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "dee").await;
    let [keeper, collector] = two_processes_trusting(&url, Some(&ca.ca_pem)).await;
    let (dee, id) = keeper.sign_up_with_site("dee-processes@example.com", &demo.origin, "dee").await;
    let user_id = dee.user_id.unwrap();
    let (status, _, _) = keeper.send(&dee, Method::GET, "/api/dashboard", None).await;
    assert_eq!(status, StatusCode::OK);
    let days = servio_platform::domain::dashboard::DEFAULT_DAYS;
    assert!(keeper.state.dashboards.get(user_id, &days).is_some(), "kept after the first answer");

    // Collected now through the other process: its store tells the values, its notices
    // announce them.
    let (status, collected, _) = collector.send(&dee, Method::POST, &format!("/api/vault/{id}/collect"), None).await;
    assert_eq!((status, collected["failed"].as_u64()), (StatusCode::OK, Some(0)), "{collected}");
    assert!(collected["stored"].as_u64().unwrap_or_default() > 0, "{collected}");
    let started = std::time::Instant::now();
    while keeper.state.dashboards.get(user_id, &days).is_some() {
        assert!(started.elapsed() < Duration::from_secs(10), "the keeper still keeps the old dashboard");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Issue 24: revoking an API token through one process ends the MCP stream another process
/// holds for it, and that stream hears none of the user's later changes.
#[tokio::test]
async fn a_token_revoked_through_one_process_ends_the_stream_another_holds() {
    let Some(url) = shared_database() else { return };
    let [holder, changer] = two_processes(&url).await;
    let who = holder.sign_up("dee-processes@example.com").await;
    let token = common::token_of_browser(&holder, &who).await;
    let mut stream = common::listen(&holder, &token).await;
    let (_, tokens, _) = changer.send(&who, Method::GET, "/api/tokens", None).await;
    let id = tokens["tokens"][0]["id"].as_i64().unwrap();
    let (status, _, _) = changer.send(&who, Method::DELETE, &format!("/api/tokens/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    changer.state.notices.told(&[servio_store::Change::Catalogue(who.user_id.unwrap())]);
    let heard = common::hear(&mut stream, "notifications/tools/list_changed", Duration::from_secs(10)).await;
    assert!(!heard.text.contains("list_changed") && heard.ended, "the stream ended, told nothing: {heard:?}");
}

/// A process's notices reach the others in the order its changes were made: a token revoked
/// and then a catalogue changed must be heard in that order, or a stream opened with the
/// revoked token hears the change (each notice was sent from a task of its own, and a later
/// one could pass an earlier one: this suite's revocation test failed about one run in seven).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_announces_its_changes_in_the_order_it_made_them() {
    use servio_platform::notices::Change;
    let Some(url) = shared_database() else { return };
    let [maker, hearer] = two_processes(&url).await;
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = heard.clone();
    hearer.state.notices.on_change(move |change| {
        if let Some(Change::Catalogue(user_id) | Change::Access(user_id)) = change {
            record.lock().unwrap().push(user_id);
        }
    });
    let made: Vec<i64> = (1..=200).collect();
    for user_id in &made {
        if user_id % 2 == 0 {
            maker.state.notices.told(&[servio_store::Change::Access(*user_id)]);
        } else {
            maker.state.notices.told(&[servio_store::Change::Catalogue(*user_id)]);
        }
    }
    let started = std::time::Instant::now();
    while heard.lock().unwrap().len() < made.len() {
        assert!(started.elapsed() < Duration::from_secs(10), "heard {} of {}", heard.lock().unwrap().len(), made.len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(*heard.lock().unwrap(), made, "heard in another order than made");
}

/// Issue 26, point 1: a `subscriptions/listen` stream (2026-07-28) held by one process hears a
/// catalogue change made through another.
#[tokio::test]
async fn a_listen_stream_held_by_one_process_hears_a_change_made_through_another() {
    let Some(url) = shared_database() else { return };
    let [holder, changer] = two_processes(&url).await;
    let (user_id, token) = user_and_token(&holder, "lee-processes@example.com").await;
    let mut stream = common::listen_stateless(&holder, &token).await;
    changer.state.notices.told(&[servio_store::Change::Catalogue(user_id)]);
    let changed = "notifications/tools/list_changed";
    let heard = common::hear(&mut stream, changed, Duration::from_secs(10)).await;
    assert!(heard.text.contains(changed), "the holder's stream heard the change: {heard:?}");
}

/// Issue 26, point 4: a listen stream held by one process that watches a metric hears
/// `notifications/resources/updated` when values of its user are stored through another (a
/// worker, or another `serve`).
#[tokio::test]
async fn a_listen_stream_watching_a_metric_hears_values_stored_through_another_process() {
    let Some(url) = shared_database() else { return };
    let ca = servio_demo_site::LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "fay").await;
    let [holder, collector] = two_processes_trusting(&url, Some(&ca.ca_pem)).await;
    // A stream watches only metrics its user has: Fay's vault holds the demo site.
    let (fay, _) = holder.sign_up_with_site("fay-processes@example.com", &demo.origin, "fay").await;
    let token = common::token_of_browser(&holder, &fay).await;
    let user_id = fay.user_id.unwrap();
    let uri = format!("servio://metrics/{}/sales.revenue.daily", demo.origin.trim_start_matches("https://"));
    let uri = uri.as_str();
    let filter = serde_json::json!({ "notifications": { "resourceSubscriptions": [uri] } });
    let mut stream = common::listen_stateless_with(&holder, &token, filter).await;
    // What the collector's hook does after a commit that stored values for the user.
    collector.state.notices.told(&[servio_store::Change::Values(user_id)]);
    let updated = "notifications/resources/updated";
    let heard = common::hear(&mut stream, updated, Duration::from_secs(10)).await;
    assert!(heard.text.contains(updated) && heard.text.contains(uri), "{heard:?}");
}
