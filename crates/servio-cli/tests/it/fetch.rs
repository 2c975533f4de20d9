//! `servio check https://...` against a real HTTPS site on loopback.

use std::net::SocketAddr;
use std::process::Output;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use servio_demo_site::{LocalCa, serve_https};

use crate::common;

const MANIFEST: &str = include_str!("../../../../examples/devcommunity.json");

/// Runs `servio ARGS`; the arguments are copied before the returned future is awaited.
fn servio(args: &[&str]) -> impl Future<Output = Output> + use<> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_servio"));
    command.args(args).env("NO_COLOR", "1");
    async move { command.output().await.unwrap() }
}

#[tokio::test]
async fn check_discovers_and_reports_like_a_file() {
    let ca = LocalCa::generate(&[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    let app = Router::new().route(
        "/servio.json",
        get(|| async { ([(header::CONTENT_TYPE, "application/json")], MANIFEST).into_response() }),
    );
    let site = serve_https(SocketAddr::from(([127, 0, 0, 1], 0)), &ca, app).await.unwrap();
    let url = format!("https://localhost:{}", site.addr.port());
    let ca_arg = ca_file.to_str().unwrap().to_owned();

    let out = servio(&["check", "--format", "json", &url, "--ca-cert", &ca_arg]).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["source"], format!("{url}/servio.json"));
    assert_eq!(report["valid"], true);

    // Without the CA the certificate is not trusted: could not fetch, exit 2.
    let out = servio(&["check", &url]).await;
    assert_eq!(out.status.code(), Some(2));

    // The platform's guard refuses loopback and says which address and why.
    let out = servio(&["check", &url, "--ca-cert", &ca_arg, "--guard", "public"]).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("localhost resolves to") && stderr.contains("a loopback address"), "{stderr}");
}

