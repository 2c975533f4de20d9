//! The Directory end to end: claim, verify with the token in the manifest, find by search
//! (anyone, signed in or not), suspension when the token disappears on refresh.

use reqwest::{Method, StatusCode};
use serde_json::json;
use servio_demo_site::LocalCa;

mod common;
use common::Browser;

#[tokio::test]
async fn claim_verify_search_and_suspend() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "t").await;
    let (origin, site) = (demo.origin.clone(), &demo.site);
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let owner = server.sign_up(&format!("owner-{name}@example.com")).await;
        let (status, claim, _) =
            server.send(&owner, Method::POST, "/api/directory/claims", Some(json!({ "url": origin }))).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {claim}");
        let token = claim["token"].as_str().unwrap().to_owned();
        assert!(token.starts_with("wmcp_verify_") && token.len() == 12 + 32, "{token}");
        let verify = format!("/api/directory/claims/{}/verify", claim["id"]);

        // Not yet in the manifest: refused, and nothing is listed.
        let (status, refused, _) = server.send(&owner, Method::POST, &verify, None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {refused}");
        assert!(refused["error"].as_str().unwrap().contains(&token), "{name}");
        let (_, nothing, _) = server.send(&Browser::default(), Method::GET, "/api/directory?q=forum", None).await;
        assert_eq!(nothing["results"], json!([]), "{name}");

        // Another user cannot verify this claim.
        let other = server.sign_up(&format!("other-{name}@example.com")).await;
        assert_eq!(server.send(&other, Method::POST, &verify, None).await.0, StatusCode::NOT_FOUND, "{name}");

        site.set_verification(Some(&token));
        let (status, listed, _) = server.send(&owner, Method::POST, &verify, None).await;
        assert_eq!((status, listed["listed"].as_bool()), (StatusCode::OK, Some(true)), "{name}: {listed}");
        for query in ["forum", "Demo Shop", "getSalesSummary", "sales collect"] {
            let (status, found, _) =
                server.send(&Browser::default(), Method::GET, &format!("/api/directory?q={query}"), None).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(found["results"][0]["origin"], origin.as_str(), "{name}: {query}: {found}");
        }

        // The token disappears: the next refresh suspends the listing.
        let (_, added, _) = server.send(&owner, Method::POST, "/api/vault", Some(json!({ "url": origin }))).await;
        site.set_verification(None);
        let refresh = format!("/api/vault/{}/refresh", added["site"]["id"]);
        let (status, _, _) = server.send(&owner, Method::POST, &refresh, None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (_, gone, _) = server.send(&Browser::default(), Method::GET, "/api/directory?q=forum", None).await;
        assert_eq!(gone["results"], json!([]), "{name}: suspended");
    }
}

/// The owner of a verified listing sees how collections from their site went across its users,
/// and only once five users stand behind a figure; nobody else sees it, nor the owner of a
/// claim not verified.
#[tokio::test]
async fn the_owner_sees_collection_health_once_five_users_stand_behind_it() {
    let (demo, servers) = common::demo_and_servers("t").await;
    let (origin, site, http) = (demo.origin.clone(), &demo.site, common::page_client());
    for (name, server) in servers {
        let owner = server.sign_up(&format!("health-owner-{name}@example.com")).await;
        let (_, claim, _) =
            server.send(&owner, Method::POST, "/api/directory/claims", Some(json!({ "url": origin }))).await;
        let health = format!("/api/directory/claims/{}/health", claim["id"]);
        let (status, _, _) = server.send(&owner, Method::GET, &health, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: not verified yet");
        site.set_verification(claim["token"].as_str());
        let verify = format!("/api/directory/claims/{}/verify", claim["id"]);
        assert_eq!(server.send(&owner, Method::POST, &verify, None).await.0, StatusCode::OK, "{name}");

        let mut users = Vec::new();
        for i in 1..=5 {
            let user = server.sign_up(&format!("health-user-{i}-{name}@example.com")).await;
            let added = json!({ "url": origin, "token": "t" });
            assert_eq!(server.send(&user, Method::POST, "/api/vault", Some(added)).await.0, StatusCode::CREATED);
            let config = servio_collector::WorkerConfig { drain: true, ..servio_collector::WorkerConfig::new("h") };
            let (_keep, stop) = tokio::sync::watch::channel(false);
            server.state.collector.clone().run(config, stop).await;
            users.push(user);

            let (status, figures, _) = server.send(&owner, Method::GET, &health, None).await;
            assert_eq!(status, StatusCode::OK, "{name}: {figures}");
            let revenue = &figures["metrics"][0];
            assert_eq!(revenue["key"], "sales.revenue.daily", "{name}: the brief's first metric");
            if i < 5 {
                assert_eq!(revenue["outcomes"], json!([]), "{name}: {i} users are too few: {figures}");
                assert!(revenue["latency"].is_null(), "{name}: {figures}");
            } else {
                assert_eq!(revenue["outcomes"], json!([{ "outcome": "stored", "attempts": 5, "users": 5 }]), "{name}");
                let latency = &revenue["latency"];
                assert!(latency["calls"] == 5 && latency["p95_ms"].as_f64().unwrap() > 0.0, "{name}: {figures}");
            }
        }

        // The page says the same, in words; another user, and another window, are refused.
        let cookie = owner.cookie.clone().unwrap();
        let page_path = format!("{}/directory/claims/{}/health?days=28", server.base, claim["id"]);
        let page = common::request(&http, "GET", &page_path, Some(&cookie), &[]).await;
        assert!(
            page.html.contains("Your tool answered in") && page.html.contains("<td>stored</td><td>5</td>"),
            "{name}"
        );
        assert!(!page.html.contains("health-user-"), "{name}: never who");
        let (status, _, _) = server.send(&users[0], Method::GET, &health, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: not their claim");
        let (status, _, _) = server.send(&owner, Method::GET, &format!("{health}?days=30"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        site.set_verification(None);
    }
}
