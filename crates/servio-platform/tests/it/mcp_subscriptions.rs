//! Issue 41, finding 9: what an MCP session subscribes to (`resources/subscribe`) and what a
//! listen stream's filter watches (`resourceSubscriptions`) were kept as sent, of any length
//! (11 MiB a subscription, 800 KiB a stream). Now only a metric's canonical address of a
//! metric the user has is kept, an address is 512 bytes at most, and a filter names 1,000 at
//! most: each refused with an error naming the bound before anything is kept.

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{self, Server, messages, stateless};

/// The answer to `resources/subscribe` of `uri` on `session`.
async fn subscribe(server: &Server, token: &str, session: &str, uri: &str) -> Value {
    let subscribe = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": uri } });
    let answer = common::mcp(server, Method::POST, token, Some(session)).json(&subscribe).send().await.unwrap();
    messages(answer).await.into_iter().find(|m| m["id"] == 2).expect("an answer")
}

/// The filter a listen stream's acknowledgment says it watches.
async fn acknowledged(server: &Server, token: &str, addresses: &[String]) -> Vec<String> {
    let filter = json!({ "notifications": { "resourceSubscriptions": addresses } });
    let mut stream = stateless(server, token, 1, "subscriptions/listen", filter).send().await.unwrap();
    let acknowledged = "notifications/subscriptions/acknowledged";
    let heard = common::hear(&mut stream, acknowledged, std::time::Duration::from_secs(10)).await;
    let message: Value = heard
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["method"] == acknowledged)
        .unwrap_or_else(|| panic!("{heard:?}"));
    let watched = message["params"]["notifications"]["resourceSubscriptions"].as_array().cloned().unwrap_or_default();
    watched.iter().map(|uri| uri.as_str().unwrap().to_owned()).collect()
}

/// The error a `subscriptions/listen` with `addresses` is answered with.
async fn listen_refused(server: &Server, token: &str, addresses: &[String]) -> Value {
    let filter = json!({ "notifications": { "resourceSubscriptions": addresses } });
    let answer = stateless(server, token, 1, "subscriptions/listen", filter).send().await.unwrap();
    let answer = messages(answer).await;
    answer.into_iter().find(|m| m.get("error").is_some()).expect("an error")["error"].clone()
}

#[tokio::test]
async fn mcp_subscriptions_keep_only_bounded_canonical_addresses_of_the_users_metrics() {
    let (demo, servers) = common::demo_and_servers("watch").await;
    let site = demo.origin.trim_start_matches("https://").to_owned();
    let revenue = format!("servio://metrics/{site}/sales.revenue.daily");
    let orders = format!("servio://metrics/{site}/sales.orders.daily");
    // The same metric, other ways round: the site in capitals, padded, with a range.
    let shouted = format!("servio://metrics/{}/sales.revenue.daily", site.to_uppercase());
    let padded = format!("servio://metrics/{}{site}/sales.revenue.daily", " ".repeat(100));
    let ranged = format!("{revenue}?from=2026-08-01&to=2026-08-20");
    let long = format!("servio://metrics/{}{site}/sales.revenue.daily", " ".repeat(600));
    for (name, server) in servers {
        let (_, _, ana) = common::ana_with_token(&server, &demo, "watch", name).await;
        let ben = common::token_of(&server, &common::email("ben", "watch", name)).await;

        let session = common::open_session(&server, &ana).await;
        let answer = subscribe(&server, &ana, &session, &revenue).await;
        assert!(answer.get("result").is_some(), "{name}: {answer}");
        for other in [&shouted, &padded, &ranged] {
            let answer = subscribe(&server, &ana, &session, other).await;
            assert_eq!(answer["error"]["code"], -32602, "{name}: {other}: {answer}");
            assert_eq!(answer["error"]["data"]["uri"], revenue.as_str(), "{name}: the canonical address: {answer}");
        }
        let answer = subscribe(&server, &ana, &session, &long).await;
        assert_eq!(answer["error"]["code"], -32602, "{name}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("at most 512 bytes"), "{name}: {answer}");
        let unknown = format!("servio://metrics/{site}/no.such.metric");
        assert_eq!(subscribe(&server, &ana, &session, &unknown).await["error"]["code"], -32002, "{name}");
        let bens = common::open_session(&server, &ben).await;
        assert_eq!(subscribe(&server, &ben, &bens, &revenue).await["error"]["code"], -32002, "{name}: not his");

        // A listen stream's filter: canonical addresses of her metrics, once each; the others
        // left out of what is acknowledged.
        let asked = [&shouted, &padded, &ranged, &unknown, &orders, &revenue].map(|uri| uri.to_string());
        assert_eq!(acknowledged(&server, &ana, &asked).await, [revenue.clone(), orders.clone()], "{name}");
        assert_eq!(acknowledged(&server, &ben, &asked).await, Vec::<String>::new(), "{name}: none is his");

        let error = listen_refused(&server, &ana, &[revenue.clone(), long.clone()]).await;
        assert_eq!(error["code"], -32602, "{name}: {error}");
        assert!(error["message"].as_str().unwrap().contains("at most 512 bytes"), "{name}: {error}");
        let many: Vec<String> = (0..1001).map(|i| format!("{revenue}?from=2026-08-{:02}", i % 28 + 1)).collect();
        let error = listen_refused(&server, &ana, &many).await;
        assert!(error["message"].as_str().unwrap().contains("at most 1000 resources"), "{name}: {error}");
    }
}