#[tokio::test]
async fn call_validates_arguments_sends_the_token_and_prints_the_result() {
    use servio_demo_site::DemoAuth;
    let demo = common::start("t0k3n", DemoAuth::Bearer).await;
    let (origin, ca_file) = (demo.origin.clone(), demo.ca_file.clone());
    let ca = ca_file.to_str().unwrap();
    let call = |extra: &[&str]| servio(&[&["call", &origin, "--ca-cert", ca][..], extra].concat());

    let out =
        call(&["shop.getSalesSummary", "--json", r#"{"from": "2026-08-20", "to": "2026-08-20"}"#, "--token", "t0k3n"])
            .await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (cents, orders) = servio_demo_site::site::daily_figures("2026-08-20", "UTC");
    assert_eq!(result["data"]["totals"]["revenue"], servio_demo_site::site::dollars(cents));
    assert_eq!(result["data"]["totals"]["orders"], orders);

    let out = call(&["forum.searchThreads", "--arg", "limit=ten", "--token", "t0k3n"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nothing was sent") && stderr.contains("/limit") && stderr.contains("/query"), "{stderr}");

    // A misspelt tool: nothing is sent, and the nearest name is offered (issue 48, point 5).
    let out = call(&["shop.getSalesSumary", "--token", "t0k3n"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("help: did you mean \"shop.getSalesSummary\"?"), "{stderr}");

    let out = call(&["forum.getThread", "--arg", "thread_id=1"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("401"));
}

#[tokio::test]
async fn discovery_reports_a_misbehaving_site() {
    use servio_demo_site::{DemoAuth, Misbehaviour};
    let demo = common::start("t", DemoAuth::Bearer).await;
    let (origin, ca_file, site) = (demo.origin.clone(), demo.ca_file.clone(), demo.site.clone());
    site.set_misbehaviour("/.well-known/servio.json", Some(Misbehaviour::Html));
    let check = || servio(&["check", &origin, "--ca-cert", ca_file.to_str().unwrap()]);

    let out = check().await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/.well-known/servio.json: 200 OK with text/html"), "{stderr}");
    assert!(stderr.contains("/servio.json: 404 Not Found"), "{stderr}");

    site.set_misbehaviour("/.well-known/servio.json", Some(Misbehaviour::ServerError));
    let out = check().await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("500 Internal Server Error"));
    site.set_misbehaviour("/.well-known/servio.json", Some(Misbehaviour::RedirectLoop));
    let out = check().await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("more than 5 redirects"));
    site.set_misbehaviour("/.well-known/servio.json", Some(Misbehaviour::HugeBody(9 * 1024 * 1024)));
    let out = check().await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("larger than the limit"));
    site.set_misbehaviour("/.well-known/servio.json", None);
    assert_eq!(check().await.status.code(), Some(0));
}

#[tokio::test]
async fn brief_test_shows_what_would_be_stored() {
    use servio_demo_site::DemoAuth;
    let demo = common::start("t0k3n", DemoAuth::Bearer).await;
    let (origin, ca_file) = (demo.origin.clone(), demo.ca_file.clone());
    let ca = ca_file.to_str().unwrap();
    let fixed =
        ["brief", "test", &origin, "--ca-cert", ca, "--date", "2026-08-20", "--timezone", "America/Los_Angeles"];
    let test = |extra: &[&str]| servio(&[&fixed[..], extra].concat());

    let out = test(&["--token", "t0k3n"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (cents, orders) = servio_demo_site::site::daily_figures("2026-08-20", "America/Los_Angeles");
    assert!(stdout.contains(&format!("stored as {}", cents as f64 / 100.0)), "{stdout}");
    assert!(stdout.contains(&format!("stored as {orders}")), "{stdout}");
    assert!(stdout.contains("2026-08-20T00:00:00-07:00 to 2026-08-21T00:00:00-07:00"), "{stdout}");

    let out = test(&[]).await;
    assert_eq!(out.status.code(), Some(1));
    // Judged as the platform judges it: a 401 is a permanent failure, logged and not retried.
    assert!(String::from_utf8_lossy(&out.stdout).contains("failed: the tool answered 401"));
}

/// Issue 24, point 10: the dry run called a `5xx` "dropped", while the platform retries it as
/// transient until the period's deadline (§8: 24 hours after it is due). It now says so, with
/// the deadline in the dry run's zone; an answer that is not JSON stays dropped.
#[tokio::test]
async fn brief_test_says_when_the_platform_would_retry() {
    use servio_demo_site::{DemoAuth, Misbehaviour};
    let demo = common::start("t0k3n", DemoAuth::Bearer).await;
    let ca = demo.ca_file.to_str().unwrap();
    let args = ["--ca-cert", ca, "--date", "2026-08-20", "--timezone", "America/Los_Angeles", "--token", "t0k3n"];
    let test = || servio(&[&["brief", "test", demo.origin.as_str()][..], &args[..]].concat());
    let tool = "/api/servio/tools/shop.getSalesSummary";

    demo.site.set_misbehaviour(tool, Some(Misbehaviour::ServerError));
    let out = test().await;
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Los Angeles' 2026-08-20 ends at midnight, is due an hour later, and is retried for 24 hours.
    let retried = "verdict: would be retried until 01:00 on 2026-08-22 (America/Los_Angeles): the tool answered 500";
    assert_eq!(stdout.matches(retried).count(), 2, "{stdout}");
    assert!(!stdout.contains("dropped"), "{stdout}");

    demo.site.set_misbehaviour(tool, Some(Misbehaviour::Body("no sales".into())));
    let stdout = String::from_utf8_lossy(&test().await.stdout).into_owned();
    assert_eq!(stdout.matches("verdict: dropped: valuePath").count(), 2, "{stdout}");
    demo.site.set_misbehaviour(tool, None);
}

/// Issue 24, point 6 (§5): the demo's revenue and orders share a tool and its arguments; the
/// dry run asks the site once for both, as the platform does, and says so.
#[tokio::test]
async fn brief_test_asks_once_for_metrics_that_share_a_call() {
    use servio_demo_site::DemoAuth;
    let demo = common::start("t0k3n", DemoAuth::Bearer).await;
    let ca = demo.ca_file.to_str().unwrap();
    demo.site.record_requests();
    let out =
        servio(&["brief", "test", &demo.origin, "--ca-cert", ca, "--date", "2026-08-20", "--token", "t0k3n"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let calls = demo.site.requests().iter().filter(|r| r.path.ends_with("/shop.getSalesSummary")).count();
    assert_eq!(calls, 1, "one request for both metrics");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(one request with sales.revenue.daily)"), "{stdout}");
    assert_eq!(stdout.matches("verdict: stored as").count(), 2, "{stdout}");
}

/// Regression (issue 24, point 5): integers beyond 64 bits reached the site as rounded floats
/// (`-18446744073709551600` as `-1.8446744073709552e+19`). `servio call` sends the numbers of
/// `--json` and `--arg` as they were written, as the site's request log shows.
#[tokio::test]
async fn call_sends_numbers_digit_for_digit() {
    use servio_demo_site::DemoAuth;
    let numbers = servio_platform::testing::BIG_NUMBERS;
    let demo = common::start("t0k3n", DemoAuth::Bearer).await;
    demo.site.record_requests();
    let json = format!(r#"{{"from":"2026-08-20","to":"2026-08-20","numbers":[{}]}}"#, numbers.join(","));
    let args = ["call", &demo.origin, "--ca-cert", &demo.ca_arg(), "shop.getSalesSummary", "--token", "t0k3n"];
    let out =
        servio(&[&args[..], &["--json", &json, "--arg", "long=-0.1000000000000000055511151231257827"]].concat()).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let calls: Vec<_> = demo.site.requests().into_iter().filter(|r| r.method == "POST").collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let body = String::from_utf8(calls[0].body.clone()).unwrap();
    let want = format!("{},\"long\":-0.1000000000000000055511151231257827}}", json.trim_end_matches('}'));
    assert_eq!(body, want);
}
