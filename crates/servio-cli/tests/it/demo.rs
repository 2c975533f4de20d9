//! `servio demo`: the README's first command starts everything, writes demo.json, and the
//! dashboard has eight weeks of revenue and orders, read with the demo user's API token.

use crate::common;
use common::servio_demo::{read_json as read_demo_json, start as start_demo};

async fn get(demo: &serde_json::Value, path: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(format!("{}{path}", demo["url"].as_str().unwrap()))
        .bearer_auth(demo["api_token"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn demo_seeds_eight_weeks_and_writes_demo_json() {
    let dir = tempfile::tempdir().unwrap();
    let (_child, output) = start_demo(dir.path()).await;
    // Adding the site queues its latest period at once, which a worker may collect before the
    // backfill looks: the backfill then stores the rest. The dashboard below counts all 56 days.
    assert!(output.contains(" values stored, 0 dropped, 0 failed"), "{output}");
    let demo = read_demo_json(dir.path());
    for field in ["url", "email", "password", "api_token"] {
        assert!(demo[field].as_str().is_some_and(|v| !v.is_empty()), "{field} in {demo}");
    }
    // Files holding a password, a token, sealed credentials or the key are the owner's only.
    use std::os::unix::fs::PermissionsExt;
    for file in ["demo.json", "secret.key", "servio.db", "servio.db-wal"] {
        let mode = std::fs::metadata(dir.path().join(file)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}");
    }
    let dashboard = get(&demo, "/api/dashboard").await;
    let metrics = dashboard["metrics"].as_array().unwrap();
    let keys: Vec<&str> = metrics.iter().map(|m| m["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["sales.revenue.daily", "sales.orders.daily"]);
    for metric in metrics {
        assert_eq!(metric["values"].as_array().unwrap().len(), 56, "{}", metric["key"]);
        assert!(metric["change"]["percent"].is_number(), "a trend against the same weekday a week earlier: {metric}");
    }
}

#[tokio::test]
async fn demo_restarted_on_its_data_directory_keeps_one_site_and_its_user() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, _) = start_demo(dir.path()).await;
    let before = read_demo_json(dir.path());
    first.kill().await.unwrap();

    let (_second, output) = start_demo(dir.path()).await;
    // The eight weeks are there already: a backfill collects only the periods without a value.
    assert!(output.contains("collected:  0 values stored, 0 dropped, 0 failed"), "{output}");
    let after = read_demo_json(dir.path());
    assert_eq!(before["email"], after["email"]);
    assert_eq!(before["api_token"], after["api_token"], "the saved user signs in again");
    let vault = get(&after, "/api/vault").await;
    let sites = vault["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1, "the demo site keeps its origin across restarts: {vault}");
    let dashboard = get(&after, "/api/dashboard").await;
    for metric in dashboard["metrics"].as_array().unwrap() {
        assert_eq!(metric["values"].as_array().unwrap().len(), 56, "kept across restarts: {}", metric["key"]);
    }
}

/// The "done when": with `servio demo` running, an MCP client of the demo user (the
/// official Python SDK over `/mcp`, and the same through `servio mcp`) lists
/// `localhost_PORT_shop_getSalesSummary` and gets the figure the dashboard shows.
#[tokio::test]
async fn an_mcp_client_of_the_demo_user_gets_the_dashboards_figure() {
    let Some(python) = common::mcp_clients::python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_child, output) = start_demo(dir.path()).await;
    let demo = read_demo_json(dir.path());
    let port = common::servio_demo::site_port(dir.path());
    let tool = format!("localhost_{port}_shop_getSalesSummary");
    assert!(output.contains(&format!("https://localhost:{port}")), "{output}");

    let dashboard = get(&demo, "/api/dashboard").await;
    let revenue = dashboard["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.revenue.daily").unwrap();
    let latest = &revenue["latest"];
    let date = latest["period"].as_str().unwrap();
    let args = serde_json::json!({ "from": date, "to": date, "timezone": dashboard["time_zone"] });
    let steps = serde_json::json!([{ "list": true }, { "call": tool, "args": args }]);

    let (url, token) = (demo["url"].as_str().unwrap(), demo["api_token"].as_str().unwrap());
    let clients = [
        common::mcp_clients::ScriptClient::http(&python, &format!("{url}/mcp"), token, &steps),
        common::mcp_clients::ScriptClient::stdio(&python, url, token, &steps),
    ];
    for mut client in clients {
        client.next().await;
        let listed = client.next().await;
        let names: Vec<&str> =
            listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.contains(&tool.as_str()), "{tool} in {names:?}");
        let called = client.next().await;
        let figure = &called["result"]["structured"]["data"]["totals"]["revenue"];
        // The raw value is kept as the site wrote it, and served as that JSON: "$936.24".
        assert_eq!(figure, &latest["raw"], "the dashboard's {date} revenue: {called}");
        client.finish().await;
    }
}
