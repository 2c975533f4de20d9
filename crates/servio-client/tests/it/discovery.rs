//! Discovery, limits, redirects and the guard against real HTTPS servers on loopback.

use std::future::Future;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use servio_client::discovery::{Refreshed, refresh};
use servio_client::{Client, ClientConfig, ClientError, DiscoveryError, Guard, Lookup, Policy, discover};
use servio_demo_site::{LocalCa, Running, serve_https};

const MANIFEST: &str = r#"{"name": "T", "version": "1.0.0"}"#;

fn json(body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "application/json; charset=utf-8")], body).into_response()
}

fn html() -> Response {
    ([(header::CONTENT_TYPE, "text/html")], "<!doctype html><p>app</p>").into_response()
}

async fn site(ca: &LocalCa, ip: &str, app: Router) -> Running {
    serve_https(SocketAddr::new(ip.parse().unwrap(), 0), ca, app).await.unwrap()
}

fn client(ca: &LocalCa, configure: impl FnOnce(&mut ClientConfig)) -> Client {
    let mut config = ClientConfig { extra_roots_pem: Some(ca.ca_pem.clone().into_bytes()), ..ClientConfig::default() };
    configure(&mut config);
    Client::new(config).unwrap()
}

fn origin(server: &Running) -> String {
    format!("https://localhost:{}", server.addr.port())
}

#[tokio::test]
async fn paths_are_tried_in_order_and_not_here_falls_through() {
    let ca = LocalCa::generate(&[]).unwrap();
    let app = Router::new()
        .route("/.well-known/servio.json", get(|| async { html() }))
        .route("/servio.json", get(|| async { StatusCode::GONE }))
        .route("/api/servio/manifest", get(|| async { json(MANIFEST) }));
    let server = site(&ca, "127.0.0.1", app).await;
    let found = discover(&client(&ca, |_| {}), &format!("{}/some/page?x=1", origin(&server))).await.unwrap();
    assert_eq!(found.url.path(), "/api/servio/manifest");
    assert_eq!(found.body, MANIFEST.as_bytes());
}

#[tokio::test]
async fn a_json_answer_is_the_manifest_even_when_broken() {
    let ca = LocalCa::generate(&[]).unwrap();
    let app = Router::new()
        .route("/.well-known/servio.json", get(|| async { json("{ not json") }))
        .route("/servio.json", get(|| async { json(MANIFEST) }));
    let server = site(&ca, "127.0.0.1", app).await;
    let found = discover(&client(&ca, |_| {}), &origin(&server)).await.unwrap();
    assert_eq!(found.url.path(), "/.well-known/servio.json");
    assert_eq!(found.body, b"{ not json");
}

#[tokio::test]
async fn no_manifest_lists_what_each_path_answered() {
    let ca = LocalCa::generate(&[]).unwrap();
    let app = Router::new()
        .route("/.well-known/servio.json", get(|| async { html() }))
        .route("/servio.json", get(|| async { StatusCode::GONE }));
    let server = site(&ca, "127.0.0.1", app).await;
    let error = discover(&client(&ca, |_| {}), &origin(&server)).await.unwrap_err();
    let DiscoveryError::NotFound(attempts) = &error else { panic!("{error}") };
    let answers: Vec<&str> = attempts.iter().map(|a| a.answer.as_str()).collect();
    assert_eq!(answers, ["200 OK with text/html, not application/json", "410 Gone", "404 Not Found"]);
    assert!(error.to_string().contains("/api/servio/manifest: 404 Not Found"), "{error}");
}

#[tokio::test]
async fn a_server_error_stops_discovery() {
    let ca = LocalCa::generate(&[]).unwrap();
    let later = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&later);
    let app = Router::new().route("/.well-known/servio.json", get(|| async { StatusCode::BAD_GATEWAY })).route(
        "/servio.json",
        get(move || async move {
            counter.fetch_add(1, Ordering::SeqCst);
            json(MANIFEST)
        }),
    );
    let server = site(&ca, "127.0.0.1", app).await;
    let error = discover(&client(&ca, |_| {}), &origin(&server)).await.unwrap_err();
    assert!(matches!(error, DiscoveryError::ServerError { status, .. } if status == 502), "{error}");
    assert_eq!(later.load(Ordering::SeqCst), 0);
}

