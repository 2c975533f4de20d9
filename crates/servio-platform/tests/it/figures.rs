//! The audited figures over MCP (issue 26, points 4 and 5), on every backend, against the demo
//! site: each metric a resource whose periods say where their numbers come from, the read-only
//! tool `servio_metrics`, the `morning_briefing` prompt, and updates on a listen stream or a
//! `resources/subscribe`; each only ever for the user whose token asks.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_demo_site::Misbehaviour;
use servio_demo_site::site::{daily_figures, dollars};
use std::time::Duration;

use crate::common;

use common::{Server, messages, stateless, token_of};

/// Backfills `from`..=`to` of the vault site `id` of the user signed in as `who`, waiting
/// while a worker collects it.
async fn backfill(server: &Server, who: &common::Browser, id: i64, (from, to): (&str, &str)) {
    let body = json!({ "from": from, "to": to });
    let path = format!("/api/vault/{id}/backfill");
    let (status, summary, _) = server.with_worker(server.send(who, Method::POST, &path, Some(body))).await;
    assert_eq!(status, StatusCode::OK, "{summary}");
}

/// One stateless (2026-07-28) request's answer: its result, or its error.
async fn ask(server: &Server, token: &str, method: &str, params: Value) -> Value {
    let answer = stateless(server, token, 7, method, params).send().await.unwrap();
    let mut messages = messages(answer).await;
    assert_eq!(messages.len(), 1, "{method}: {messages:?}");
    messages.remove(0)
}

/// A call of the metrics tool.
async fn call(server: &Server, token: &str, arguments: Value) -> Value {
    ask(server, token, "tools/call", json!({ "name": "servio_metrics", "arguments": arguments })).await
}

/// The demo site's address part: its host and port.
fn site_of(origin: &str) -> &str {
    origin.trim_start_matches("https://")
}

