//! The HTTP client every outbound request goes through: HTTPS only (plain `http` by explicit
//! opt-in), the address guard on every DNS answer and every redirect hop, and limits on body
//! size (counted after decompression, while streaming), total time and redirects.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use url::{Host, Url};

use crate::guard::{Guard, Policy, Refusal};
use crate::transport::{DnsFailure, TransportError};

/// The default limit of a tool call's answer (interpretation §5).
pub const DEFAULT_CALL_MAX_BODY: usize = 4 * 1024 * 1024;
/// The default time a tool call may take (interpretation §5).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The limits of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest body accepted, after decompression.
    pub max_body: usize,
    /// Longest the whole request may take.
    pub timeout: Duration,
}

/// Settings of a [`Client`].
#[derive(Clone)]
pub struct ClientConfig {
    /// Which addresses may be connected to.
    pub guard: Guard,
    /// Whether plain `http://` URLs are allowed (local development only).
    pub allow_http: bool,
    /// Largest response body accepted, after decompression (manifests, OAuth).
    pub max_body: usize,
    /// Longest a whole request may take, body included (manifests, OAuth).
    pub timeout: Duration,
    /// Largest tool-call answer accepted (interpretation §5).
    pub call_max_body: usize,
    /// Longest a tool call may take (interpretation §5).
    pub call_timeout: Duration,
    /// Most redirects followed.
    pub max_redirects: usize,
    /// Extra trusted roots, PEM, beside the platform's.
    pub extra_roots_pem: Option<Vec<u8>>,
    /// How host names become addresses; the system resolver when `None`.
    pub lookup: Option<Arc<dyn Lookup>>,
}

impl Default for ClientConfig {
    /// Interpretation §1: 8 MiB, 10 s, 5 redirects; §5: tool calls 4 MiB, 30 s; the `any`
    /// policy, https only.
    fn default() -> ClientConfig {
        ClientConfig {
            guard: Guard::default(),
            allow_http: false,
            max_body: 8 * 1024 * 1024,
            timeout: Duration::from_secs(10),
            call_max_body: DEFAULT_CALL_MAX_BODY,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_redirects: 5,
            extra_roots_pem: None,
            lookup: None,
        }
    }
}

impl ClientConfig {
    /// The limits of fetching a manifest or talking OAuth.
    pub fn fetch_limits(&self) -> Limits {
        Limits { max_body: self.max_body, timeout: self.timeout }
    }

    /// The limits of a tool call.
    pub fn call_limits(&self) -> Limits {
        Limits { max_body: self.call_max_body, timeout: self.call_timeout }
    }

    /// The settings with `policy` as the guard's policy.
    pub fn with_policy(mut self, policy: Policy) -> ClientConfig {
        self.guard.policy = policy;
        self
    }

    /// Adds the roots in the PEM file at `path`.
    pub fn with_ca_file(mut self, path: &Path) -> Result<ClientConfig, ClientError> {
        let pem =
            std::fs::read(path).map_err(|e| ClientError::Setup(format!("could not read {}: {e}", path.display())))?;
        self.extra_roots_pem = Some(pem);
        Ok(self)
    }
}

/// Turns a host name into addresses. The guard judges whatever this answers.
pub trait Lookup: Send + Sync {
    /// The addresses of `host`.
    fn lookup(&self, host: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;
}

/// The operating system's resolver.
struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let host = host.to_owned();
        Box::pin(async move { Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a| a.ip()).collect()) })
    }
}

