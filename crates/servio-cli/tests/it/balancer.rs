//! The platform as it runs for real: two `servio serve` and two `servio worker` processes on
//! one PostgreSQL database, behind HAProxy (Debian's package; `.ci/run` installs it), which
//! spreads requests round robin and checks `/readyz`. Through the balancer: sign up, add the
//! demo site, see its metrics collected, call tools over MCP on one session whose requests land
//! on both processes; then one `serve` is killed and the session goes on through the other.
//! Without `SERVIO_TEST_DATABASE_URL` the test says it is skipped and passes.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use servio_demo_site::DemoAuth;
use tokio::process::{Child, Command};

const KEY: &str = "0707070707070707070707070707070707070707070707070707070707070707";
const SITE_TOKEN: &str = "balancer-site-token";

/// A `servio` process, killed when dropped, its output in a file.
struct Process {
    child: Child,
    log: std::path::PathBuf,
}

impl Process {
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn servio(dir: &Path, name: &str, args: &[&str]) -> (Command, std::path::PathBuf) {
    let log = dir.join(format!("{name}.log"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_servio"));
    command
        .args(args)
        .env("SERVIO_SECRET_KEY", KEY)
        .env_remove("SERVIO_DATABASE_URL")
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .kill_on_drop(true);
    (command, log)
}

/// A `servio serve` on a port of its own; answers it and its address.
async fn serve(dir: &Path, name: &str, url: &str, ca: &str) -> (Process, String) {
    let args = ["serve", "--addr", "127.0.0.1:0", "--database-url", url, "--allow-local", "--ca-cert", ca];
    let (mut command, log) = servio(dir, name, &args);
    let mut child = command.stdout(Stdio::piped()).spawn().expect("the servio binary");
    let url = common::served_url(&mut child).await;
    let address = url.trim_start_matches("http://").to_owned();
    (Process { child, log }, address)
}

fn worker(dir: &Path, name: &str, url: &str, ca: &str) -> Process {
    let args =
        ["worker", "--database-url", url, "--allow-local", "--ca-cert", ca, "--plan-every", "2", "--idle", "200"];
    let (mut command, log) = servio(dir, name, &args);
    let child = command.arg("--id").arg(name).stdout(Stdio::null()).spawn().expect("the servio binary");
    Process { child, log }
}

/// HAProxy on a free port in front of `servers`, checking their readiness every half second.
fn haproxy(dir: &Path, servers: &[&str]) -> (Process, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let backends: String = servers
        .iter()
        .enumerate()
        .map(|(i, address)| format!("    server serve{i} {address} check inter 500ms fall 2 rise 1\n"))
        .collect();
    let config = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n    \
         retries 3\n    option redispatch\n\
         frontend platform\n    bind 127.0.0.1:{port}\n    default_backend serves\n\
         backend serves\n    balance roundrobin\n    option httpchk GET /readyz\n    http-check expect status 200\n\
         {backends}"
    );
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, config).unwrap();
    let log = dir.join("haproxy.log");
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&file)
        .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(dir.join("haproxy.err")).unwrap()))
        .kill_on_drop(true)
        .spawn()
        .expect("haproxy (apt-get install haproxy; .ci/run does)");
    (Process { child, log }, format!("http://127.0.0.1:{port}"))
}

fn has_haproxy() -> bool {
    std::process::Command::new("haproxy").arg("-v").output().is_ok_and(|out| out.status.success())
}