#[tokio::test]
async fn each_metric_is_a_resource_whose_periods_say_where_their_numbers_come_from() {
    let (demo, servers) = common::demo_and_servers("figures").await;
    for (name, server) in servers {
        let (ana, site, token) = common::ana_with_token(&server, &demo, "figures", name).await;
        backfill(&server, &ana, site, ("2026-08-06", "2026-08-20")).await;
        let ben = token_of(&server, &format!("ben-figures-{name}@example.com")).await;
        let uri = format!("servio://metrics/{}/sales.revenue.daily", site_of(&demo.origin));

        let listed = ask(&server, &token, "resources/list", json!({})).await;
        let resources = listed["result"]["resources"].as_array().unwrap_or_else(|| panic!("{name}: {listed}"));
        let revenue = resources.iter().find(|r| r["uri"] == uri.as_str()).unwrap_or_else(|| panic!("{listed}"));
        assert_eq!(revenue["mimeType"], "application/json", "{name}");
        assert_eq!(resources.len(), 3, "{name}: revenue, orders and the view: {listed}");
        let templates = ask(&server, &token, "resources/templates/list", json!({})).await;
        assert_eq!(
            templates["result"]["resourceTemplates"][0]["uriTemplate"], "servio://metrics/{site}/{metric}{?from,to}",
            "{name}"
        );

        let day = format!("{uri}?from=2026-08-20&to=2026-08-20");
        let read = ask(&server, &token, "resources/read", json!({ "uri": day })).await;
        let contents = &read["result"]["contents"][0];
        assert_eq!((&contents["uri"], &contents["mimeType"]), (&json!(day), &json!("application/json")), "{read}");
        let figures: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
        let periods = figures["periods"].as_array().unwrap();
        assert_eq!(periods.len(), 1, "{name}: one day asked for: {figures}");
        let period = &periods[0];
        let (cents, _) = daily_figures("2026-08-20", "Pacific/Auckland");
        assert_eq!(period["value"], json!(cents as f64 / 100.0), "{name}: {period}");
        assert_eq!(period["raw"], json!(dollars(cents)), "{name}: as the site wrote it");
        assert_eq!(period["period"], "2026-08-20", "{name}");
        assert_eq!(period["period_start"], "2026-08-20T00:00:00+12:00", "{name}: in the zone collected in");
        assert_eq!(period["period_end"], "2026-08-21T00:00:00+12:00", "{name}");
        assert_eq!(period["time_zone"], "Pacific/Auckland", "{name}");
        assert_eq!(period["tool"], "shop.getSalesSummary", "{name}");
        assert_eq!(period["value_path"], "data.totals.revenue", "{name}");
        assert_eq!(period["arguments"]["from"], "2026-08-20", "{name}: the resolved arguments: {period}");
        assert_eq!(period["arguments"]["timezone"], "Pacific/Auckland", "{name}");
        assert!(period["collected_at"].as_str().is_some_and(|at| at.ends_with('Z')), "{name}: {period}");
        // The dashboard's comparison: the same weekday a week earlier, with its value.
        let (before, _) = daily_figures("2026-08-13", "Pacific/Auckland");
        assert_eq!(period["comparison"]["period"], "2026-08-13", "{name}");
        assert_eq!(period["comparison"]["value"], json!(before as f64 / 100.0), "{name}");
        assert_eq!(period["comparison"]["change"], json!((cents as f64 - before as f64) / 100.0), "{name}");
        assert_eq!(figures["compared_with"], "the same weekday a week earlier", "{name}");

        // A week back has nothing collected before it: the comparison says why there is none.
        let first = format!("{uri}?from=2026-08-06&to=2026-08-06");
        let read = ask(&server, &token, "resources/read", json!({ "uri": first })).await;
        let figures: Value = serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
        let comparison = &figures["periods"][0]["comparison"];
        assert_eq!(comparison["value"], Value::Null, "{name}: {comparison}");
        assert_eq!(comparison["reason"], "nothing was collected for 2026-07-30", "{name}");

        // Another user's token never reads them: the resource is not there for him.
        let refused = ask(&server, &ben, "resources/read", json!({ "uri": day })).await;
        // 2026-07-28 says -32602 for a resource that is not there (-32002 before it).
        assert_eq!(refused["error"]["code"], -32602, "{name}: {refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("no site"), "{name}: {refused}");
        assert!(!refused.to_string().contains(&dollars(cents)), "{name}: {refused}");
        let his = ask(&server, &ben, "resources/list", json!({})).await;
        let his: Vec<&Value> = his["result"]["resources"].as_array().unwrap().iter().collect();
        assert!(his.iter().all(|r| r["uri"] == "ui://servio/metrics"), "{name}: only the view: {his:?}");

        // Hostile addresses are not found or invalid params, never errors of the platform.
        for bad in ["servio://metrics/", "servio://other/x/y", &format!("{uri}?days=9"), &format!("{uri}?from=x")] {
            let answer = ask(&server, &token, "resources/read", json!({ "uri": bad })).await;
            assert_eq!(answer["error"]["code"], -32602, "{name}: {bad}: {answer}");
        }
        let answer = ask(&server, &token, "resources/read", json!({ "uri": "servio://other/x/y" })).await;
        assert_eq!(answer["error"]["data"]["uri"], "servio://other/x/y", "{name}: {answer}");
        let long = format!("{uri}?from=2020-01-01&to=2026-08-20");
        let answer = ask(&server, &token, "resources/read", json!({ "uri": long })).await;
        assert!(answer["error"]["message"].as_str().unwrap().contains("at most 400 days"), "{name}: {answer}");
    }
}

#[tokio::test]
async fn a_period_without_a_value_says_why() {
    let (demo, servers) = common::demo_and_servers("unfilled").await;
    for (name, server) in servers {
        let (ana, site, token) = common::ana_with_token(&server, &demo, "unfilled", name).await;
        backfill(&server, &ana, site, ("2026-08-20", "2026-08-20")).await;
        let user = ana.user_id.unwrap();
        // The day before, the site's answer held no number: the attempt log says so.
        let slot = servio_store::testing::day_slot(user, site, 20_683, "2026-08-19");
        let dropped = servio_store::CollectionResult::Dropped {
            reason: "valuePath data.totals.revenue: the value is null",
            raw: Some("null"),
        };
        server.state.store.record_result(&slot, &dropped, 1_787_000_000).await.unwrap();

        let uri =
            format!("servio://metrics/{}/sales.revenue.daily?from=2026-08-19&to=2026-08-20", site_of(&demo.origin));
        let read = ask(&server, &token, "resources/read", json!({ "uri": uri })).await;
        let figures: Value = serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(figures["periods"].as_array().unwrap().len(), 1, "{name}: {figures}");
        let unfilled = &figures["unfilled"][0];
        assert_eq!(unfilled["period"], "2026-08-19", "{name}: {figures}");
        assert_eq!(unfilled["outcome"], "dropped", "{name}");
        assert_eq!(unfilled["reason"], "valuePath data.totals.revenue: the value is null", "{name}");
    }
}

#[tokio::test]
async fn the_metrics_tool_and_the_briefing_give_the_same_figures() {
    let (demo, servers) = common::demo_and_servers("metrics-tool").await;
    for (name, server) in servers {
        let (ana, site, token) = common::ana_with_token(&server, &demo, "metrics-tool", name).await;
        // The latest date due in her zone, as the briefing shows it. Yesterday, as this once was,
        // is not due yet in the first minutes after midnight in Auckland.
        let auckland = jiff::tz::TimeZone::get("Pacific/Auckland").unwrap();
        let due =
            servio_collector::plan::latest_due(servio_manifest::Granularity::Day, &auckland, jiff::Timestamp::now());
        let due_date = due.unwrap().start_date.to_string();
        backfill(&server, &ana, site, (&due_date, &due_date)).await;
        let ben = token_of(&server, &format!("ben-tool-{name}@example.com")).await;

        let tools = ask(&server, &token, "tools/list", json!({})).await;
        let tool = tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "servio_metrics").cloned();
        let tool = tool.unwrap_or_else(|| panic!("{name}: {tools}"));
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{name}: {tool}");

        let listed = call(&server, &token, json!({})).await;
        let metrics = &listed["result"]["structuredContent"]["metrics"];
        assert_eq!(metrics.as_array().map(Vec::len), Some(2), "{name}: {listed}");
        assert_eq!(metrics[0]["site"], site_of(&demo.origin), "{name}");
        let his = call(&server, &ben, json!({})).await;
        assert_eq!(his["result"]["structuredContent"]["metrics"], json!([]), "{name}: {his}");

        let args = json!({ "site": demo.origin, "metric": "sales.revenue.daily", "from": due_date, "to": due_date });
        let answer = call(&server, &token, args.clone()).await;
        let period = &answer["result"]["structuredContent"]["periods"][0];
        let (cents, _) = daily_figures(&due_date, "Pacific/Auckland");
        assert_eq!(period["value"], json!(cents as f64 / 100.0), "{name}: {answer}");
        for member in
            ["period_start", "period_end", "time_zone", "raw", "collected_at", "tool", "arguments", "value_path"]
        {
            assert!(!period[member].is_null(), "{name}: {member} in {period}");
        }
        let refused = call(&server, &ben, args).await;
        assert_eq!(refused["result"]["isError"], true, "{name}: {refused}");
        assert!(!refused.to_string().contains(&dollars(cents)), "{name}: {refused}");
        let half = call(&server, &token, json!({ "site": demo.origin })).await;
        assert_eq!(half["result"]["isError"], true, "{name}: {half}");

        let prompts = ask(&server, &token, "prompts/list", json!({})).await;
        assert_eq!(prompts["result"]["prompts"][0]["name"], "morning_briefing", "{name}: {prompts}");
        let briefing = ask(&server, &token, "prompts/get", json!({ "name": "morning_briefing" })).await;
        let text = briefing["result"]["messages"][0]["content"]["text"].as_str().unwrap_or_default().to_owned();
        assert!(text.contains(&dollars(cents).replace('$', "")), "{name}: the value: {text}");
        assert!(text.contains("shop.getSalesSummary") && text.contains("data.totals.revenue"), "{name}: {text}");
        let his = ask(&server, &ben, "prompts/get", json!({ "name": "morning_briefing" })).await;
        let his = his["result"]["messages"][0]["content"]["text"].as_str().unwrap_or_default().to_owned();
        assert!(his.contains("No metrics") && !his.contains("shop.getSalesSummary"), "{name}: {his}");
    }
}