/// The resolver reqwest calls: looks up, judges every address, and hands over exactly the
/// addresses it judged, so that the connection goes to a checked address.
struct GuardedResolver {
    lookup: Arc<dyn Lookup>,
    guard: Guard,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let lookup = Arc::clone(&self.lookup);
        let guard = self.guard.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addresses = match lookup.lookup(&host).await {
                Ok(addresses) if !addresses.is_empty() => addresses,
                Ok(_) => return Err(DnsFailure { host, source: None }.into()),
                Err(error) => return Err(DnsFailure { host, source: Some(error) }.into()),
            };
            guard.check_all(&host, &addresses)?;
            let addrs: Addrs = Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The client could not be built (a bad PEM file, say).
    #[error("client setup failed: {0}")]
    Setup(String),
    /// The URL is not one we fetch: another scheme than https or http, or malformed.
    #[error("{0}")]
    BadUrl(String),
    /// The URL is plain `http`, which this client was not set up to fetch. Callers that have a
    /// way to allow it (the CLI's `--allow-http`) say so; the platform has none.
    #[error("the URL is plain http; only https is fetched")]
    PlainHttp(Url),
    /// The guard refused an address.
    #[error("refused: {0}")]
    Refused(Refusal),
    /// A redirect broke a rule: too many, or to another scheme.
    #[error("redirect refused: {0}")]
    Redirect(String),
    /// The body is larger than the limit.
    #[error("the response body is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The request took longer than the limit.
    #[error("no complete response within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// DNS, TLS, connect or protocol failure.
    #[error(transparent)]
    Transport(TransportError),
}

impl ClientError {
    /// True when the address guard refused the request.
    pub fn is_refused(&self) -> bool {
        matches!(self, ClientError::Refused(_))
    }

    /// True when the site gave no answer: its name, the connection or the TLS handshake
    /// failed, or nothing complete came back in time. Callers say "could not reach" then.
    pub fn is_unreachable(&self) -> bool {
        match self {
            ClientError::Timeout(_) => true,
            ClientError::Transport(error) => error.is_unreachable(),
            _ => false,
        }
    }

    /// The transport failure, for callers that give advice on some kinds (a CA to trust).
    pub fn transport(&self) -> Option<&TransportError> {
        match self {
            ClientError::Transport(error) => Some(error),
            _ => None,
        }
    }
}

/// A response read in full, within the limits.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The final URL, after redirects.
    pub url: Url,
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, decompressed.
    pub body: Vec<u8>,
}

