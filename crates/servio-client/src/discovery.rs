//! Finding a site's manifest (interpretation §1).
//!
//! The three well-known paths are tried in order. A path serves the manifest when it answers
//! `200` with `Content-Type: application/json`; that answer is the manifest even when its
//! JSON is broken. `404`, `410`, any other status below 500 and a `200` of another type (a
//! single-page app answering `index.html` everywhere) mean "not here". A transport failure or
//! a `5xx` stops discovery. When no path serves a manifest, the error says what each answered.

use std::fmt;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH};
use url::Url;

use crate::http::{Client, ClientError, Fetched};

/// The paths tried, in order.
pub const PATHS: [&str; 3] = ["/.well-known/servio.json", "/servio.json", "/api/servio/manifest"];

/// A manifest found.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The site's origin, such as `https://example.com`.
    pub origin: Url,
    /// Where the manifest was served.
    pub url: Url,
    /// Its bytes, unvalidated.
    pub body: Vec<u8>,
    /// Validators for a later conditional request.
    pub validators: Validators,
}

/// `ETag` and `Last-Modified` of a fetched manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The `ETag` header.
    pub etag: Option<String>,
    /// The `Last-Modified` header.
    pub last_modified: Option<String>,
}

impl Validators {
    fn from_response(fetched: &Fetched) -> Validators {
        Validators {
            etag: fetched.header("etag").map(str::to_owned),
            last_modified: fetched.header("last-modified").map(str::to_owned),
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = self.etag.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(IF_NONE_MATCH, value);
        }
        if let Some(value) = self.last_modified.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(IF_MODIFIED_SINCE, value);
        }
        headers
    }
}

/// What one path answered when it did not serve the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathAnswer {
    /// The path.
    pub path: &'static str,
    /// What it answered, for people: `404 Not Found`, `200 with text/html`.
    pub answer: String,
}

/// Why discovery failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The input is not a site URL we fetch.
    #[error("{0}")]
    BadInput(String),
    /// No path served a manifest; what each answered.
    #[error("{}", NotFound(.0))]
    NotFound(Vec<PathAnswer>),
    /// A path answered 5xx: discovery stops there.
    #[error("{url} answered {status}: discovery stops at a server error")]
    ServerError {
        /// The URL.
        url: Box<Url>,
        /// The status.
        status: StatusCode,
    },
    /// A request failed (DNS, TLS, connect, timeout, limit, guard).
    #[error("{}", RequestFailed(url, error))]
    Request {
        /// The URL.
        url: Box<Url>,
        /// What went wrong.
        error: ClientError,
    },
}

/// "no manifest found", and what each path answered, a line each.
struct NotFound<'a>(&'a [PathAnswer]);

impl fmt::Display for NotFound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no manifest found; each path answered:")?;
        for a in self.0 {
            write!(f, "\n  {}: {}", a.path, a.answer)?;
        }
        Ok(())
    }
}

/// A failed request of discovery: when nothing came back, the host is what failed, not the
/// path, so it is named once.
struct RequestFailed<'a>(&'a Url, &'a ClientError);

impl fmt::Display for RequestFailed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let RequestFailed(url, error) = *self;
        if error.is_unreachable() {
            write!(f, "could not reach {}: {error}", url.origin().ascii_serialization())
        } else {
            write!(f, "{url}: {error}")
        }
    }
}

impl DiscoveryError {
    /// The guard's refusal, when that is what stopped discovery.
    pub fn refusal(&self) -> Option<&crate::guard::Refusal> {
        match self {
            DiscoveryError::Request { error: ClientError::Refused(r), .. } => Some(r),
            _ => None,
        }
    }