/// Issue 41, "bounded by design": a metric resource's range is bounded before anything is
/// read. A daily metric's 400 days are read and 401 refused; an hourly metric's 31 days are
/// read and 32 refused (744 periods, not 9,600); dates before 1970-01-01 or after 2999-12-31
/// are refused. Each refusal is invalid params (-32602) saying which bound.
#[tokio::test]
async fn a_metric_resources_range_is_bounded_in_days_and_dates() {
    let ca = servio_demo_site::LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "ranges").await;
    demo.site.edit_manifest(Some(std::sync::Arc::new(|manifest: &mut Value| {
        let mut hourly = manifest["brief"]["metrics"][0].clone();
        hourly["key"] = json!("sales.revenue.hourly");
        hourly["granularity"] = json!("hour");
        manifest["brief"]["metrics"].as_array_mut().unwrap().push(hourly);
    })));
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let (_, _, token) = common::ana_with_token(&server, &demo, "ranges", name).await;
        let metric = |key: &str| format!("servio://metrics/{}/{key}", site_of(&demo.origin));
        let (daily, hourly) = (metric("sales.revenue.daily"), metric("sales.revenue.hourly"));
        let read = |uri: String| {
            let token = token.clone();
            let server = &server;
            async move { ask(server, &token, "resources/read", json!({ "uri": uri })).await }
        };
        for (uri, from, to, periods) in
            [(&daily, "2025-01-01", "2026-02-05", 401), (&hourly, "2026-01-01", "2026-02-01", 32 * 24)]
        {
            let answer = read(format!("{uri}?from={from}&to={to}")).await;
            let text = answer["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{name}: {answer}"));
            let figures: Value = serde_json::from_str(text).unwrap();
            let listed =
                figures["periods"].as_array().map_or(0, Vec::len) + figures["unfilled"].as_array().map_or(0, Vec::len);
            assert!(listed <= periods, "{name}: {uri} {from}..{to}: {listed} periods");
        }
        for (uri, from, to, said) in [
            (&daily, "2025-01-01", "2026-02-06", "at most 400 days"),
            (&hourly, "2026-01-01", "2026-02-02", "at most 31 days after `from` for a metric by the hour"),
            (&daily, "1969-12-31", "1970-01-01", "must be from 1970-01-01 to 2999-12-31"),
            (&hourly, "2999-12-31", "3000-01-01", "must be from 1970-01-01 to 2999-12-31"),
        ] {
            let answer = read(format!("{uri}?from={from}&to={to}")).await;
            assert_eq!(answer["error"]["code"], -32602, "{name}: {uri} {from}..{to}: {answer}");
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(said), "{name}: {uri} {from}..{to}: {message}");
        }
    }
}

