//! Tool calls follow redirects only within the origin of the approved `server.url`.
//! Regression: a `307` or `308` to another origin re-posted the user's arguments there and the
//! call returned that host's answer.

use serde_json::json;
use servio_client::{CallError, Client, ClientConfig, ClientError, post_tool};
use servio_demo_site::{LocalCa, LocalSite, Misbehaviour};

const TOKEN: &str = "site-token";

async fn two_sites() -> (LocalSite, LocalSite, Client) {
    let ca = LocalCa::generate(&[]).unwrap();
    let site = LocalSite::start(&ca, TOKEN).await.unwrap();
    // The other origin takes the same token, as a host that would gladly answer would.
    let elsewhere = LocalSite::start(&ca, TOKEN).await.unwrap();
    let config = ClientConfig { extra_roots_pem: Some(ca.ca_pem.into_bytes()), ..ClientConfig::default() };
    (site, elsewhere, Client::new(config).unwrap())
}

fn args() -> serde_json::Value {
    json!({"from": "2026-03-01", "to": "2026-03-01", "secret": "the user's argument"})
}

#[tokio::test]
async fn a_tool_call_is_not_redirected_to_another_origin() {
    let (site, elsewhere, client) = two_sites().await;
    let tool_path = "/api/servio/tools/shop.getSalesSummary";
    let target = format!("{}{tool_path}", elsewhere.origin);
    site.site.set_misbehaviour(tool_path, Some(Misbehaviour::RedirectTo(target.clone())));
    elsewhere.site.record_requests();

    let server_url = format!("{}/api/servio", site.origin).parse().unwrap();
    let error = post_tool(&client, &server_url, "shop.getSalesSummary", &args(), Some(TOKEN)).await.unwrap_err();
    let CallError::Request(ClientError::Redirect(message)) = &error else { panic!("{error}") };
    assert!(message.contains(&format!("redirects to {target}, another origin than {}", site.origin)), "{message}");
    assert_eq!(elsewhere.site.requests(), [], "the other origin received the call");

    // A manifest may still be fetched through a redirect to another origin (interpretation §1).
    let manifest = format!("{}/.well-known/servio.json", site.origin);
    site.site.set_misbehaviour(
        "/.well-known/servio.json",
        Some(Misbehaviour::RedirectTo(format!("{}/.well-known/servio.json", elsewhere.origin))),
    );
    let fetched = client.get_json(&manifest.parse().unwrap(), Default::default()).await.unwrap();
    assert_eq!(fetched.url.origin().ascii_serialization(), elsewhere.origin);
}

#[tokio::test]
async fn a_tool_call_follows_a_redirect_within_its_origin() {
    let (site, elsewhere, client) = two_sites().await;
    let moved = format!("{}/api/servio/tools/shop.getSalesSummary", site.origin);
    site.site.set_misbehaviour("/api/v1/tools/shop.getSalesSummary", Some(Misbehaviour::RedirectTo(moved)));
    elsewhere.site.record_requests();
    let server_url = format!("{}/api/v1", site.origin).parse().unwrap();
    let body = post_tool(&client, &server_url, "shop.getSalesSummary", &args(), Some(TOKEN)).await.unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["data"]["period"]["from"], "2026-03-01", "{answer}");
    assert_eq!(elsewhere.site.requests(), []);
}
