//! Issue 41, finding 7: one user's gateway calls, and the bytes they make the call log keep,
//! are limited per user, over HTTP and MCP alike. Past a limit a call is refused before
//! anything is done for it (`429` with `Retry-After`, or MCP's error saying so) and is not
//! logged; another user's calls go on. Tight limits here; the defaults are held by the CLI's
//! abuse suite against a real `servio serve`.

use reqwest::StatusCode;
use serde_json::{Value, json};
use servio_platform::throttle::{PerMinute, Throttle, ThrottleConfig};

use crate::common::{self, Server, messages, stateless};

/// Calls a user may make at once here, and the bytes of log their calls may take at once.
const CALLS: u32 = 5;
const LOG_BYTES: u32 = 40 << 10;

/// The demo site, and platforms whose gateway lets each user make [`CALLS`] calls and log
/// [`LOG_BYTES`] at once, then one call and 1 KiB a minute.
async fn tight() -> (common::DemoSite, Vec<(&'static str, Server)>) {
    let ca = servio_demo_site::LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "limits").await;
    let servers = common::servers_with(Some(&ca.ca_pem), |state| {
        let config = ThrottleConfig {
            gateway_calls_per_user: Some(PerMinute { at_once: CALLS, per_minute: 1 }),
            gateway_log_bytes_per_user: Some(PerMinute { at_once: LOG_BYTES, per_minute: 1 << 10 }),
            refresh_per_site: std::time::Duration::ZERO,
            ..ThrottleConfig::default()
        };
        state.throttle = std::sync::Arc::new(Throttle::new(&config));
    })
    .await;
    (demo, servers)
}

/// `POST /api/tools/{name}/call` with `token`: the status, `Retry-After` and the body.
async fn call(server: &Server, token: &str, name: &str, args: &Value) -> (StatusCode, Option<u64>, Value) {
    let url = format!("{}/api/tools/{name}/call", server.base);
    let response = server.http.post(url).bearer_auth(token).json(args).send().await.unwrap();
    let status = response.status();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    (status, retry_after, response.json().await.unwrap_or(Value::Null))
}

/// How many entries the call log holds for the user of `token`, once everything queued is
/// written.
async fn logged(server: &Server, token: &str) -> usize {
    server.state.gateway.flush().await;
    let url = format!("{}/api/tool-calls?limit=200", server.base);
    let page: Value = server.http.get(url).bearer_auth(token).send().await.unwrap().json().await.unwrap();
    page["calls"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn gateway_calls_past_a_users_limits_are_refused_before_anything_is_done_or_logged() {
    let (demo, servers) = tight().await;
    let tool = servio_manifest::Site::parse(&demo.origin).unwrap().prefixed_name("shop.getSalesSummary");
    let args = json!({ "from": "2026-08-20", "to": "2026-08-20" });
    for (name, server) in servers {
        let (_, _, ana) = common::ana_with_token(&server, &demo, "limits", name).await;
        // Unknown tools cost a call each, as known ones do, and are logged.
        for i in 0..CALLS {
            let (status, _, body) = call(&server, &ana, &format!("no_such_tool_{i}"), &json!({})).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {body}");
        }
        let (status, retry_after, body) = call(&server, &ana, &tool, &args).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{name}: {body}");
        assert!(retry_after.is_some_and(|s| s >= 1), "{name}: Retry-After {retry_after:?}");
        let said = body["error"].as_str().unwrap_or_default();
        assert!(said.contains(&format!("{CALLS} at once, then 1 a minute")), "{name}: {body}");
        assert_eq!(body["retry_after"], json!(retry_after.unwrap()), "{name}: {body}");
        // MCP says so too, for a tool call, a resource read and the metrics tool alike.
        for (method, params) in [
            ("tools/call", json!({ "name": tool, "arguments": args })),
            ("tools/call", json!({ "name": "servio_metrics", "arguments": {} })),
            ("resources/read", json!({ "uri": format!("servio://metrics/{}/sales.revenue.daily", &demo.origin[8..]) })),
            ("prompts/get", json!({ "name": "morning_briefing" })),
        ] {
            let answer = messages(stateless(&server, &ana, 3, method, params).send().await.unwrap()).await;
            let error = &answer[0]["error"];
            assert_eq!(error["code"], -32600, "{name}: {method}: {answer:?}");
            assert!(error["message"].as_str().unwrap_or_default().contains("too many gateway calls"), "{error}");
            assert!(error["data"]["retry_after"].as_u64().is_some_and(|s| s >= 1), "{name}: {error}");
        }
        assert_eq!(logged(&server, &ana).await, CALLS as usize, "{name}: the refused calls are not logged");

        // Ben keeps his calls' arguments: each entry may weigh 17.5 KiB, and 40 KiB at once
        // take two of them.
        let ben = server.sign_up_with_site(&common::email("ben", "limits", name), &demo.origin, "limits").await.0;
        let ben = common::token_of_browser(&server, &ben).await;
        let put = server.http.put(format!("{}/api/me/log_arguments", server.base)).bearer_auth(&ben);
        assert!(put.json(&json!({ "log_arguments": true })).send().await.unwrap().status().is_success());
        let large = json!({ "from": "2026-08-20", "to": "2026-08-20", "note": "x".repeat(16 * 1024 - 100) });
        for _ in 0..2 {
            let (status, _, body) = call(&server, &ben, "no_such_tool", &large).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {body}");
        }
        let (status, retry_after, body) = call(&server, &ben, "no_such_tool", &large).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{name}: {body}");
        assert!(retry_after.is_some(), "{name}");
        assert!(body["error"].as_str().unwrap_or_default().contains("logged too much"), "{name}: {body}");
        assert_eq!(logged(&server, &ben).await, 2, "{name}");

        // Another user's calls are theirs: Carl's goes through to the site.
        let carl = server.sign_up_with_site(&common::email("carl", "limits", name), &demo.origin, "limits").await.0;
        let carl = common::token_of_browser(&server, &carl).await;
        let (status, _, body) = call(&server, &carl, &tool, &args).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
    }
}