/// A new value reaches a listen stream that watches the metric (2026-07-28) and a session
/// subscribed to it (before), and no other user's.
#[tokio::test]
async fn new_values_reach_the_streams_that_watch_the_metric() {
    let (demo, servers) = common::demo_and_servers("updates").await;
    for (name, server) in servers {
        let (ana, site, token) = common::ana_with_token(&server, &demo, "updates", name).await;
        let ana_id = ana.user_id.unwrap();
        let ben = token_of(&server, &format!("ben-updates-{name}@example.com")).await;
        let uri = format!("servio://metrics/{}/sales.revenue.daily", site_of(&demo.origin));
        let filter = json!({ "notifications": { "toolsListChanged": true, "resourceSubscriptions": [uri] } });
        let mut hers = common::listen_stateless_with(&server, &token, filter.clone()).await;
        let mut his = common::listen_stateless_with(&server, &ben, filter).await;

        // A session of the revisions before subscribes, and hears on its stream.
        let subscribe = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": uri } });
        let listening = server.state.notices.listeners();
        let session = common::open_session(&server, &token).await;
        let answer = common::mcp(&server, Method::POST, &token, Some(&session)).json(&subscribe).send().await.unwrap();
        let answer = messages(answer).await;
        assert!(answer[0].get("result").is_some(), "{name}: {answer:?}");
        let ben_session = common::open_session(&server, &ben).await;
        let refused =
            common::mcp(&server, Method::POST, &ben, Some(&ben_session)).json(&subscribe).send().await.unwrap();
        let refused = messages(refused).await;
        assert_eq!(refused[0]["error"]["code"], -32002, "{name}: not his: {refused:?}");
        let mut events = common::mcp(&server, Method::GET, &token, Some(&session)).send().await.unwrap();
        assert_eq!(events.status(), StatusCode::OK, "{name}");
        // Both sessions heard `notifications/initialized` and listen.
        server.wait_for_listeners(listening + 1).await;

        backfill(&server, &ana, site, ("2026-08-20", "2026-08-20")).await;
        let updated = "notifications/resources/updated";
        let heard = common::hear(&mut hers, updated, Duration::from_secs(10)).await;
        assert!(heard.text.contains(updated) && heard.text.contains(&uri), "{name}: {heard:?}");
        let heard = common::hear(&mut events, updated, Duration::from_secs(10)).await;
        assert!(heard.text.contains(updated) && heard.text.contains(&uri), "{name}: the session: {heard:?}");
        let heard = common::hear(&mut his, updated, Duration::from_millis(500)).await;
        assert!(!heard.text.contains(updated), "{name}: ben heard ana's values: {heard:?}");

        // Another process's new values reach the stream too (what a worker announces).
        server.state.notices.told(&[servio_store::Change::Values(ana_id)]);
        let heard = common::hear(&mut hers, updated, Duration::from_secs(10)).await;
        assert!(heard.text.contains(updated), "{name}: {heard:?}");
    }
}

