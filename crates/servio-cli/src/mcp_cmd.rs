//! `servio mcp`: the platform's MCP endpoint (`/mcp`) on standard input and output, for desktop
//! clients that start a command. It is a transport relay, not a second server: each message
//! the AI client writes goes to `/mcp` with the user's API token, and each message `/mcp` sends
//! comes back on standard output, so every method, revision and notice of `/mcp` exists here by
//! construction and the platform stays the one place that holds site credentials.
//!
//! rmcp's streamable HTTP client carries the messages: it follows the client's choice of
//! revision (an `initialize` opens a session and its event stream; a 2026-07-28 request goes
//! stateless with the headers that revision wants), runs requests side by side (a `tools/call`
//! does not wait behind a `subscriptions/listen` stream), and turns a cancellation into the
//! end of its request.

use std::time::Duration;

use anyhow::{Context, anyhow};
use reqwest::{StatusCode, Url};
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{IntoTransport, Transport};
use serde_json::Value;

use crate::cli::McpArgs;
use crate::{Failure, Outcome};

/// How long reaching the platform may take. A request's answer is not bound here: a tool call
/// is bound by the gateway, and streams (`GET`, `subscriptions/listen`) last as long as wanted.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

pub fn run(args: &McpArgs) -> Result<Outcome, Failure> {
    let platform = Platform::new(args)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        // Fail at once, on stderr, when the platform or the token is wrong: an AI client shows
        // little of what a server that dies later says.
        platform.check().await?;
        let client = IntoTransport::<RoleServer, _, _>::into_transport(rmcp::transport::stdio());
        relay(client, platform.transport()).await
    })?;
    Ok(Outcome::Ok)
}

/// The platform's address, the HTTP client that reaches it, and the API token.
struct Platform {
    http: reqwest::Client,
    base: Url,
    token: String,
}

impl Platform {
    fn new(args: &McpArgs) -> anyhow::Result<Platform> {
        let mut base = Url::parse(args.url.trim()).with_context(|| format!("--url {:?} is not a URL", args.url))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(anyhow!("--url {:?} must be an http:// or https:// address of the platform", args.url));
        }
        base.set_path("/");
        base.set_query(None);
        let mut http = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT);
        if let Some(path) = &args.ca_cert {
            let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            for certificate in reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("{} is not a PEM certificate bundle", path.display()))?
            {
                http = http.add_root_certificate(certificate);
            }
        }
        let token = args.token.as_deref().map(str::trim).unwrap_or_default();
        if token.is_empty() {
            return Err(anyhow!(
                "no API token: pass --token or set SERVIO_TOKEN (create one on the platform's \"AI clients\" page, /ai)"
            ));
        }
        Ok(Platform { http: http.build().context("building the HTTP client")?, base, token: token.to_owned() })
    }

    /// Whether the platform answers and takes the token, asked of its HTTP API once.
    async fn check(&self) -> anyhow::Result<()> {
        let url = self.base.join("api/tools").context("the platform's tool list address")?;
        let response = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .timeout(CONNECT_TIMEOUT)
            .send()
            .await
            .map_err(|e| anyhow!("{}: the platform cannot be reached: {e}", self.base))?;
        match response.status() {
            StatusCode::OK => Ok(()),
            StatusCode::UNAUTHORIZED => {
                Err(anyhow!("{}: the platform refused the API token: create a new one on /ai", self.base))
            }
            status => {
                let body = response.json::<Value>().await.unwrap_or(Value::Null);
                let message = body.get("error").and_then(Value::as_str).unwrap_or("no details");
                Err(anyhow!("{}: the platform answered {status}: {message}", self.base))
            }
        }
    }

    /// rmcp's streamable HTTP client for `/mcp`, sending the token with every request.
    fn transport(&self) -> StreamableHttpClientTransport<reqwest::Client> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{}mcp", self.base));
        config.auth_header = Some(self.token.clone());
        StreamableHttpClientTransport::with_client(self.http.clone(), config)
    }
}