impl Fetched {
    /// The media type without parameters, lowercased (`application/json`).
    pub fn media_type(&self) -> Option<String> {
        let value = self.headers.get(reqwest::header::CONTENT_TYPE)?.to_str().ok()?;
        Some(value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The outbound HTTP client.
#[derive(Clone)]
pub struct Client {
    /// Manifests and OAuth: redirects followed to any origin the hop rules allow.
    http: reqwest::Client,
    /// Tool calls: redirects followed only within the origin asked (see [`Client::send_call`]).
    calls: reqwest::Client,
    config: ClientConfig,
}

/// Where a client's requests may be redirected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirects {
    /// To any origin the hop rules allow.
    AnyOrigin,
    /// Only within the origin of the URL first asked.
    SameOrigin,
}

impl Client {
    /// Builds a client with `config`.
    pub fn new(config: ClientConfig) -> Result<Client, ClientError> {
        let http = build_http(&config, Redirects::AnyOrigin)?;
        let calls = build_http(&config, Redirects::SameOrigin)?;
        Ok(Client { http, calls, config })
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Checks that `url` may be fetched at all: scheme, and a literal address's guard verdict
    /// (names are judged when they are resolved).
    pub fn check_url(&self, url: &Url) -> Result<(), ClientError> {
        HopRules {
            guard: self.config.guard.clone(),
            allow_http: self.config.allow_http,
            max_redirects: 0,
            redirects: Redirects::AnyOrigin,
        }
        .check_target(url)
    }

    /// Judges `url` as a request to it would be judged, before any is made: its scheme, and
    /// every address its host has (a literal at once, a name once looked up). A lookup that
    /// fails or finds nothing refuses nothing: a request made later says so itself. Used to
    /// refuse a URL where it is given (a manifest's endpoints, when its site is added) rather
    /// than where it is first called.
    pub async fn check_reachable(&self, url: &Url) -> Result<(), ClientError> {
        self.check_url(url)?;
        let guard = &self.config.guard;
        let (Some(Host::Domain(host)), Policy::Public) = (url.host(), guard.policy) else { return Ok(()) };
        let lookup = self.config.lookup.clone().unwrap_or_else(|| Arc::new(SystemLookup));
        match tokio::time::timeout(self.config.timeout, lookup.lookup(host)).await {
            Ok(Ok(addresses)) => guard.check_all(host, &addresses).map_err(ClientError::Refused),
            Ok(Err(_)) | Err(_) => Ok(()),
        }
    }

    /// Sends a request and reads the whole response within the fetch limits.
    pub async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<Fetched, ClientError> {
        self.send_with(&self.http, method, url, headers, body, self.config.fetch_limits()).await
    }

    /// Posts a tool call's `body` within the call limits. A redirect is followed only within the
    /// origin of `url` (the approved `server.url`'s): one to another origin is a
    /// [`ClientError::Redirect`] that names where it pointed, and nothing is sent there, since
    /// a `307` or `308` would re-post the user's arguments to a host the user never approved.
    pub async fn send_call(&self, url: &Url, headers: HeaderMap, body: Vec<u8>) -> Result<Fetched, ClientError> {
        self.send_with(&self.calls, Method::POST, url, headers, Some(body), self.config.call_limits()).await
    }

    async fn send_with(
        &self,
        http: &reqwest::Client,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
        limits: Limits,
    ) -> Result<Fetched, ClientError> {
        self.check_url(url)?;
        let mut request = http.request(method, url.clone()).headers(headers).timeout(limits.timeout);
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().await.map_err(|e| self.classify(e, url, limits))?;
        let status = response.status();
        let headers = response.headers().clone();
        let final_url = response.url().clone();
        // reqwest hands back, unfollowed, a redirect to a scheme it does not speak (`file:`).
        if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
            let location = headers.get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("nowhere");
            return Err(ClientError::Redirect(format!(
                "{final_url} redirects to {location}, which is not followed: only https is"
            )));
        }
        if response.content_length().is_some_and(|n| n > limits.max_body as u64) {
            return Err(ClientError::TooLarge { limit: limits.max_body });
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.classify(e, url, limits))?;
            if body.len() + chunk.len() > limits.max_body {
                return Err(ClientError::TooLarge { limit: limits.max_body });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { url: final_url, status, headers, body })
    }

    /// `GET url` with `Accept: application/json` and any extra headers.
    pub async fn get_json(&self, url: &Url, extra: HeaderMap) -> Result<Fetched, ClientError> {
        let mut headers = extra;
        headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/json"));
        self.send(Method::GET, url, headers, None).await
    }

    /// Maps a reqwest error for a request to `url` to ours, finding a guard refusal or redirect
    /// error inside it, and otherwise saying in words what failed.
    fn classify(&self, error: reqwest::Error, url: &Url, limits: Limits) -> ClientError {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
        while let Some(current) = source {
            if let Some(refusal) = current.downcast_ref::<Refusal>() {
                return ClientError::Refused(refusal.clone());
            }
            if let Some(ClientError::Refused(refusal)) = current.downcast_ref::<ClientError>() {
                return ClientError::Refused(refusal.clone());
            }
            if let Some(ClientError::Redirect(message)) = current.downcast_ref::<ClientError>() {
                return ClientError::Redirect(message.clone());
            }
            if let Some(ClientError::BadUrl(message)) = current.downcast_ref::<ClientError>() {
                return ClientError::Redirect(message.clone());
            }
            source = current.source();
        }
        if error.is_timeout() {
            return ClientError::Timeout(limits.timeout);
        }
        ClientError::Transport(TransportError::from_reqwest(&error, url))
    }
}

/// The reqwest client of `config` whose redirects follow `redirects`: the address guard on
/// every DNS answer, no proxy, the hop rules on every redirect.
fn build_http(config: &ClientConfig, redirects: Redirects) -> Result<reqwest::Client, ClientError> {
    let lookup = config.lookup.clone().unwrap_or_else(|| Arc::new(SystemLookup));
    let hop_rules = HopRules {
        guard: config.guard.clone(),
        allow_http: config.allow_http,
        max_redirects: config.max_redirects,
        redirects,
    };
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .timeout(config.timeout)
        .user_agent(concat!("servio/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(GuardedResolver { lookup, guard: config.guard.clone() }))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            match hop_rules.check(attempt.url(), attempt.previous()) {
                Ok(()) => attempt.follow(),
                Err(error) => attempt.error(error),
            }
        }));
    if let Some(pem) = &config.extra_roots_pem {
        let certs =
            reqwest::Certificate::from_pem_bundle(pem).map_err(|e| ClientError::Setup(format!("bad CA file: {e}")))?;
        if certs.is_empty() {
            return Err(ClientError::Setup("the CA file holds no certificate".into()));
        }
        builder = builder.tls_certs_merge(certs);
    }
    builder.build().map_err(|e| ClientError::Setup(crate::error_chain(&e)))
}