/// The manifest as version `"v1"`: `304` to a request that names it in `If-None-Match`.
async fn version_one(headers: HeaderMap) -> axum::response::Response {
    if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v == "\"v1\"") {
        return StatusCode::NOT_MODIFIED.into_response();
    }
    ([(header::CONTENT_TYPE, "application/json"), (header::ETAG, "\"v1\"")], MANIFEST).into_response()
}

#[tokio::test]
async fn refresh_sends_validators_and_accepts_not_modified() {
    let ca = LocalCa::generate(&[]).unwrap();
    let app = Router::new().route("/.well-known/servio.json", get(version_one));
    let server = site(&ca, "127.0.0.1", app).await;
    let client = client(&ca, |_| {});
    let found = discover(&client, &origin(&server)).await.unwrap();
    assert_eq!(found.validators.etag.as_deref(), Some("\"v1\""));
    let again = refresh(&client, &found.origin, &found.url, &found.validators).await.unwrap();
    assert!(matches!(again, Refreshed::NotModified));
}

/// The manifest dated `DATED`, without an `ETag`: `304` to a request that sends that date in
/// `If-Modified-Since`, as a static file server answers.
async fn dated(headers: HeaderMap) -> axum::response::Response {
    if headers.get(header::IF_MODIFIED_SINCE).is_some_and(|v| v == DATED) {
        return StatusCode::NOT_MODIFIED.into_response();
    }
    ([(header::CONTENT_TYPE, "application/json"), (header::LAST_MODIFIED, DATED)], MANIFEST).into_response()
}

const DATED: &str = "Sat, 05 Dec 2026 09:00:00 GMT";

#[tokio::test]
async fn refresh_sends_the_date_when_the_site_gives_no_etag() {
    let ca = LocalCa::generate(&[]).unwrap();
    let server = site(&ca, "127.0.0.1", Router::new().route("/.well-known/servio.json", get(dated))).await;
    let client = client(&ca, |_| {});
    let found = discover(&client, &origin(&server)).await.unwrap();
    assert_eq!((found.validators.etag.as_deref(), found.validators.last_modified.as_deref()), (None, Some(DATED)));
    let again = refresh(&client, &found.origin, &found.url, &found.validators).await.unwrap();
    assert!(matches!(again, Refreshed::NotModified), "{again:?}");
}

/// Refresh asks the paths in order every time, sending the validators only with the path that
/// served them: a manifest at the second path is "not modified" after the first says 404, and
/// one that appears at the first path is read there.
#[tokio::test]
async fn refresh_starts_from_the_first_path_with_validators_only_where_they_belong() {
    let ca = LocalCa::generate(&[]).unwrap();
    let first_serves = Arc::new(AtomicUsize::new(0));
    let switch = Arc::clone(&first_serves);
    let app = Router::new()
        .route(
            "/.well-known/servio.json",
            get(move |headers: HeaderMap| async move {
                assert!(headers.get(header::IF_NONE_MATCH).is_none(), "validators of another path");
                if switch.load(Ordering::SeqCst) == 0 { StatusCode::NOT_FOUND.into_response() } else { json(MANIFEST) }
            }),
        )
        .route("/servio.json", get(version_one));
    let server = site(&ca, "127.0.0.1", app).await;
    let client = client(&ca, |_| {});
    let found = discover(&client, &origin(&server)).await.unwrap();
    assert_eq!(found.url.path(), "/servio.json");
    let again = refresh(&client, &found.origin, &found.url, &found.validators).await.unwrap();
    assert!(matches!(again, Refreshed::NotModified), "{again:?}");
    first_serves.store(1, Ordering::SeqCst);
    let Refreshed::Changed(moved) = refresh(&client, &found.origin, &found.url, &found.validators).await.unwrap()
    else {
        panic!("the manifest now at the first path was not read")
    };
    assert_eq!(moved.url.path(), "/.well-known/servio.json");
}