/// Carries messages both ways until the client closes standard input or the platform's side
/// ends. A request the platform could not be asked is answered with an error that says why, so
/// the client never waits for an answer that will not come.
///
/// Messages go out side by side, each sent by a task of its own, except during an
/// `initialize` handshake: rmcp's client takes the message after `initialize` as the
/// `initialized` notification, so until that is sent each message is sent in turn. (Sent side
/// by side, a `tools/list` written right behind `initialized` could go first, under load: the
/// client then gave up on the session.)
async fn relay(
    mut client: impl Transport<RoleServer>,
    mut platform: StreamableHttpClientTransport<reqwest::Client>,
) -> anyhow::Result<()> {
    // The answers to requests that could not be sent, until written; a sender waits past this
    // many (the handshake's few messages are the only ones sent in turn, so it never waits on
    // the loop that reads them).
    let (failed, mut failures) = tokio::sync::mpsc::channel(1024);
    let mut handshake = Handshake::NotStarted;
    let outcome = loop {
        tokio::select! {
            message = client.receive() => {
                let Some(message) = message else { break Ok(()) };
                let id = match &message {
                    JsonRpcMessage::Request(request) => Some(request.id.clone()),
                    _ => None,
                };
                let in_turn = handshake.in_turn(&message);
                let sending = platform.send(message);
                let failed = failed.clone();
                let sent = async move {
                    if let Err(error) = sending.await {
                        tracing::warn!(error = %servio_client::error_chain(&error), "a message did not reach the platform");
                        if let Some(id) = id {
                            let _ = failed.send(unanswered(id, &error)).await;
                        }
                    }
                };
                if in_turn {
                    sent.await;
                } else {
                    tokio::spawn(sent);
                }
            }
            message = platform.receive() => {
                let Some(message) = message else {
                    break Err(anyhow!("the connection to the platform's /mcp ended"));
                };
                if let Err(error) = client.send(message).await {
                    break Err(anyhow!("writing to standard output: {error}"));
                }
            }
            Some(message) = failures.recv() => {
                if let Err(error) = client.send(message).await {
                    break Err(anyhow!("writing to standard output: {error}"));
                }
            }
        }
    };
    let _ = platform.close().await;
    outcome
}

/// Where the relay is in an `initialize` handshake, which must reach the platform in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    /// No message yet.
    NotStarted,
    /// `initialize` was sent; `initialized` was not.
    Opening,
    /// Over, or never started (a 2026-07-28 client opens no session).
    Done,
}

impl Handshake {
    /// Whether `message` must be sent before the next one is read, and where that leaves the
    /// handshake.
    fn in_turn(&mut self, message: &ClientJsonRpcMessage) -> bool {
        if *self == Handshake::Done {
            return false;
        }
        let initialize =
            matches!(message, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_)));
        let initialized = matches!(
            message,
            JsonRpcMessage::Notification(n) if matches!(n.notification, ClientNotification::InitializedNotification(_))
        );
        *self = match (*self, initialize, initialized) {
            (Handshake::NotStarted, true, _) => Handshake::Opening,
            (Handshake::Opening, _, true) | (Handshake::NotStarted, false, _) => Handshake::Done,
            (state, ..) => state,
        };
        true
    }
}

/// The error answer to request `id` when it could not be sent to the platform, saying why.
fn unanswered(id: RequestId, error: &StreamableHttpError<reqwest::Error>) -> rmcp::model::ServerJsonRpcMessage {
    let reason = match error {
        StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_) => {
            "it refused the API token (revoked?): create a new one on the platform's /ai page".to_owned()
        }
        StreamableHttpError::Client(error) => format!("it cannot be reached: {error}"),
        other => other.to_string(),
    };
    let message = format!("the platform did not answer this request: {reason}");
    JsonRpcMessage::error(ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None), Some(id))
}
