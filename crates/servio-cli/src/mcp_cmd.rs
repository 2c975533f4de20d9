//! `servio mcp`: an MCP server on standard input and output whose tools are the user's
//! catalogue on a platform. It is a thin bridge over the platform's HTTP API
//! (`GET /api/tools`, `POST /api/tools/{name}/call`), so the platform stays the one place
//! that holds site credentials; it polls the catalogue and tells the AI client when it changes.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use reqwest::StatusCode;
use reqwest::Url;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::cli::McpArgs;
use crate::{Failure, Outcome};

pub fn run(args: &McpArgs) -> Result<Outcome, Failure> {
    let bridge = Bridge::new(args)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        // Fail at once, on stderr, when the platform or the token is wrong: an AI client shows
        // little of what a server that dies later says.
        bridge.tools().await.map_err(|e| anyhow!("{}: {}", bridge.base, e.message))?;
        let running =
            bridge.serve(rmcp::transport::stdio()).await.context("starting MCP on standard input and output")?;
        running.waiting().await.context("serving MCP")?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Ok)
}

/// The MCP handler: every request becomes a request to the platform.
#[derive(Clone)]
struct Bridge {
    http: reqwest::Client,
    base: Url,
    token: Arc<str>,
    poll: Duration,
}

impl Bridge {
    fn new(args: &McpArgs) -> anyhow::Result<Bridge> {
        let mut base = Url::parse(args.url.trim()).with_context(|| format!("--url {:?} is not a URL", args.url))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(anyhow!("--url {:?} must be an http:// or https:// address of the platform", args.url));
        }
        base.set_path("/");
        let mut http = reqwest::Client::builder().timeout(Duration::from_secs(60));
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
        Ok(Bridge {
            http: http.build().context("building the HTTP client")?,
            base,
            token: token.into(),
            poll: Duration::from_secs(args.poll),
        })
    }

    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.clear().extend(segments);
        }
        url
    }

    /// The catalogue as the platform lists it.
    async fn tools(&self) -> Result<Vec<Value>, McpError> {
        let (status, body) = self.send(self.http.get(self.url(&["api", "tools"]))).await?;
        if status != StatusCode::OK {
            return Err(McpError::internal_error(format!("the platform answered {status}: {}", message(&body)), None));
        }
        Ok(body.get("tools").and_then(Value::as_array).cloned().unwrap_or_default())
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<(StatusCode, Value), McpError> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| McpError::internal_error(format!("the platform cannot be reached: {e}"), None))?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED {
            return Err(McpError::internal_error("the platform refused the API token: create a new one", None));
        }
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        Ok((status, body))
    }
}

fn message(body: &Value) -> &str {
    body.get("error").and_then(Value::as_str).unwrap_or("no details")
}

fn mcp_tool(tool: &Value) -> Option<Tool> {
    let name = tool.get("name")?.as_str()?.to_owned();
    let description = tool.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
    // In the form MCP clients accept (a boolean property becomes an object), as on `/mcp`.
    let schema = tool.get("input_schema").map(servio_platform::mcp::schema::offered).unwrap_or_default();
    let mut listed = Tool::new(name, description, Arc::new(schema));
    if let (Some(own), Some(origin)) =
        (tool.get("tool").and_then(Value::as_str), tool.get("origin").and_then(Value::as_str))
    {
        listed.title = Some(format!("{own} on {origin}"));
    }
    Some(listed)
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("servio", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "The tools of the sites in your Servio vault on {}, each named SITE_TOOL.",
                self.base
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.tools().await?;
        Ok(ListToolsResult::with_all_items(tools.iter().filter_map(mcp_tool).collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let url = self.url(&["api", "tools", &request.name, "call"]);
        let (status, body) = self.send(self.http.post(url).json(&args)).await?;
        match status {
            StatusCode::OK => {
                let result = body.get("result").cloned().unwrap_or(Value::Null);
                Ok(CallToolResult::structured(servio_platform::mcp::structured(result)).into())
            }
            StatusCode::NOT_FOUND => Err(McpError::invalid_params(message(&body).to_owned(), None)),
            _ => {
                let text = message(&body).to_owned();
                let mut result = CallToolResult::structured_error(body);
                result.content = vec![ContentBlock::text(text)];
                Ok(result.into())
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let bridge = self.clone();
        let peer = context.peer;
        tokio::spawn(async move {
            let mut last = bridge.tools().await.ok();
            loop {
                tokio::time::sleep(bridge.poll).await;
                // A failed look is no change: the next one may succeed.
                let Ok(now) = bridge.tools().await else { continue };
                if last.as_ref() != Some(&now) {
                    last = Some(now);
                    if peer.notify_tool_list_changed().await.is_err() {
                        return; // The client is gone.
                    }
                }
            }
        });
    }
}