#[tokio::test]
async fn limits_hold_while_streaming_and_after_decompression() {
    let ca = LocalCa::generate(&[]).unwrap();
    let gzipped = {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&vec![b' '; 200_000]).unwrap();
        encoder.finish().unwrap()
    };
    assert!(gzipped.len() < 1_000);
    let app = Router::new()
        .route("/big", get(|| async { json(Box::leak(" ".repeat(5_000).into_boxed_str())) }))
        .route(
            "/bomb",
            get(move || async move {
                ([(header::CONTENT_TYPE, "application/json"), (header::CONTENT_ENCODING, "gzip")], gzipped)
                    .into_response()
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                json(MANIFEST)
            }),
        );
    let server = site(&ca, "127.0.0.1", app).await;
    let client = client(&ca, |c| {
        c.max_body = 4_096;
        c.timeout = Duration::from_millis(500);
    });
    let url = |path: &str| format!("{}{path}", origin(&server)).parse().unwrap();
    for path in ["/big", "/bomb"] {
        let error = client.get_json(&url(path), HeaderMap::new()).await.unwrap_err();
        assert!(matches!(error, ClientError::TooLarge { limit: 4_096 }), "{path}: {error}");
    }
    let error = client.get_json(&url("/slow"), HeaderMap::new()).await.unwrap_err();
    assert!(matches!(error, ClientError::Timeout(_)), "{error}");

    // The defaults (interpretation §1, the budget's row): a manifest of 8 MiB is read, one byte
    // more is refused, and each fetch may take 10 s (the setting the slow fetch above shows
    // bounding the whole request; not waited for here).
    const EIGHT_MIB: usize = 8 * 1024 * 1024;
    let sized = |bytes: usize| {
        let body = format!("\"{}\"", " ".repeat(bytes - 2));
        move || async move { ([(header::CONTENT_TYPE, "application/json")], body).into_response() }
    };
    let app = Router::new().route("/8mib", get(sized(EIGHT_MIB))).route("/8mib-and-1", get(sized(EIGHT_MIB + 1)));
    let server = site(&ca, "127.0.0.1", app).await;
    let defaulted = self::client(&ca, |_| {});
    let url = |path: &str| format!("{}{path}", origin(&server)).parse().unwrap();
    let read = defaulted.get_json(&url("/8mib"), HeaderMap::new()).await.unwrap();
    assert_eq!(read.body.len(), EIGHT_MIB);
    let error = defaulted.get_json(&url("/8mib-and-1"), HeaderMap::new()).await.unwrap_err();
    assert!(matches!(error, ClientError::TooLarge { limit: EIGHT_MIB }), "{error}");
    let defaults = ClientConfig::default().fetch_limits();
    assert_eq!((defaults.max_body, defaults.timeout), (EIGHT_MIB, Duration::from_secs(10)));
}

#[tokio::test]
async fn redirects_are_bounded_and_stay_on_https() {
    let ca = LocalCa::generate(&[]).unwrap();
    let app = Router::new()
        .route(
            "/loop/{n}",
            get(|axum::extract::Path(n): axum::extract::Path<u32>| async move {
                Redirect::temporary(&format!("/loop/{}", n + 1))
            }),
        )
        .route("/to-http", get(|| async { Redirect::temporary("http://localhost:1/x") }))
        .route("/to-file", get(|| async { Redirect::temporary("file:///etc/passwd") }))
        .route("/five", get(|| async { Redirect::temporary("/4") }))
        .route("/4", get(|| async { Redirect::temporary("/3") }))
        .route("/3", get(|| async { Redirect::temporary("/2") }))
        .route("/2", get(|| async { Redirect::temporary("/1") }))
        .route("/1", get(|| async { Redirect::temporary("/0") }))
        .route("/0", get(|| async { json(MANIFEST) }));
    let server = site(&ca, "127.0.0.1", app).await;
    let client = client(&ca, |_| {});
    let url = |path: &str| format!("{}{path}", origin(&server)).parse().unwrap();
    let five = client.get_json(&url("/five"), HeaderMap::new()).await.unwrap();
    assert_eq!(five.body, MANIFEST.as_bytes());
    for path in ["/loop/0", "/to-http", "/to-file"] {
        let error = client.get_json(&url(path), HeaderMap::new()).await.unwrap_err();
        assert!(matches!(error, ClientError::Redirect(_)), "{path}: {error}");
    }
}

/// A listener that counts connections, to show that refused addresses are never contacted.
struct Witness {
    port: u16,
    connections: Arc<AtomicUsize>,
}

fn witness() -> Witness {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&connections);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stream.is_ok() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    Witness { port, connections }
}

/// Answers each name from a script: the first lookup gets the first answer, and so on.
struct Script(Mutex<Vec<Vec<IpAddr>>>);

impl Lookup for Script {
    fn lookup(&self, _: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let mut answers = self.0.lock().unwrap();
        let answer = if answers.len() > 1 { answers.remove(0) } else { answers[0].clone() };
        Box::pin(async move { Ok(answer) })
    }
}

