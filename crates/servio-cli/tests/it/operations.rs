//! `servio serve` run for real, as a process: its JSON log lines (one per request, with route,
//! status, duration and request id; no secret anywhere), and its graceful stop on SIGTERM under
//! load (exit 0, every acknowledged call in the call log, no job left waiting for a lease).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use servio_demo_site::{DemoAuth, Misbehaviour};
use servio_store::Store;
use tokio::process::{Child, Command};

const KEY: &str = "0707070707070707070707070707070707070707070707070707070707070707";
const SITE_TOKEN: &str = "site-token-b9f1c2d3e4";
const PASSWORD: &str = "password-7c4e1a9b2d";
/// A tool argument the log must never show.
const ARGUMENT: &str = "argument-value-5e8d0f3a";
const SALES: &str = "/api/servio/tools/shop.getSalesSummary";

/// A `servio serve` process on a fresh data directory, its log in a file.
struct Serve {
    child: Child,
    url: String,
    log: PathBuf,
    data_dir: PathBuf,
}

impl Serve {
    async fn start(dir: &Path, ca: &str, env: &[(&str, &str)], args: &[&str]) -> Serve {
        let log = dir.join("serve.log");
        let data_dir = dir.join("data");
        let mut command = Command::new(env!("CARGO_BIN_EXE_servio"));
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--allow-local", "--log-format", "json", "--ca-cert", ca])
            .arg("--data-dir")
            .arg(&data_dir)
            .args(args)
            .env("SERVIO_SECRET_KEY", KEY)
            .env_remove("SERVIO_DATABASE_URL")
            .env_remove("SERVIO_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("the servio binary");
        let url = common::served_url(&mut child).await;
        Serve { child, url, log, data_dir }
    }

    fn terminate(&self) {
        let pid = self.child.id().expect("running").to_string();
        std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    }

    async fn exit(&mut self, within: Duration) -> std::process::ExitStatus {
        tokio::time::timeout(within, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("serve did not stop within {within:?}:\n{}", self.log_text()))
            .unwrap()
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    async fn store(&self) -> Box<dyn Store> {
        servio_store::open(&format!("sqlite:{}", self.data_dir.join("servio.db").display())).await.unwrap()
    }
}

/// A signed-up user with an API token, and the session cookie they signed up with.
struct User {
    token: String,
    cookie: String,
}

async fn sign_up(http: &reqwest::Client, url: &str) -> User {
    let (cookie, token) = common::sign_up_with_token(http, url, "ops@example.com", PASSWORD).await;
    User { token, cookie }
}

/// Adds the demo site to the user's vault; returns the prefixed name of `forum.searchThreads`.
async fn add_site(http: &reqwest::Client, url: &str, user: &User, origin: &str) -> String {
    let added = http
        .post(format!("{url}/api/vault"))
        .bearer_auth(&user.token)
        .json(&json!({ "url": origin, "token": SITE_TOKEN }))
        .send()
        .await
        .unwrap();
    assert!(added.status().is_success(), "adding the site: {}", added.text().await.unwrap());
    servio_manifest::Site::parse(origin).unwrap().prefixed_name("forum.searchThreads")
}

async fn call_tool(http: &reqwest::Client, url: &str, user: &User, name: &str) -> reqwest::Result<reqwest::Response> {
    http.post(format!("{url}/api/tools/{name}/call"))
        .bearer_auth(&user.token)
        .json(&json!({ "query": ARGUMENT }))
        .send()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_is_json_lines_one_per_request_with_no_secret() {
    let demo = common::start(SITE_TOKEN, DemoAuth::Bearer).await;
    let env =
        [("SERVIO_LOG", "info,servio_platform=debug,servio_collector=debug,servio_store=debug,servio_client=debug")];
    let mut serve = Serve::start(demo.dir.path(), &demo.ca_arg(), &env, &[]).await;
    let http = reqwest::Client::new();
    let user = sign_up(&http, &serve.url).await;
    let name = add_site(&http, &serve.url, &user, &demo.origin).await;
    let called = call_tool(&http, &serve.url, &user, &name).await.unwrap();
    assert_eq!(called.status(), 200);
    // A load balancer's request id is kept; an unfit one is replaced.
    let kept = http.get(format!("{}/api/me", serve.url)).header("x-request-id", "lb-42.a").send().await.unwrap();
    assert_eq!(kept.headers()["x-request-id"], "lb-42.a");
    let replaced =
        http.get(format!("{}/api/me", serve.url)).header("x-request-id", "{\"forged\": 1}").send().await.unwrap();
    assert_ne!(replaced.headers()["x-request-id"], "{\"forged\": 1}");
    serve.terminate();
    assert!(serve.exit(Duration::from_secs(30)).await.success(), "{}", serve.log_text());

    let log = serve.log_text();
    let lines: Vec<Value> = log
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}")))
        .collect();
    let answered = |route: &str| {
        lines.iter().find(|line| line["message"] == "answered" && line["span"]["route"] == route).cloned()
    };
    let signup = answered("/api/signup").unwrap_or_else(|| panic!("no line for the sign-up:\n{log}"));
    assert_eq!(signup["level"], "INFO");
    assert_eq!(signup["status"], 201, "{signup}");
    assert_eq!(signup["span"]["method"], "POST");
    assert!(signup["duration_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{signup}");
    assert!(signup["span"]["request_id"].as_str().is_some_and(|id| !id.is_empty()), "{signup}");
    let call = answered("/api/tools/{name}/call").unwrap_or_else(|| panic!("no line for the call:\n{log}"));
    assert_eq!(call["status"], 200, "{call}");
    assert!(
        lines.iter().any(|line| line["span"]["request_id"] == "lb-42.a"),
        "the balancer's id is in the log:\n{log}"
    );
    assert!(lines.iter().any(|line| line["message"] == "stopped"), "the stop is logged:\n{log}");

    let session = user.cookie.split_once('=').unwrap().1;
    for (what, secret) in
        [("password", PASSWORD), ("site token", SITE_TOKEN), ("API token", &user.token), ("session", session)]
            .into_iter()
            .chain([("argument", ARGUMENT)])
    {
        assert!(!log.contains(secret), "the log shows the {what}:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_loses_no_acknowledged_call_and_leaves_no_job_leased() {
    let demo = common::start(SITE_TOKEN, DemoAuth::Bearer).await;
    // Collections hang, so that the scheduler holds jobs with calls in flight when the signal
    // comes; the gateway's tool answers at once.
    demo.site.set_misbehaviour(SALES, Some(Misbehaviour::Slow(Duration::from_secs(600))));
    let mut serve = Serve::start(demo.dir.path(), &demo.ca_arg(), &[], &["--shutdown-timeout", "2"]).await;
    let http = reqwest::Client::new();
    let user = Arc::new(sign_up(&http, &serve.url).await);
    let name = add_site(&http, &serve.url, &user, &demo.origin).await;
    let store = serve.store().await;
    let started = Instant::now();
    while store.job_gauges(servio_store_now(), 0).await.unwrap().leased == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the scheduler leased no job:\n{}", serve.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let acknowledged = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..8 {
        let (http, url, user, name, acknowledged) =
            (http.clone(), serve.url.clone(), user.clone(), name.clone(), acknowledged.clone());
        clients.push(tokio::spawn(async move {
            // Until the server stops answering.
            while let Ok(response) = call_tool(&http, &url, &user, &name).await {
                if response.status() != 200 {
                    break;
                }
                if response.bytes().await.is_ok() {
                    acknowledged.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Until the clients are well under way: some calls answered, more in flight.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while acknowledged.load(Ordering::Relaxed) < 20 {
        assert!(std::time::Instant::now() < deadline, "the clients' calls were not answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before_signal = acknowledged.load(Ordering::Relaxed);
    serve.terminate();
    let status = serve.exit(Duration::from_secs(30)).await;
    for client in clients {
        client.await.unwrap();
    }
    let log = serve.log_text();
    assert!(status.success(), "exit 0 on SIGTERM, not {status:?}:\n{log}");
    let acknowledged = acknowledged.load(Ordering::Relaxed);
    assert!(before_signal > 0, "the load made calls before the signal");

    let user_id = store.user_by_email("ops@example.com").await.unwrap().unwrap().id;
    let logged = store.tool_calls(user_id, servio_store::CallPage { before: None, limit: 1_000_000 }).await.unwrap();
    let ok = logged.iter().filter(|call| call.status == "ok").count();
    assert!(ok >= acknowledged, "{acknowledged} calls were answered, {ok} are in the call log:\n{log}");
    let jobs = store.job_gauges(servio_store_now(), 0).await.unwrap();
    assert_eq!(jobs.leased, 0, "no job waits for a lease: {jobs:?}\n{log}");
    assert!(jobs.pending > 0, "the cut-off jobs are still to do: {jobs:?}");
}

fn servio_store_now() -> i64 {
    jiff::Timestamp::now().as_second()
}
