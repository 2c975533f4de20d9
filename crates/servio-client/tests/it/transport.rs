//! A site that cannot be reached is reported by kind, in words: one case per kind, against real
//! listeners on loopback. Regression: these used to come out as reqwest's error chain
//! (`error sending request for url (...): client error (Connect): invalid peer certificate:
//! UnknownIssuer`), which names the URL twice and the cause as a Rust identifier.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use reqwest::header::HeaderMap;
use servio_client::{Client, ClientConfig, ClientError, Lookup, TlsProblem, TransportError};
use servio_demo_site::{LocalCa, Running, serve_https};

/// Answers every name with 127.0.0.1, so that a name the certificate does not carry still
/// reaches the test's server.
struct Loopback;

impl Lookup for Loopback {
    fn lookup(&self, _: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        Box::pin(async { Ok(vec![IpAddr::from([127, 0, 0, 1])]) })
    }
}

/// Answers every name with no address at all.
struct Nothing;

impl Lookup for Nothing {
    fn lookup(&self, _: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

async fn site(ca: &LocalCa) -> Running {
    let app = Router::new().route("/", get(|| async { "{}" }));
    serve_https(SocketAddr::from(([127, 0, 0, 1], 0)), ca, app).await.unwrap()
}

fn trusting(ca: &LocalCa) -> ClientConfig {
    ClientConfig { extra_roots_pem: Some(ca.ca_pem.clone().into_bytes()), ..ClientConfig::default() }
}

/// Fetches `url` with `config` and checks the transport error and its words.
async fn check(config: ClientConfig, url: &str, expected: TransportError, words: &str) {
    let client = Client::new(config).unwrap();
    let error = client.get_json(&url.parse().unwrap(), HeaderMap::new()).await.unwrap_err();
    let ClientError::Transport(found) = &error else { panic!("{url}: not a transport error: {error:?}") };
    assert_eq!(found, &expected, "{url}");
    assert_eq!(error.to_string(), words, "{url}");
    assert!(error.is_unreachable(), "{url}");
}

#[tokio::test]
async fn an_unknown_issuer_is_named() {
    let server = site(&LocalCa::generate(&[]).unwrap()).await;
    let url = format!("https://localhost:{}/", server.addr.port());
    let expected = TransportError::Tls(TlsProblem::UnknownIssuer);
    check(ClientConfig::default(), &url, expected, "the certificate is signed by an unknown issuer").await;
}

#[tokio::test]
async fn a_certificate_for_another_name_says_which_names_it_is_for() {
    let ca = LocalCa::generate(&[]).unwrap();
    let server = site(&ca).await;
    let url = format!("https://other.test:{}/", server.addr.port());
    let config = ClientConfig { lookup: Some(Arc::new(Loopback)), ..trusting(&ca) };
    let presented = ["localhost", "127.0.0.1", "::1"].map(str::to_owned).to_vec();
    let words = "the certificate is for another name (it is for localhost, 127.0.0.1, ::1)";
    check(config, &url, TransportError::Tls(TlsProblem::WrongName { presented }), words).await;
}

#[tokio::test]
async fn an_expired_certificate_is_named() {
    let ca = expired_leaf();
    let server = site(&ca).await;
    let url = format!("https://localhost:{}/", server.addr.port());
    check(trusting(&ca), &url, TransportError::Tls(TlsProblem::Expired), "the certificate has expired").await;
}

#[tokio::test]
async fn a_name_without_addresses_is_a_dns_failure() {
    // `.invalid` never resolves (RFC 6761), with or without a network.
    let expected = TransportError::Dns { host: "nonexistent.invalid".into() };
    let words = "could not resolve host nonexistent.invalid";
    check(ClientConfig::default(), "https://nonexistent.invalid/", expected.clone(), words).await;
    let config = ClientConfig { lookup: Some(Arc::new(Nothing)), ..ClientConfig::default() };
    check(config, "https://nonexistent.invalid/", expected, words).await;
}

#[tokio::test]
async fn a_closed_port_refuses_the_connection() {
    let port = closed_port();
    let url = format!("https://127.0.0.1:{port}/");
    let target = format!("127.0.0.1:{port}");
    let words = format!("connection refused by {target}");
    check(ClientConfig::default(), &url, TransportError::Refused { target }, &words).await;
}

#[tokio::test]
async fn plain_http_on_an_https_url_is_not_tls() {
    let port = plain_http_server();
    let url = format!("https://127.0.0.1:{port}/");
    let words = "the site does not speak TLS on that port (plain http?)";
    check(ClientConfig::default(), &url, TransportError::Tls(TlsProblem::NotTls), words).await;
}

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A server that answers anything with a plain HTTP response, as a site on the wrong port would.
fn plain_http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.read(&mut [0; 1024]);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        }
    });
    port
}

/// A CA and a `localhost` certificate it signed that expired in 2001.
fn expired_leaf() -> LocalCa {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, date_time_ymd};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.not_before = date_time_ymd(2000, 1, 1);
    params.not_after = date_time_ymd(2001, 1, 1);
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    LocalCa { ca_pem: ca_cert.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() }
}