fn script(answers: &[&[&str]]) -> Arc<dyn Lookup> {
    Arc::new(Script(Mutex::new(answers.iter().map(|a| a.iter().map(|ip| ip.parse().unwrap()).collect()).collect())))
}

#[tokio::test]
async fn the_public_guard_never_connects_to_loopback_in_any_spelling() {
    let witness = witness();
    let client = Client::new(ClientConfig::default().with_policy(Policy::Public)).unwrap();
    // Every listed form is refused before any connection; the loopback ones would reach the
    // witness if they were not.
    let hosts = include_str!("../fixtures/listed_forms.txt").lines().filter(|l| !l.is_empty() && !l.starts_with('#'));
    for host in hosts {
        let url = format!("https://{host}:{}/.well-known/servio.json", witness.port).parse().unwrap();
        let error = client.get_json(&url, HeaderMap::new()).await.unwrap_err();
        assert!(error.is_refused(), "{host}: {error}");
    }
    // Names are judged after resolution: localhost by the system resolver, others scripted.
    let url = format!("https://localhost:{}/", witness.port).parse().unwrap();
    let error = client.get_json(&url, HeaderMap::new()).await.unwrap_err();
    assert!(error.is_refused(), "localhost: {error}");
    for answer in [&["127.0.0.1"][..], &["::1"], &["::ffff:127.0.0.1"], &["0.0.0.0"]] {
        let config =
            ClientConfig { lookup: Some(script(&[answer])), ..ClientConfig::default() }.with_policy(Policy::Public);
        let url = format!("https://scripted.test:{}/", witness.port).parse().unwrap();
        let error = Client::new(config).unwrap().get_json(&url, HeaderMap::new()).await.unwrap_err();
        assert!(error.is_refused(), "{answer:?}: {error}");
        assert!(error.to_string().contains("scripted.test resolves to"), "{error}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(witness.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn redirect_hops_and_second_answers_are_judged_too() {
    let ca = LocalCa::generate(&["stand-in.test"]).unwrap();
    let witness = witness();
    let target = witness.port;
    // 127.0.0.2 stands in for a public address: the guard is told to let it through.
    let app = Router::new()
        .route("/.well-known/servio.json", get(|| async { json(MANIFEST) }))
        .route("/to-loopback", get(move || async move { Redirect::temporary(&format!("https://127.0.0.1:{target}/")) }))
        .route("/to-name", get(move || async move { Redirect::temporary(&format!("https://localhost:{target}/")) }));
    let server = site(&ca, "127.0.0.2", app).await;
    let guard = Guard { policy: Policy::Public, allowed: vec!["127.0.0.2/32".parse().unwrap()] };
    let config = |answers: &[&[&str]]| ClientConfig {
        guard: guard.clone(),
        extra_roots_pem: Some(ca.ca_pem.clone().into_bytes()),
        lookup: Some(script(answers)),
        ..ClientConfig::default()
    };
    let port = server.addr.port();
    let url = |path: &str| format!("https://stand-in.test:{port}{path}").parse().unwrap();

    let client = Client::new(config(&[&["127.0.0.2"]])).unwrap();
    assert!(client.get_json(&url("/.well-known/servio.json"), HeaderMap::new()).await.is_ok());
    let error = client.get_json(&url("/to-loopback"), HeaderMap::new()).await.unwrap_err();
    assert!(error.is_refused(), "redirect to 127.0.0.1: {error}");

    // Rebinding: the first answer passes, the second (for a fresh connection) does not.
    let rebinding = config(&[&["127.0.0.2"], &["127.0.0.1"]]);
    let first = Client::new(rebinding.clone()).unwrap();
    assert!(first.get_json(&url("/.well-known/servio.json"), HeaderMap::new()).await.is_ok());
    let second = Client::new(rebinding).unwrap();
    let error = second.get_json(&url("/.well-known/servio.json"), HeaderMap::new()).await.unwrap_err();
    assert!(error.is_refused(), "second answer: {error}");

    // A mixed answer is refused whole.
    let mixed = Client::new(config(&[&["127.0.0.2", "127.0.0.1"]])).unwrap();
    let error = mixed.get_json(&url("/.well-known/servio.json"), HeaderMap::new()).await.unwrap_err();
    assert!(error.is_refused(), "mixed answer: {error}");

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(witness.connections.load(Ordering::SeqCst), 0);
}
