//! Calling a tool (interpretation §5): arguments validated first, then
//! `POST {server.url}/tools/{name}` with the bearer token; a `2xx` with JSON is the result.

use std::fmt;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use servio_manifest::schema::{ArgumentError, ArgumentValidator};
use servio_manifest::{Manifest, Tool};
use url::Url;

use crate::http::{Client, ClientError};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No tool of that name in the manifest.
    #[error("no tool named {name:?}; the site has: {}", known.join(", "))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: Vec<String>,
    },
    /// The arguments do not match the tool's schema; nothing was sent.
    #[error("{}", InvalidArguments(.0))]
    InvalidArguments(Vec<ArgumentError>),
    /// The tool's schema could not be compiled.
    #[error("the tool's input_schema cannot be used: {0}")]
    BadSchema(String),
    /// The request failed.
    #[error(transparent)]
    Request(ClientError),
    /// The site answered `2xx`, but not with JSON.
    #[error("the site's answer is not JSON: {0}")]
    NotJson(String),
    /// The site answered, but not with a `2xx`.
    #[error("the site answered {status}: {body}")]
    Failed {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
        /// When the site asked to be tried again (`Retry-After`, usually with 429 or 503).
        retry_after: Option<jiff::Timestamp>,
    },
}

/// Arguments' problems as [`write_invalid_arguments`] words them.
struct InvalidArguments<'a>(&'a [ArgumentError]);

impl fmt::Display for InvalidArguments<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_invalid_arguments(f, self.0)
    }
}

/// "invalid arguments, nothing was sent:" and each problem on a line of its own, at its pointer:
/// the message of every caller that checks arguments before sending them.
pub fn write_invalid_arguments(f: &mut fmt::Formatter<'_>, errors: &[ArgumentError]) -> fmt::Result {
    f.write_str("invalid arguments, nothing was sent:")?;
    for e in errors {
        let at = if e.pointer.as_str().is_empty() { "(the arguments)" } else { e.pointer.as_str() };
        write!(f, "\n  {at}: {}", e.message)?;
    }
    Ok(())
}

/// The endpoint of `tool`: `{server.url}/tools/{name}`, one trailing `/` of `server.url`
/// dropped and the name percent-encoded as one path segment.
pub fn tool_url(server_url: &Url, tool: &str) -> Url {
    let mut url = server_url.clone();
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty().push("tools").push(tool);
    }
    url
}

/// One call of one of a manifest's tools: which, with what arguments, under which bearer
/// token. The arguments are checked against the tool's schema before anything is sent.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// The manifest that declares the tool.
    pub manifest: &'a Manifest,
    /// The tool's name in the manifest.
    pub name: &'a str,
    /// The arguments, a JSON object.
    pub args: &'a Value,
    /// The bearer token, if the site wants one.
    pub token: Option<&'a str>,
}

impl ToolCall<'_> {
    /// Looks the tool up, checks the arguments and sends the call; the `2xx` body as the site
    /// wrote it (to read a metric out of it exactly). `validator` is the tool's schema compiled
    /// by the caller, for many calls of one tool (compiling costs more than checking); without
    /// it the schema is compiled for this call.
    pub async fn send(self, client: &Client, validator: Option<&ArgumentValidator>) -> Result<Vec<u8>, CallError> {
        let tool = find(self.manifest, self.name)?;
        let compiled;
        let validator = match validator {
            Some(validator) => validator,
            None => {
                compiled = ArgumentValidator::new(&tool.input_schema).map_err(|e| CallError::BadSchema(e.message))?;
                &compiled
            }
        };
        // Arguments too costly to validate are the schema's permanent error, never a retry.
        let problems = validator.try_check(self.args).map_err(|e| CallError::BadSchema(e.message))?;
        if !problems.is_empty() {
            return Err(CallError::InvalidArguments(problems));
        }
        post_tool(client, &self.manifest.server_url, &tool.name, self.args, self.token).await
    }

    /// [`ToolCall::send`], with the answer read as JSON.
    pub async fn json(self, client: &Client) -> Result<Value, CallError> {
        let body = self.send(client, None).await?;
        serde_json::from_slice(&body).map_err(|e| CallError::NotJson(format!("{e}: {}", excerpt(&body))))
    }
}

/// The start of a body, for messages.
pub fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned()
}

/// Sends a call of `tool` at `server_url` without validating `args` (the caller did, with a
/// validator it keeps): for the AI gateway, which compiles each schema once. Returns the `2xx`
/// body unparsed.
pub async fn post_tool(
    client: &Client,
    server_url: &Url,
    tool: &str,
    args: &Value,
    token: Option<&str>,
) -> Result<Vec<u8>, CallError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            CallError::Request(ClientError::Setup("the token has characters a header cannot carry".into()))
        })?;
        headers.insert(AUTHORIZATION, value);
    }
    let url = tool_url(server_url, tool);
    let body = serde_json::to_vec(args).map_err(|e| CallError::BadSchema(e.to_string()))?;
    let fetched = client.send_call(&url, headers, body).await.map_err(CallError::Request)?;
    if !fetched.status.is_success() {
        return Err(CallError::Failed {
            status: fetched.status.as_u16(),
            body: excerpt(&fetched.body),
            retry_after: retry_after(&fetched.headers, jiff::Timestamp::now()),
        });
    }
    Ok(fetched.body)
}

/// The time a `Retry-After` header names (RFC 9110 §10.2.3): seconds from `now`, or an
/// HTTP date. An unreadable header is ignored: backoff still applies.
fn retry_after(headers: &HeaderMap, now: jiff::Timestamp) -> Option<jiff::Timestamp> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u32>() {
        return now.checked_add(jiff::SignedDuration::from_secs(i64::from(seconds))).ok();
    }
    jiff::fmt::rfc2822::parse(value).ok().map(|zoned| zoned.timestamp())
}

fn find<'m>(manifest: &'m Manifest, name: &str) -> Result<&'m Tool, CallError> {
    manifest.tool(name).ok_or_else(|| CallError::UnknownTool {
        name: name.to_owned(),
        known: manifest.tools.iter().map(|t| t.name.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::{retry_after, tool_url};

    #[test]
    fn tool_urls() {
        let url = |server: &str, tool| tool_url(&server.parse().unwrap(), tool).to_string();
        assert_eq!(
            url("https://a.example/api/servio", "shop.getSales"),
            "https://a.example/api/servio/tools/shop.getSales"
        );
        // One trailing slash of the server's URL is dropped, and the name is one path segment.
        assert_eq!(url("https://a.example/api/servio/", "x"), "https://a.example/api/servio/tools/x");
        assert_eq!(url("https://a.example", "a b/c?"), "https://a.example/tools/a%20b%2Fc%3F");
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates_and_ignores_the_rest() {
        let now: jiff::Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        let read = |value: &str| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(reqwest::header::RETRY_AFTER, value.parse().unwrap());
            retry_after(&headers, now).map(|t| t.to_string())
        };
        assert_eq!(read("120").as_deref(), Some("2026-03-01T10:02:00Z"));
        assert_eq!(read(" 0 ").as_deref(), Some("2026-03-01T10:00:00Z"));
        assert_eq!(read("Sun, 01 Mar 2026 12:30:00 GMT").as_deref(), Some("2026-03-01T12:30:00Z"));
        for bad in ["-5", "soon", "1.5", ""] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
        assert_eq!(retry_after(&reqwest::header::HeaderMap::new(), now), None);
    }
}