/// Waits until `check` holds, or fails with `what` and the processes' logs.
async fn eventually<F, Fut>(what: &str, within: Duration, processes: &[&Process], mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        if started.elapsed() > within {
            let logs: Vec<String> = processes.iter().map(|p| p.log_text()).collect();
            panic!("{what}: not within {within:?}\n{}", logs.join("\n---\n"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One JSON-RPC message to `/mcp` through the balancer: the status and the messages of its
/// answer.
async fn rpc(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    session: Option<&str>,
    message: &Value,
) -> (u16, Vec<Value>) {
    let (status, _, messages) = servio_platform::testing::mcp_post(http, base, token, session, message).await;
    (status.as_u16(), messages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serves_and_two_workers_behind_haproxy_survive_losing_a_serve() {
    let Some(base) = servio_store::testing::postgres_url() else { return };
    assert!(has_haproxy(), "the balancer test needs haproxy (apt-get install haproxy; .ci/run installs it)");
    let demo = common::start(SITE_TOKEN, DemoAuth::Bearer).await;
    let dir = demo.dir.path();
    let url = servio_store::testing::fresh_schema_url(&base).await;
    let ca = demo.ca_arg();
    // The first applies the migrations; the others find them applied.
    let (mut serve_a, a) = serve(dir, "serve-a", &url, &ca).await;
    let (serve_b, b) = serve(dir, "serve-b", &url, &ca).await;
    let workers = [worker(dir, "worker-1", &url, &ca), worker(dir, "worker-2", &url, &ca)];
    let (balancer, lb) = haproxy(dir, &[&a, &b]);
    let http = reqwest::Client::new();
    let all = [&serve_a, &serve_b, &workers[0], &workers[1], &balancer];
    eventually("the balancer answers", Duration::from_secs(20), &all, || async {
        http.get(format!("{lb}/readyz")).send().await.is_ok_and(|r| r.status() == 200)
    })
    .await;

    // Sign up and make a token through the balancer: the session lives in the database, so
    // the second request may land on the other process.
    let (_, token) = common::sign_up_with_token(&http, &lb, "lb@example.com", "a long enough password").await;
    let added = http
        .post(format!("{lb}/api/vault"))
        .bearer_auth(&token)
        .json(&json!({ "url": demo.origin, "token": SITE_TOKEN }))
        .send()
        .await
        .unwrap();
    assert!(added.status().is_success(), "adding the site: {}", added.status());

    // The site's due periods were queued when it was added; some process collects them.
    let site_id = added.json::<Value>().await.unwrap()["site"]["id"].as_i64().unwrap();
    let store = servio_store::open(&url).await.unwrap();
    let user_id = store.user_by_email("lb@example.com").await.unwrap().unwrap().id;
    eventually("a value is collected", Duration::from_secs(60), &all, || async {
        !store.values(user_id, site_id, "sales.revenue.daily", 0..i64::MAX).await.unwrap().is_empty()
    })
    .await;

    // One MCP session, its requests spread over both processes.
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": servio_platform::testing::MCP_VERSION, "capabilities": {}, "clientInfo": { "name": "lb-test", "version": "0" } } });
    let (status, session, _) = servio_platform::testing::mcp_post(&http, &lb, &token, None, &initialize).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let (status, _) = rpc(&http, &lb, &token, Some(&session), &initialized).await;
    assert!((200..300).contains(&status), "{status}");
    let name = servio_manifest::Site::parse(&demo.origin).unwrap().prefixed_name("shop.getSalesSummary");
    let call = |id: u64| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": name, "arguments": { "from": "2026-08-20", "to": "2026-08-20" } } })
    };
    let calls_work = |http: &reqwest::Client, from: u64| {
        let (http, lb, token, session) = (http.clone(), lb.clone(), token.clone(), session.clone());
        let calls: Vec<Value> = (from..from + 4).map(call).collect();
        async move {
            for message in calls {
                let (status, answer) = rpc(&http, &lb, &token, Some(&session), &message).await;
                assert_eq!(status, 200, "{answer:?}");
                let result = &answer.iter().find(|m| m["id"] == message["id"]).expect("the call's answer")["result"];
                assert_eq!(result["isError"], json!(false), "{result}");
            }
        }
    };
    calls_work(&http, 10).await;
    for (process, name) in [(&serve_a, "a"), (&serve_b, "b")] {
        let log = process.log_text();
        assert!(log.contains("route=\"/mcp\""), "serve {name} answered part of the session:\n{log}");
    }

    // One serve dies without a word; the balancer's checks take it out (two failed checks half
    // a second apart), and the session goes on through the other. A client whose request was
    // in flight on the dead process, or on a connection the balancer closed with it, sees that
    // one request fail and asks again on a new connection, as this one does.
    serve_a.child.kill().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let http = reqwest::Client::new();
    calls_work(&http, 20).await;
    let (status, listed) =
        rpc(&http, &lb, &token, Some(&session), &json!({ "jsonrpc": "2.0", "id": 30, "method": "tools/list" })).await;
    assert_eq!(status, 200);
    assert!(listed.iter().any(|m| m["result"]["tools"].as_array().is_some_and(|t| !t.is_empty())), "{listed:?}");
    let _ = serve_b;
}