/// The rules every redirect hop must pass.
#[derive(Clone)]
struct HopRules {
    guard: Guard,
    allow_http: bool,
    max_redirects: usize,
    redirects: Redirects,
}

impl HopRules {
    /// `previous` is reqwest's list of URLs visited before this redirect's target `url`: the
    /// URL first asked, then every hop that redirected.
    fn check(&self, url: &Url, previous: &[Url]) -> Result<(), ClientError> {
        if previous.len() > self.max_redirects {
            return Err(ClientError::Redirect(format!(
                "more than {} redirects (the last to {url})",
                self.max_redirects
            )));
        }
        if let (Redirects::SameOrigin, Some(first), Some(from)) = (self.redirects, previous.first(), previous.last())
            && url.origin() != first.origin()
        {
            return Err(ClientError::Redirect(format!(
                "{from} redirects to {url}, another origin than {}: a tool call goes only to the origin of the \
                 approved server.url, so it was not followed and nothing was sent there",
                first.origin().ascii_serialization()
            )));
        }
        self.check_target(url).map_err(|e| match e {
            ClientError::BadUrl(message) => ClientError::Redirect(message),
            ClientError::PlainHttp(url) => ClientError::Redirect(format!("{url} is plain http; only https is fetched")),
            other => other,
        })
    }

