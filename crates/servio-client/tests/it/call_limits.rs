//! Tool calls have their own limits (interpretation §5: 30 s and 4 MiB by default), apart from
//! those of fetching a manifest (§1: 10 s and 8 MiB). Regression: calls had the manifest's.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::json;
use servio_client::{CallError, Client, ClientConfig, ClientError, post_tool};
use servio_demo_site::{LocalCa, serve_https};

/// A JSON string answer of `size` bytes.
fn answer(size: usize) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], format!("\"{}\"", "x".repeat(size - 2)))
}

#[tokio::test]
async fn a_call_answer_over_4_mib_is_refused_while_a_manifest_of_5_mib_is_read() {
    const FIVE_MIB: usize = 5 * 1024 * 1024;
    let ca = LocalCa::generate(&[]).unwrap();
    let app = Router::new()
        .route("/big.json", get(|| async { answer(FIVE_MIB) }))
        .route("/api/tools/{name}", post(|| async { answer(FIVE_MIB) }))
        .route(
            "/api/tools/slow.tool",
            post(|| async {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                answer(16)
            }),
        );
    let server = serve_https(SocketAddr::new([127, 0, 0, 1].into(), 0), &ca, app).await.unwrap();
    let origin = format!("https://localhost:{}", server.addr.port());
    let config = ClientConfig { extra_roots_pem: Some(ca.ca_pem.clone().into_bytes()), ..ClientConfig::default() };
    assert_eq!((config.call_timeout, config.call_max_body), (Duration::from_secs(30), 4 * 1024 * 1024));
    let client = Client::new(config.clone()).unwrap();

    let fetched = client.get_json(&format!("{origin}/big.json").parse().unwrap(), Default::default()).await.unwrap();
    assert_eq!(fetched.body.len(), FIVE_MIB, "a manifest may be up to 8 MiB");
    let server_url = format!("{origin}/api").parse().unwrap();
    let refused = post_tool(&client, &server_url, "big.tool", &json!({}), None).await.unwrap_err();
    assert!(
        matches!(refused, CallError::Request(ClientError::TooLarge { limit }) if limit == 4 * 1024 * 1024),
        "{refused}"
    );

    // The call timeout is its own setting too.
    let impatient = Client::new(ClientConfig { call_timeout: Duration::from_millis(300), ..config }).unwrap();
    let slow = post_tool(&impatient, &server_url, "slow.tool", &json!({}), None).await.unwrap_err();
    assert!(matches!(slow, CallError::Request(ClientError::Timeout(t)) if t == Duration::from_millis(300)), "{slow}");
    assert!(post_tool(&client, &server_url, "slow.tool", &json!({}), None).await.is_ok(), "10 s would do; 30 s does");
}
