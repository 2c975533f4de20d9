//! Interpretation §9: a refresh that moves `server.url` to another origin is held back, and
//! until the user approves it **nothing** that acts for them sends their credential there:
//! not collect-now, not a backfill, not a scheduled round, not a gateway call. A hostile HTTPS
//! site of the test's own stands at the new origin and logs every request it receives.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_demo_site::LocalCa;

mod common;

/// The paths that act for a user, one user each, so that every one of them really calls.
const PATHS: [&str; 4] = ["now", "backfill", "round", "gateway"];

#[tokio::test]
async fn a_moved_server_url_receives_nothing_until_approved() {
    let ca = LocalCa::generate(&[]).unwrap();
    let honest = common::demo_site(&ca, "honest-token").await;
    let hostile = common::demo_site(&ca, "hostile-token").await;
    let today = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::get("Pacific/Auckland").unwrap()).date();
    let ten_days_ago = today.checked_sub(jiff::ToSpan::days(10)).unwrap().to_string();
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        honest.site.set_server_url(None);
        let mut users = Vec::new();
        for path in PATHS {
            let who = server.sign_up(&format!("{path}-moved-{name}@example.com")).await;
            let body = json!({ "url": honest.origin, "token": "honest-token" });
            let (status, added, _) = server.send(&who, Method::POST, "/api/vault", Some(body)).await;
            assert_eq!(status, StatusCode::CREATED, "{name}: {added}");
            users.push((who, added["site"]["id"].as_i64().unwrap()));
        }
        let site = |path: &str| {
            let (who, id) = &users[PATHS.iter().position(|p| *p == path).unwrap()];
            (who.clone(), *id)
        };

        // The site's manifest now sends calls to another origin.
        honest.site.set_server_url(Some(&format!("{}/api/servio", hostile.origin)));
        let (who, id) = site("now");
        let (status, refreshed, _) = server.send(&who, Method::POST, &format!("/api/vault/{id}/refresh"), None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {refreshed}");
        assert_eq!(refreshed["site"]["pending"]["needs_approval"], true, "{name}: {refreshed}");
        honest.site.record_requests();
        hostile.site.record_requests();

        let (status, now, _) = server.send(&who, Method::POST, &format!("/api/vault/{id}/collect"), None).await;
        assert_eq!((status, now["stored"].as_u64()), (StatusCode::OK, Some(2)), "{name}: {now}");
        let (who, id) = site("backfill");
        let range = json!({ "from": ten_days_ago, "to": ten_days_ago });
        let (status, backfill, _) =
            server.send(&who, Method::POST, &format!("/api/vault/{id}/backfill"), Some(range.clone())).await;
        assert_eq!((status, backfill["stored"].as_u64()), (StatusCode::OK, Some(2)), "{name}: {backfill}");
        scheduled_round(&server).await;
        let (who, _) = site("gateway");
        let (status, called) = call_sales_summary(&server, &who, &honest.origin).await;
        assert_eq!(status, StatusCode::OK, "{name}: {called}");

        assert_eq!(hostile.site.requests(), [], "{name}: the unapproved origin received requests");
        let tool_calls = honest.site.requests().iter().filter(|r| r.path.starts_with("/api/servio/tools/")).count();
        // collect-now 2, backfill 2, the round at least 2, the gateway 1.
        let least = 2 + 2 + 2 + 1;
        assert!(tool_calls >= least, "{name}: {tool_calls} calls reached the approved origin");

        // Once approved, the new origin is the user's choice: the same backfill goes there.
        let (who, id) = site("backfill");
        let (status, _, _) = server.send(&who, Method::POST, &format!("/api/vault/{id}/approve"), None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        server.send(&who, Method::POST, &format!("/api/vault/{id}/backfill"), Some(range)).await;
        let seen = hostile.site.requests();
        assert!(
            seen.iter().any(|r| r.authorization.as_deref() == Some("Bearer honest-token")),
            "{name}: after approval the backfill goes to the new origin: {seen:?}"
        );
        // The others have not approved: their gateway calls still go to the approved origin.
        hostile.site.record_requests();
        let (who, _) = site("gateway");
        call_sales_summary(&server, &who, &honest.origin).await;
        assert_eq!(hostile.site.requests(), [], "{name}: one user's approval is not another's");
    }
    honest.site.set_server_url(None);
}

/// Plans every due slot into jobs and works them until none is due, as `servio worker --drain`.
async fn scheduled_round(server: &common::Server) {
    let config = servio_collector::WorkerConfig { drain: true, ..servio_collector::WorkerConfig::new("test") };
    let (_stop, stop) = tokio::sync::watch::channel(false);
    server.state.collector.clone().run(config, stop).await;
}

/// Calls the demo site's sales summary through the gateway, as an AI client would.
async fn call_sales_summary(server: &common::Server, who: &common::Browser, origin: &str) -> (StatusCode, Value) {
    let (_, tools, _) = server.send(who, Method::GET, "/api/tools", None).await;
    let tool = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "shop.getSalesSummary" && t["origin"].as_str() == Some(origin))
        .unwrap_or_else(|| panic!("no sales summary in {tools}"));
    let path = format!("/api/tools/{}/call", tool["name"].as_str().unwrap());
    let args = json!({ "from": "2026-08-20", "to": "2026-08-20", "timezone": "UTC" });
    let (status, body, _) = server.send(who, Method::POST, &path, Some(args)).await;
    (status, body)
}

/// Regression (issue 24, 1f): tool calls followed redirects to other origins, re-posting the
/// user's arguments there on 307/308 and returning that host's answer. A call never leaves the
/// approved `server.url`'s origin: the gateway answers with an error that names where the
/// redirect pointed, and collection stores nothing from there.
#[tokio::test]
async fn a_tool_call_redirected_to_another_origin_sends_nothing_there() {
    let ca = LocalCa::generate(&[]).unwrap();
    let site = common::demo_site(&ca, "site-token").await;
    let elsewhere = common::demo_site(&ca, "site-token").await;
    let tool_path = "/api/servio/tools/shop.getSalesSummary";
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let who = server.sign_up(&format!("ana-redirect-{name}@example.com")).await;
        let body = json!({ "url": site.origin, "token": "site-token" });
        let (status, added, _) = server.send(&who, Method::POST, "/api/vault", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {added}");
        let target = format!("{}{tool_path}", elsewhere.origin);
        site.site.set_misbehaviour(tool_path, Some(servio_demo_site::Misbehaviour::RedirectTo(target.clone())));
        elsewhere.site.record_requests();

        let (status, called) = call_sales_summary(&server, &who, &site.origin).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{name}: {called}");
        let error = called["error"].as_str().unwrap_or_default();
        assert!(error.contains(&format!("redirects to {target}, another origin")), "{name}: {error}");
        let id = added["site"]["id"].as_i64().unwrap();
        let (status, now, _) = server.send(&who, Method::POST, &format!("/api/vault/{id}/collect"), None).await;
        assert_eq!((status, now["stored"].as_u64()), (StatusCode::OK, Some(0)), "{name}: {now}");
        assert_eq!(elsewhere.site.requests(), [], "{name}: the other origin received requests");
        site.site.set_misbehaviour(tool_path, None);
    }
}