/// Issue 26, point 8: the call log names the token of each call (a revoked one as revoked),
/// keeps resource reads and metric queries beside tool calls, and says what went wrong in words.
#[tokio::test]
async fn the_call_log_names_the_token_and_words_each_status() {
    let (demo, servers) = common::demo_and_servers("call-log").await;
    for (name, server) in servers {
        let (ana, _) = common::ana_with_site(&server, &demo, "call-log", name).await;
        let new_token = |label: &'static str| {
            let (server, ana) = (&server, &ana);
            async move {
                let body = json!({ "name": label });
                let (status, created, _) = server.send(ana, Method::POST, "/api/tokens", Some(body)).await;
                assert_eq!(status, StatusCode::CREATED, "{created}");
                (created["token"].as_str().unwrap().to_owned(), created["id"].as_i64().unwrap())
            }
        };
        let (laptop, _) = new_token("laptop").await;
        let (phone, phone_id) = new_token("phone").await;
        let ben = token_of(&server, &format!("ben-log-{name}@example.com")).await;
        let tools = ask(&server, &laptop, "tools/list", json!({})).await;
        let sales = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"].as_str().unwrap().ends_with("shop_getSalesSummary"));
        let sales = sales.unwrap_or_else(|| panic!("{name}: {tools}"));
        let sales = sales["name"].as_str().unwrap().to_owned();

        let args = json!({ "from": "2026-08-20", "to": "2026-08-20" });
        let called = ask(&server, &laptop, "tools/call", json!({ "name": sales, "arguments": args })).await;
        assert_eq!(called["result"]["isError"], false, "{name}: {called}");
        let wrong = json!({ "name": sales, "arguments": { "from": 7 } });
        let wrong = ask(&server, &phone, "tools/call", wrong).await;
        assert_eq!(wrong["result"]["isError"], true, "{name}: {wrong}");
        ask(&server, &phone, "tools/call", json!({ "name": "servio_metrics", "arguments": {} })).await;
        ask(&server, &laptop, "resources/read", json!({ "uri": "servio://metrics/nowhere.example/x" })).await;
        let (status, _, _) = server.send(&ana, Method::DELETE, &format!("/api/tokens/{phone_id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");

        // The log is written in the background: wait for all four.
        let log = wait_for_calls(&server, &laptop, 4).await;
        let calls = log["calls"].as_array().unwrap();
        let find = |kind: &str, status: &str| {
            calls.iter().find(|c| c["kind"] == kind && c["status"] == status).unwrap_or_else(|| panic!("{name}: {log}"))
        };
        let ok = find("tool", "ok");
        assert_eq!((&ok["made_with"], &ok["token"]["name"]), (&json!("token \"laptop\""), &json!("laptop")), "{ok}");
        assert_eq!(ok["status_text"], "answered", "{name}");
        let invalid = find("tool", "invalid_arguments");
        assert_eq!((&invalid["made_with"], &invalid["token"]), (&json!("a revoked token"), &Value::Null), "{invalid}");
        assert!(invalid["status_text"].as_str().unwrap().contains("/from"), "{name}: the words: {invalid}");
        let metrics = find("metrics", "ok");
        assert_eq!(metrics["tool"], "servio_metrics", "{name}");
        let read = find("resource", "not_found");
        assert_eq!(read["tool"], "servio://metrics/nowhere.example/x", "{name}");
        assert!(read["status_text"].as_str().unwrap().contains("no site"), "{name}: {read}");

        // Another user's log holds none of it.
        let (status, his) = get_calls(&server, &ben).await;
        assert_eq!((status, &his["calls"]), (StatusCode::OK, &json!([])), "{name}");
    }
}