    fn check_target(&self, url: &Url) -> Result<(), ClientError> {
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            "http" => return Err(ClientError::PlainHttp(url.clone())),
            other => {
                return Err(ClientError::BadUrl(format!("{url} uses the {other}: scheme; only https is fetched")));
            }
        }
        let literal = match url.host() {
            Some(Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
            Some(Host::Domain(_)) => None,
            None => return Err(ClientError::BadUrl(format!("{url} has no host"))),
        };
        if let Some(address) = literal {
            self.guard.check(url.host_str().unwrap_or_default(), address).map_err(ClientError::Refused)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public() -> Guard {
        Guard { policy: Policy::Public, allowed: Vec::new() }
    }

    #[test]
    fn every_form_is_refused_as_a_redirect_target() {
        let rules = HopRules { guard: public(), allow_http: false, max_redirects: 5, redirects: Redirects::AnyOrigin };
        let start: Url = "https://start.example/".parse().unwrap();
        let visited = |n: usize| vec![start.clone(); n];
        for form in crate::guard::listed_forms() {
            let url: Url = format!("https://{form}:8443/next").parse().unwrap();
            let error = rules.check(&url, &visited(1)).unwrap_err();
            assert!(error.is_refused(), "{form}: {error}");
        }
        let http: Url = "http://example.com/".parse().unwrap();
        assert!(matches!(rules.check(&http, &visited(1)), Err(ClientError::Redirect(_))));
        let file: Url = "file:///etc/passwd".parse().unwrap();
        assert!(matches!(rules.check(&file, &visited(1)), Err(ClientError::Redirect(_))));
        let fine: Url = "https://example.com/".parse().unwrap();
        assert!(rules.check(&fine, &visited(5)).is_ok());
        assert!(matches!(rules.check(&fine, &visited(6)), Err(ClientError::Redirect(_))));
    }

    #[test]
    fn tool_call_redirects_stay_on_the_origin_first_asked() {
        let rules = HopRules { guard: public(), allow_http: false, max_redirects: 5, redirects: Redirects::SameOrigin };
        let first: Url = "https://site.example/api/tools/x".parse().unwrap();
        let same: Url = "https://site.example/v2/tools/x".parse().unwrap();
        assert!(rules.check(&same, std::slice::from_ref(&first)).is_ok());
        for other in ["https://other.example/api/tools/x", "https://site.example:444/api/tools/x"] {
            let other: Url = other.parse().unwrap();
            let error = rules.check(&other, &[first.clone(), same.clone()]).unwrap_err().to_string();
            assert!(error.contains(&format!("{same} redirects to {other}, another origin")), "{error}");
        }
        assert!(matches!(rules.check(&same, &vec![first.clone(); 6]), Err(ClientError::Redirect(_))));
    }

    /// Answers every name with one fixed address.
    struct Fixed(IpAddr);

    impl Lookup for Fixed {
        fn lookup(&self, _: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
            let address = self.0;
            Box::pin(async move { Ok(vec![address]) })
        }
    }

    #[tokio::test]
    async fn every_form_is_refused_as_a_dns_answer_before_any_connection() {
        for form in crate::guard::listed_forms() {
            let url: Url = format!("https://{form}/").parse().unwrap();
            let address = match url.host().unwrap() {
                Host::Ipv4(v4) => IpAddr::V4(v4),
                Host::Ipv6(v6) => IpAddr::V6(v6),
                Host::Domain(d) => panic!("{form} parsed as {d}"),
            };
            // The resolver alone: nothing here can open a connection.
            let resolver = GuardedResolver { lookup: Arc::new(Fixed(address)), guard: public() };
            let answer = resolver.resolve("site.test".parse().unwrap()).await;
            let error = answer.err().unwrap_or_else(|| panic!("{form} passed"));
            assert!(error.to_string().contains("site.test resolves to"), "{form}: {error}");
        }
    }

    /// Answers every name with one address.
    struct Answer(IpAddr);

    impl Lookup for Answer {
        fn lookup(&self, _host: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
            let address = self.0;
            Box::pin(async move { Ok(vec![address]) })
        }
    }

    #[tokio::test]
    async fn a_url_is_judged_before_any_request() {
        let client = |policy, address: &str| {
            let lookup: Arc<dyn Lookup> = Arc::new(Answer(address.parse().unwrap()));
            let guard = Guard { policy, allowed: Vec::new() };
            Client::new(ClientConfig { guard, lookup: Some(lookup), ..ClientConfig::default() }).unwrap()
        };
        let named: Url = "https://api.example.com/servio".parse().unwrap();
        let literal: Url = "https://169.254.169.254/latest".parse().unwrap();
        let error = client(Policy::Public, "10.0.0.7").check_reachable(&named).await.unwrap_err();
        assert!(error.is_refused(), "{error}");
        assert_eq!(
            error.to_string(),
            "refused: api.example.com resolves to 10.0.0.7, a private address; the public guard only connects to global unicast addresses"
        );
        assert!(client(Policy::Public, "93.184.215.14").check_reachable(&literal).await.unwrap_err().is_refused());
        client(Policy::Public, "93.184.215.14").check_reachable(&named).await.unwrap();
        client(Policy::Any, "10.0.0.7").check_reachable(&named).await.unwrap();
    }
}
