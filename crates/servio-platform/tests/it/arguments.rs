//! Interpretation §5: arguments reach the site as the client wrote them. Regression (issue 24,
//! point 5): integers beyond 64 bits reached the site as rounded floats
//! (`-18446744073709551600` arrived as `-1.8446744073709552e+19`) through the HTTP gateway and
//! MCP. The demo site's request log shows the bytes it received.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common;

use common::{mcp, open_session};

use servio_platform::testing::BIG_NUMBERS as NUMBERS;

/// The sales summary's arguments with every number as an extra argument, as JSON text.
fn arguments_text() -> String {
    format!(r#"{{"from":"2026-08-20","to":"2026-08-20","timezone":"UTC","numbers":[{}]}}"#, NUMBERS.join(","))
}

/// The body of the one tool call the site received since it started recording.
fn received(site: &common::DemoSite) -> String {
    let calls: Vec<_> =
        site.site.requests().into_iter().filter(|r| r.path == "/api/servio/tools/shop.getSalesSummary").collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    String::from_utf8(calls[0].body.clone()).unwrap()
}

#[tokio::test]
async fn numbers_reach_the_site_digit_for_digit_through_the_gateway_and_mcp() {
    let (demo, servers) = common::demo_and_servers("numbers-token").await;
    let written: Value = serde_json::from_str(&arguments_text()).unwrap();
    for (name, server) in servers {
        let (ana, _) = common::ana_with_site(&server, &demo, "numbers-token", name).await;
        let (_, tools, _) = server.send(&ana, Method::GET, "/api/tools", None).await;
        let tool = tools["tools"].as_array().unwrap().iter().find(|t| t["tool"] == "shop.getSalesSummary").unwrap();
        let tool = tool["name"].as_str().unwrap().to_owned();

        // The HTTP gateway, the body sent as text.
        demo.site.record_requests();
        let response = server
            .http
            .post(format!("{}/api/tools/{tool}/call", server.base))
            .header("cookie", ana.cookie.as_deref().unwrap())
            .header("x-csrf-token", ana.csrf.as_deref().unwrap())
            .header("content-type", "application/json")
            .body(arguments_text())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{name}: {}", response.text().await.unwrap());
        assert_eq!(received(&demo), arguments_text(), "{name}: through the gateway");

        // MCP, the request sent as text.
        let (status, created, _) = server
            .send(
                &ana,
                Method::POST,
                "/api/tokens",
                Some(json!({ "scope": "account", "password": common::PASSWORD, "name": "mcp" })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {created}");
        let token = created["token"].as_str().unwrap();
        let session = open_session(&server, token).await;
        demo.site.record_requests();
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{tool}","arguments":{}}}}}"#,
            arguments_text()
        );
        let response = mcp(&server, Method::POST, token, Some(&session))
            .header("content-type", "application/json")
            .body(call)
            .send()
            .await
            .unwrap();
        let answer = response.text().await.unwrap();
        assert!(answer.contains("\"isError\":false"), "{name}: {answer}");
        assert_eq!(received(&demo), arguments_text(), "{name}: through MCP");
        assert_eq!(serde_json::from_str::<Value>(&received(&demo)).unwrap(), written, "{name}");
    }
}

/// Validation still judges such numbers: a bound beyond 64 bits is held exactly, and nothing
/// is sent for a number past it.
#[tokio::test]
async fn big_numbers_are_still_validated_before_anything_is_sent() {
    let (demo, servers) = common::demo_and_servers("bounds-token").await;
    for (name, server) in servers {
        let (ana, _) = common::ana_with_site(&server, &demo, "bounds-token", name).await;
        let (_, tools, _) = server.send(&ana, Method::GET, "/api/tools", None).await;
        let tool = tools["tools"].as_array().unwrap().iter().find(|t| t["tool"] == "forum.searchThreads").unwrap();
        let path = format!("/api/tools/{}/call", tool["name"].as_str().unwrap());
        demo.site.record_requests();
        // `limit` is an integer from 1 to 50: one just past 50, written with 25 decimals, is
        // not, though as an `f64` it is exactly 50.
        let args = serde_json::from_str(r#"{"query": "rust", "limit": 50.0000000000000000000000001}"#).unwrap();
        let (status, refused, _) = server.send(&ana, Method::POST, &path, Some(args)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {refused}");
        assert!(refused.to_string().contains("/limit"), "{name}: {refused}");
        assert_eq!(demo.site.requests(), [], "{name}: nothing was sent");
    }
}