async fn get_calls(server: &Server, token: &str) -> (StatusCode, Value) {
    let answer = server.http.get(format!("{}/api/tool-calls", server.base)).bearer_auth(token).send().await.unwrap();
    (answer.status(), answer.json().await.unwrap())
}

/// The call log of `token`'s user once it holds `count` calls (within 10 s).
async fn wait_for_calls(server: &Server, token: &str, count: usize) -> Value {
    let started = std::time::Instant::now();
    loop {
        let (status, log) = get_calls(server, token).await;
        assert_eq!(status, StatusCode::OK, "{log}");
        if log["calls"].as_array().map_or(0, Vec::len) >= count {
            return log;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the log has {log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The figures a read keeps are dropped when new values land: a read after a collection has
/// them, at once, however recently the same address was read.
#[tokio::test]
async fn a_read_after_new_values_has_them() {
    let (demo, servers) = common::demo_and_servers("kept-figures").await;
    for (name, server) in servers {
        let (ana, site, token) = common::ana_with_token(&server, &demo, "kept-figures", name).await;
        let uri =
            format!("servio://metrics/{}/sales.revenue.daily?from=2026-08-20&to=2026-08-20", site_of(&demo.origin));
        let periods = |read: Value| -> usize {
            let figures: Value = serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
            figures["periods"].as_array().unwrap().len()
        };
        let before = ask(&server, &token, "resources/read", json!({ "uri": uri })).await;
        assert_eq!(periods(before), 0, "{name}: nothing collected yet");
        backfill(&server, &ana, site, ("2026-08-20", "2026-08-20")).await;
        let after = ask(&server, &token, "resources/read", json!({ "uri": uri })).await;
        assert_eq!(periods(after), 1, "{name}: the new value, not the kept answer");
        // The same address twice in a row is one render.
        let again = ask(&server, &token, "resources/read", json!({ "uri": uri })).await;
        assert_eq!(periods(again), 1, "{name}");
        // A parameter given twice is refused (its address would be an unbounded cache key).
        let twice = format!("{uri}&from=2026-08-20");
        let refused = ask(&server, &token, "resources/read", json!({ "uri": twice })).await;
        assert_eq!(refused["error"]["code"], -32602, "{name}: {refused}");
    }
}

/// What a surface shows of a metric's view, in the words people read: the latest figure, its
/// change, the to-date totals, why the latest due period has no value, and each period's value.
#[derive(Debug, PartialEq)]
struct Seen {
    latest: String,
    change: String,
    to_date: Vec<String>,
    missing: String,
    values: Vec<String>,
}

impl Seen {
    /// From a view as JSON, amounts in `unit`: its `periods` (a resource's, the tool's; the
    /// API's `values`), each with `period` and `value`, and its latest figure.
    fn of_view(view: &Value, periods: &[Value], latest: &Value, unit: Option<&str>) -> Seen {
        use servio_platform::shared::format::amount;
        let text = |value: &Value| value.as_str().unwrap_or_else(|| panic!("a text: {value} in {view}")).to_owned();
        Seen {
            latest: format!("{} {}", amount(latest["value"].as_f64().unwrap(), unit), text(&latest["period"])),
            change: text(&latest["comparison"]["text"]),
            to_date: view["to_date"].as_array().unwrap().iter().map(|t| text(&t["text"])).collect(),
            missing: text(&view["missing"]),
            values: periods
                .iter()
                .map(|p| format!("{}: {}", text(&p["period"]), amount(p["value"].as_f64().unwrap(), unit)))
                .collect(),
        }
    }

    /// From a card as the page and the MCP App render it.
    fn of_card(card: &str) -> Seen {
        let unescape = |text: &str| {
            text.replace("&#34;", "\"")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&#x27;", "'")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        };
        let between = |text: &str, open: &str, close: &str| -> Vec<String> {
            text.split(open).skip(1).filter_map(|s| s.split(close).next()).map(unescape).collect()
        };
        let one = |open: &str, close: &str| {
            between(card, open, close).pop().unwrap_or_else(|| panic!("no {open} in the card: {card}"))
        };
        let figure = one("<p class=\"figure\">", "</p>").replace("<span class=\"muted\">", "").replace("</span>", "");
        let change = ["ok", "warning", "muted"]
            .iter()
            .find_map(|class| between(card, &format!("<p class=\"{class}\">"), "</p>").pop())
            .unwrap_or_default();
        let to_date = between(&one("<p class=\"to-date\">", "</p>"), "<span>", "</span>");
        // A point's title: "2026-12-01: $1,234.56 (comparison period: …)".
        let values = between(card, "<title>", "</title>")
            .into_iter()
            .map(|title| title.split(" (").next().unwrap().to_owned())
            .collect();
        Seen { latest: figure, change, to_date, missing: one("<p class=\"warning missing\">", "</p>"), values }
    }
}

/// The card of `label` among rendered cards (a card of one site holds no other `div`).
fn card_of(html: &str, label: &str) -> String {
    let heading = format!("<h2>{label}</h2>");
    let card = html.split("<div class=\"card\">").find(|card| card.contains(&heading));
    let card = card.unwrap_or_else(|| panic!("no card {label} in {html}"));
    card.split("</div>").next().unwrap().to_owned()
}

/// Issue 42, point 9 (§8, 2026-12-07): `/api/dashboard?days=28` and the resource's default
/// ended today (27 values) while the page showed 28 ending at the latest due period, and the
/// to-date totals and the reasons were on the page only. One view of a metric serves the page,
/// `/api/dashboard`, the resource, `servio_metrics`, the prompt and the MCP App: for revenue
/// over the default window, all six show the same periods, values, change, totals and reason.
#[tokio::test]
async fn one_view_of_a_metric_on_all_six_surfaces() {
    let (demo, servers) = common::demo_and_servers("six-surfaces").await;
    let auckland = jiff::tz::TimeZone::get("Pacific/Auckland").unwrap();
    let due = servio_collector::plan::latest_due(servio_manifest::Granularity::Day, &auckland, jiff::Timestamp::now());
    let due = due.unwrap().start_date;
    let day = |n: i64| due.checked_sub(jiff::ToSpan::days(n)).unwrap().to_string();
    let summary = "/api/servio/tools/shop.getSalesSummary";
    let usd = Some("USD");
    for (name, server) in servers {
        let (ana, site, token) = common::ana_with_token(&server, &demo, "six-surfaces", name).await;
        // The latest due day's answer is no number; the 34 days before it are collected.
        demo.site.set_misbehaviour(summary, Some(Misbehaviour::Totals("\"49.0%\"".into())));
        backfill(&server, &ana, site, (&day(0), &day(0))).await;
        demo.site.set_misbehaviour(summary, None);
        backfill(&server, &ana, site, (&day(34), &day(1))).await;

        // 1. The API, over the page's default window.
        let (status, dashboard, _) = server.send(&ana, Method::GET, "/api/dashboard?days=28", None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {dashboard}");
        let metric = dashboard["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.revenue.daily");
        let metric = metric.unwrap_or_else(|| panic!("{name}: {dashboard}")).clone();
        let view = metric["view"].clone();
        let values = metric["values"].as_array().unwrap().clone();
        let seen = Seen::of_view(&view, &values, &view["latest"], usd);
        // 28 periods ending at the latest due one: 27 values and the due day without one.
        assert_eq!((view["from"].as_str(), view["to"].as_str()), (Some(&*day(27)), Some(&*day(0))), "{name}");
        assert_eq!((view["window"].as_u64(), seen.values.len()), (Some(28), 27), "{name}: {view}");
        assert_eq!(metric["change"]["text"], json!(seen.change), "{name}");
        let unfilled = view["unfilled"].as_array().unwrap();
        assert_eq!(unfilled.len(), 1, "{name}: {view}");
        assert_eq!(unfilled[0]["period"], json!(day(0)), "{name}");
        let reason = unfilled[0]["reason"].as_str().unwrap().to_owned();
        assert!(reason.contains("49.0%"), "{name}: {reason}");
        assert_eq!(seen.missing, format!("{} not collected: {reason}.", day(0)), "{name}");
        assert!(!seen.to_date.is_empty() || due.day() == 1, "{name}: revenue is an amount per day: {view}");
        for total in view["to_date"].as_array().unwrap() {
            assert!(total["total"].as_f64().is_some(), "{name}: {total}");
        }
        assert!(view["latest"]["value_path"].is_string(), "{name}: the latest value's source: {view}");

        // 2. The page.
        let page = server.page(&ana, "/dashboard").await;
        let page_card = card_of(&page, "Revenue");
        assert_eq!(Seen::of_card(&page_card), seen, "{name}: the page shows the API's view");

        // 3. The resource, by default.
        let uri = format!("servio://metrics/{}/sales.revenue.daily", site_of(&demo.origin));
        let read = ask(&server, &token, "resources/read", json!({ "uri": uri })).await;
        let text = read["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{name}: {read}"));
        let resource: Value = serde_json::from_str(text).unwrap();
        // One "uri" (the duplicate key parsed as the last of the two).
        assert_eq!(text.matches("\"uri\":").count(), 1, "{name}: {text}");
        // 4. The tool, by default and in its list.
        let args = json!({ "site": demo.origin, "metric": "sales.revenue.daily" });
        let called = call(&server, &token, args).await;
        let answer = &called["result"]["structuredContent"];
        for (surface, figures) in [("resource", &resource), ("tool", answer)] {
            for field in ["from", "to", "window", "compared_with", "unfilled", "to_date", "missing", "this_week"] {
                assert_eq!(figures[field], view[field], "{name}: the {surface}'s {field} is the API's");
            }
            let periods = figures["periods"].as_array().unwrap();
            assert_eq!(periods.last(), Some(&view["latest"]), "{name}: the {surface}'s latest figure is the API's");
            let values: Vec<Value> =
                periods.iter().map(|p| json!({ "period": p["period"], "value": p["value"] })).collect();
            assert_eq!(values, metric["values"].as_array().unwrap().clone(), "{name}: the {surface}'s values");
            assert_eq!(Seen::of_view(figures, periods, periods.last().unwrap(), usd), seen, "{name}: {surface}");
        }
        let listed = call(&server, &token, json!({})).await;
        let listed = listed["result"]["structuredContent"]["metrics"].as_array().unwrap().clone();
        let entry = listed.iter().find(|m| m["metric"] == "sales.revenue.daily").unwrap();
        let latest = &view["latest"];
        assert_eq!(
            entry["latest"],
            json!({ "period": latest["period"], "value": latest["value"], "change": seen.change }),
            "{name}: the list gives the latest value"
        );
        assert_eq!(entry["missing"], json!(seen.missing), "{name}");

        // 5. The prompt.
        let briefing = ask(&server, &token, "prompts/get", json!({ "name": "morning_briefing" })).await;
        let briefing = briefing["result"]["messages"][0]["content"]["text"].as_str().unwrap().to_owned();
        let line =
            briefing.lines().find(|l| l.contains("(sales.revenue.daily,")).unwrap_or_else(|| panic!("{briefing}"));
        let (latest_value, latest_period) = seen.latest.rsplit_once(' ').unwrap();
        assert!(line.contains(&format!("{latest_value} for {latest_period}.")), "{name}: {line}");
        for said in std::iter::once(&seen.change).chain(&seen.to_date).chain([&seen.missing]) {
            assert!(line.contains(said.as_str()), "{name}: {said:?} in the briefing: {line}");
        }

        // 6. The MCP App: the tool's result brings the card the page shows.
        let cards = called["result"]["_meta"]["io.servio/cards"].as_str().unwrap_or_else(|| panic!("{called}"));
        let app_card = card_of(cards, "Revenue");
        assert_eq!(app_card, page_card, "{name}: the App's card is the page's");
        assert_eq!(Seen::of_card(&app_card), seen, "{name}");
    }
}