    /// The failed request's error, for callers that advise on some kinds (a CA to trust).
    pub fn client_error(&self) -> Option<&ClientError> {
        match self {
            DiscoveryError::Request { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The origin of a site given as an origin or any URL on it.
pub fn origin_of(input: &str) -> Result<Url, DiscoveryError> {
    let url = Url::parse(input).map_err(|e| DiscoveryError::BadInput(format!("{input:?} is not a URL: {e}")))?;
    if url.host().is_none() {
        return Err(DiscoveryError::BadInput(format!("{input:?} has no host")));
    }
    let origin = url.origin().ascii_serialization();
    Url::parse(&origin).map_err(|e| DiscoveryError::BadInput(format!("{input:?}: {e}")))
}

fn is_json(fetched: &Fetched) -> bool {
    fetched.media_type().as_deref() == Some("application/json")
}

/// Finds the manifest of the site `input` (an origin or any URL on it).
pub async fn discover(client: &Client, input: &str) -> Result<Discovered, DiscoveryError> {
    match search(client, origin_of(input)?, None).await? {
        Refreshed::Changed(found) => Ok(*found),
        // Nothing was asked conditionally, so nothing can be "not modified" (a `304` to an
        // unconditional request is one more path that did not serve the manifest).
        Refreshed::NotModified => Err(DiscoveryError::NotFound(Vec::new())),
    }
}

/// The result of a conditional refresh.
#[derive(Debug, Clone)]
pub enum Refreshed {
    /// `304 Not Modified`: the stored manifest is current.
    NotModified,
    /// A new copy.
    Changed(Box<Discovered>),
}

/// Looks for the manifest of `origin` again, from its own paths in order as discovery does,
/// every time: a manifest last served through a redirect (to another origin, say) is not
/// asked for there again, so a site that stops redirecting is read at its own paths.
/// `url` is where the manifest was last served and `validators` its `ETag` and
/// `Last-Modified`: they are sent only with the path they belong to, the path that served
/// `url` itself without a redirect.
pub async fn refresh(
    client: &Client,
    origin: &Url,
    url: &Url,
    validators: &Validators,
) -> Result<Refreshed, DiscoveryError> {
    search(client, origin.clone(), Some((url, validators))).await
}

/// Tries the paths of `origin` in order (interpretation §1); `stored` is where the manifest
/// was last served and its validators, for a conditional request of that path.
async fn search(
    client: &Client,
    origin: Url,
    stored: Option<(&Url, &Validators)>,
) -> Result<Refreshed, DiscoveryError> {
    let mut answers = Vec::new();
    for path in PATHS {
        let url = origin.join(path).map_err(|e| DiscoveryError::BadInput(e.to_string()))?;
        let validators = stored.filter(|(served, _)| **served == url).map(|(_, validators)| validators);
        let mut fetched = get(client, &url, validators).await?;
        if fetched.status == StatusCode::NOT_MODIFIED && validators.is_some() {
            if fetched.url == url {
                return Ok(Refreshed::NotModified);
            }
            // The path redirects now, and its target answered validators that were never its
            // own: ask again without them.
            fetched = get(client, &url, None).await?;
        }
        if fetched.status.is_server_error() {
            return Err(DiscoveryError::ServerError { url: Box::new(url), status: fetched.status });
        }
        if fetched.status == StatusCode::OK && is_json(&fetched) {
            let validators = Validators::from_response(&fetched);
            return Ok(Refreshed::Changed(Box::new(Discovered {
                origin,
                url: fetched.url,
                body: fetched.body,
                validators,
            })));
        }
        let answer = match (fetched.status, fetched.media_type()) {
            (StatusCode::OK, Some(kind)) => format!("200 OK with {kind}, not application/json"),
            (StatusCode::OK, None) => "200 OK without a Content-Type".to_owned(),
            (status, _) => status.to_string(),
        };
        answers.push(PathAnswer { path, answer });
    }
    Err(DiscoveryError::NotFound(answers))
}

/// `GET url` for a manifest, conditional on `validators` when given.
async fn get(client: &Client, url: &Url, validators: Option<&Validators>) -> Result<Fetched, DiscoveryError> {
    let headers = validators.map(Validators::headers).unwrap_or_default();
    client.get_json(url, headers).await.map_err(|error| DiscoveryError::Request { url: Box::new(url.clone()), error })
}
