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
