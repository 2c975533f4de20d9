//! The Model Context Protocol endpoint at `/mcp` (streamable HTTP, the official Rust SDK):
//! `tools/list` is the user's catalogue, `tools/call` a call through the gateway, and a
//! `notifications/tools/list_changed` goes out when the user's vault changes.
//!
//! Every request carries the user's API token as a bearer token; `require_user` resolves it
//! before the SDK sees the request. The layers of `transport` keep the transport's rules the
//! SDK leaves to us: a foreign `Origin` is refused, and a session belongs to the user who opened
//! it, so one token never reaches another user's tools or notifications.

mod batch;
mod figures;
mod schema;
mod sessions;
mod transport;
mod watch;

use std::sync::{Arc, OnceLock};

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig,
    ServerNotification, SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use servio_store::User;

use crate::AppState;
use crate::domain::gateway::{self, Failure};
use crate::error::ApiError;

/// The `/mcp` service, for `Router::nest_service`; `allowed_hosts` are the `Host` values
/// accepted besides loopback (DNS-rebinding protection).
///
/// The layers run outermost first: the body's bound ([`MAX_BODY`](crate::json_body::MAX_BODY),
/// `413` beyond it), the `Origin` check (a cross-origin page is refused before its token is
/// looked at), the token, the session's owner, then the SDK's statuses.
pub fn service(state: AppState, allowed_hosts: Vec<String>) -> axum::Router {
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    hosts.extend(allowed_hosts);
    // On stopping, the event streams end, so that a graceful stop waits only for requests.
    // A 2026-07-28 request whose answer is the only message is answered as plain JSON, not as
    // an event stream of one event (clients accept both; BENCHMARKS.md: 0.06 ms of 0.46 at
    // p50, 0.26 at p99). Sessions of the earlier revisions are not affected.
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(state.stopping.token())
        .with_json_response(true);
    // Any process sharing the database may serve a session: it restores it from the store.
    config.session_store = Some(Arc::new(sessions::StoredSessions(state.store.clone())));
    let sessions = Arc::new(LocalSessionManager::default());
    let own_origins = transport::own_origins(&state.oauth.public_url);
    let factory_state = state.clone();
    let factory_sessions = sessions.clone();
    let listening = Arc::new(Listening::default());
    let watching = Arc::new(watch::Watching::new(watch::WatchLimits::default()));
    let factory_watching = watching.clone();
    let mcp = StreamableHttpService::new(
        move || {
            let parts = (factory_sessions.clone(), listening.clone(), factory_watching.clone());
            Ok(McpGateway::new(factory_state.clone(), parts))
        },
        sessions.clone(),
        config,
    );
    use axum::middleware::{from_fn, from_fn_with_state};
    let listen_bounds = watch::ListenBounds { state: state.clone(), watching };
    axum::Router::new()
        .fallback(move |request: Request| batch::split(mcp.clone(), request))
        // A listen stream's filter is bounded and made canonical before the SDK keeps it.
        .layer(from_fn_with_state(listen_bounds, watch::bound_listen))
        .layer(from_fn(transport::answer_with_spec_statuses))
        .layer(from_fn_with_state(
            transport::Owners::new(sessions, state.store.clone(), state.quotas.mcp_sessions),
            transport::keep_sessions_to_owners,
        ))
        .layer(from_fn_with_state(state, require_user))
        .layer(from_fn_with_state(own_origins, transport::refuse_foreign_origin))
        // The SDK reads a request's whole body, with no bound of its own: the API's bound (413
        // beyond it) keeps one request from holding the process's memory (a 3 MiB tool name,
        // logged and read back, once took it to gigabytes).
        .layer(tower_http::limit::RequestBodyLimitLayer::new(crate::json_body::MAX_BODY))
}

/// The bearer token of a request's headers.
fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    Some(value.strip_prefix("Bearer ")?.trim())
}

/// Resolves the bearer API token to its user, or answers 401 before the SDK runs.
async fn require_user(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let token = bearer(request.headers());
    let holder = match token {
        Some(token) => state.tokens.user(&state, &crate::domain::accounts::secrets::token_hash(token)).await,
        None => Ok(None),
    };
    match holder {
        // MCP lists and calls tools: a `read` token (figures only) is refused here.
        Ok(Some((_, token))) if !token.grant.scope.covers(servio_store::Scope::Ai) => {
            let refused = ApiError::Scope { needed: servio_store::Scope::Ai, granted: token.grant.scope };
            let body = json!({ "error": refused.to_string() });
            (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
        }
        Ok(Some((user, token))) => {
            request.extensions_mut().insert(user);
            request.extensions_mut().insert(TokenId(token.id));
            request.extensions_mut().insert(token.grant);
            next.run(request).await
        }
        Ok(None) => {
            let body = json!({ "error": "send one of your Servio API tokens as Authorization: Bearer TOKEN" });
            let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
        Err(error) => {
            tracing::error!(error = %servio_client::error_chain(&error), "resolving an MCP token failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The id of the API token a request carries (the call log names it).
#[derive(Debug, Clone, Copy)]
struct TokenId(i64);

/// One MCP session's handler.
#[derive(Clone)]
struct McpGateway {
    state: AppState,
    /// The user who opened the session.
    owner: Arc<OnceLock<i64>>,
    /// The sessions of this process, so that a session whose token was revoked can be ended.
    sessions: Arc<LocalSessionManager>,
    /// Cancels [`McpGateway::ended`] once the session's handler is dropped (the session ended:
    /// closed, timed out, or beyond its user's limit), so that the task telling its client of
    /// changes ends with it instead of waiting for its user's next change.
    ended: Arc<tokio_util::sync::DropGuard>,
    /// The `subscriptions/listen` streams open in this process, by user.
    listening: Arc<Listening>,
    /// What the sessions and streams of this process watch, in bytes.
    watching: Arc<watch::Watching>,
    /// The resources this session subscribed to (`resources/subscribe`, before 2026-07-28).
    subscribed: Arc<std::sync::Mutex<watch::Subscribed>>,
}

impl McpGateway {
    fn new(
        state: AppState,
        (sessions, listening, watching): (Arc<LocalSessionManager>, Arc<Listening>, Arc<watch::Watching>),
    ) -> McpGateway {
        let ended = tokio_util::sync::CancellationToken::new().drop_guard();
        McpGateway {
            state,
            owner: Arc::default(),
            sessions,
            ended: Arc::new(ended),
            listening,
            watching,
            subscribed: Arc::new(std::sync::Mutex::new(watch::Subscribed::new())),
        }
    }

    /// Counts what the platform is about to answer itself (`what`) against the user's gateway
    /// limits, as a tool call is counted.
    fn admit(&self, user: &User, what: &str) -> Result<(), McpError> {
        gateway::admit_asked(&self.state, user, what).map_err(|refused| throttled(&Failure::throttled(refused)))
    }

    /// The user a request comes from, checked against the session's owner: a second line behind
    /// [`transport::keep_sessions_to_owners`], which turns such a request away before the SDK.
    fn user(&self, extensions: &rmcp::model::Extensions) -> Result<User, McpError> {
        let user = extensions
            .get::<Parts>()
            .and_then(|parts| parts.extensions.get::<User>())
            .cloned()
            .ok_or_else(|| McpError::internal_error("the request reached MCP without a user", None))?;
        if *self.owner.get_or_init(|| user.id) != user.id {
            return Err(McpError::invalid_request("this MCP session belongs to another user", None));
        }
        Ok(user)
    }

    /// What the request's token grants (every request here carries one).
    fn reach(extensions: &rmcp::model::Extensions) -> servio_store::Grant {
        let granted = extensions.get::<Parts>().and_then(|parts| parts.extensions.get::<servio_store::Grant>());
        // A request without one reaches nothing (the transport put one on every request).
        granted.cloned().unwrap_or(servio_store::Grant { scope: servio_store::Scope::Read, sites: Some(Vec::new()) })
    }

    /// Refuses figures to a token limited to some sites (they are every site's together).
    fn figures_reached(extensions: &rmcp::model::Extensions) -> Result<(), McpError> {
        match Self::reach(extensions).sites {
            Some(_) => Err(McpError::invalid_request(crate::scopes::figures_of_every_site().to_string(), None)),
            None => Ok(()),
        }
    }

    /// [`McpGateway::user`], with the API token the request carries.
    fn caller(&self, extensions: &rmcp::model::Extensions) -> Result<(User, Option<i64>), McpError> {
        let user = self.user(extensions)?;
        let token = extensions.get::<Parts>().and_then(|parts| parts.extensions.get::<TokenId>()).map(|id| id.0);
        Ok((user, token))
    }

    /// Logs what the platform answered itself (see [`gateway::Asked`]).
    fn log_asked<T>(
        &self,
        caller: (&User, Option<i64>),
        (kind, what): (&'static str, &str),
        started: (i64, std::time::Instant),
        result: &Result<T, McpError>,
    ) {
        let (status, detail) = match result {
            Ok(_) => ("ok", None),
            Err(error) => (asked_status(error), Some(error.message.to_string())),
        };
        gateway::log_asked(&self.state, caller, gateway::Asked { kind, what, status, detail, started });
    }
}

impl ServerHandler for McpGateway {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("servio", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The tools of the sites in your Servio vault, each named SITE_TOOL (the site's host and port, \
                 then the tool's own name). Calls use your stored credentials for each site. Your metrics, as \
                 Servio collected them (each value with the tool, arguments and valuePath it was read from), \
                 are resources servio://metrics/SITE/METRIC, the read-only tool servio_metrics, and the \
                 prompt morning_briefing: quote those figures rather than reading numbers out of tool answers.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let user = self.user(&context.extensions)?;
        let catalogue = gateway::catalogue(&self.state, &user).await.map_err(|e| {
            tracing::error!(user_id = user.id, error = %servio_client::error_chain(&e), "listing MCP tools failed");
            McpError::internal_error("the tool catalogue could not be read", None)
        })?;
        let reach = Self::reach(&context.extensions);
        let reached = catalogue.tools().iter().filter(|tool| reach.reaches(tool.site_id));
        let tools = std::iter::once(figures::tool()).chain(reached.map(mcp_tool)).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (user, token) = self.caller(&context.extensions)?;
        let args = Value::Object(request.arguments.unwrap_or_default());
        if request.name == crate::domain::gateway::METRICS_TOOL {
            Self::figures_reached(&context.extensions)?;
            self.admit(&user, crate::domain::gateway::METRICS_TOOL)?;
            let started = (crate::now(), std::time::Instant::now());
            let result = figures::call_tool(&self.state, &user, &args).await;
            // A mistake in the arguments is a tool result with isError: logged as such.
            let logged = match &result {
                Ok(called) if called.is_error == Some(true) => {
                    let said = called.content.iter().find_map(|c| c.as_text()).map(|t| t.text.clone());
                    Err(McpError::invalid_params(said.unwrap_or_default(), None))
                }
                Ok(_) => Ok(()),
                Err(error) => Err(error.clone()),
            };
            self.log_asked((&user, token), ("metrics", crate::domain::gateway::METRICS_TOOL), started, &logged);
            return result.map(Into::into);
        }
        let reach = Self::reach(&context.extensions);
        match gateway::call(&self.state, (&user, token), &reach, &request.name, &args).await {
            Ok(result) => Ok(CallToolResult::structured(structured(result)).into()),
            Err(Failure::UnknownTool(name)) => {
                Err(McpError::invalid_params(format!("no tool named {name:?} in your vault"), None))
            }
            Err(failure @ Failure::InvalidName(_)) => Err(McpError::invalid_params(failure.to_string(), None)),
            Err(failure @ Failure::Throttled { .. }) => Err(throttled(&failure)),
            Err(failure) => Ok(tool_error(&failure).into()),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let user = self.user(&context.extensions)?;
        Self::figures_reached(&context.extensions)?;
        figures::list_resources(&self.state, &user).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.user(&context.extensions)?;
        Ok(figures::list_resource_templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (user, token) = self.caller(&context.extensions)?;
        Self::figures_reached(&context.extensions)?;
        self.admit(&user, &request.uri)?;
        let started = (crate::now(), std::time::Instant::now());
        let result = figures::read_resource(&self.state, &user, &request.uri).await;
        self.log_asked((&user, token), ("resource", &request.uri), started, &result);
        result.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.user(&context.extensions)?;
        Ok(figures::list_prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (user, token) = self.caller(&context.extensions)?;
        self.admit(&user, &request.name)?;
        let started = (crate::now(), std::time::Instant::now());
        let result = figures::get_prompt(&self.state, &user, &request.name).await;
        self.log_asked((&user, token), ("prompt", &request.name), started, &result);
        result.map(Into::into)
    }

    /// `resources/subscribe` (before 2026-07-28): the session hears
    /// `notifications/resources/updated` for the metric whenever the user's values change.
    /// Only a metric of the user's, by its canonical address (an address of another form is
    /// refused with the canonical one, so that the updates name what was subscribed to), and
    /// within the bounds of [`watch`], checked before anything is kept.
    #[allow(
        deprecated,
        reason = "resources/subscribe is deprecated by 2026-07-28 and still served to earlier revisions"
    )]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let user = self.user(&context.extensions)?;
        let limits = self.watching.limits();
        // Refused before the user's metrics are even read.
        watch::short_enough(&request.uri, limits)?;
        let metrics = crate::domain::figures::metrics(&self.state, &user).await.map_err(|error| {
            tracing::error!(user_id = user.id, error = %servio_client::error_chain(&error), "reading the metrics to subscribe to failed");
            McpError::internal_error("the metrics could not be read", None)
        })?;
        let address = watch::canonical(&metrics, &request.uri, limits)?;
        if address != request.uri {
            return Err(McpError::invalid_params(
                format!("subscribe to the metric by its address as resources/list gives it: {address}"),
                Some(json!({ "uri": address })),
            ));
        }
        let mut subscribed = self.subscribed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        subscribed.add(&self.watching, user.id, address)
    }

    #[allow(
        deprecated,
        reason = "resources/subscribe is deprecated by 2026-07-28 and still served to earlier revisions"
    )]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.user(&context.extensions)?;
        self.subscribed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&request.uri);
        Ok(())
    }

    /// A request the SDK could not read as one it knows. A `tools/call` or `tools/list` whose
    /// params do not fit (`arguments` that are not an object, a missing `name`) lands here, and
    /// is answered as invalid params rather than as an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        self.user(&context.extensions)?;
        Err(unreadable(&request))
    }

    /// Tells the client of every change of its user's catalogue, and of new values of the
    /// resources it subscribed to, as long as the API token the session was opened with still
    /// works: once it is revoked (here or in another process) the session ends and its streams
    /// with it.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Ok(user) = self.user(&context.extensions) else { return };
        let Some(parts) = context.extensions.get::<Parts>() else { return };
        let Some(token) = bearer(&parts.headers).map(crate::domain::accounts::secrets::token_hash) else { return };
        let session: Option<SessionId> =
            parts.headers.get("mcp-session-id").and_then(|id| id.to_str().ok()).map(SessionId::from);
        let mut changes = Changes::new(&self.state, user.id, token);
        let (peer, state, sessions) = (context.peer, self.state.clone(), self.sessions.clone());
        let (ended, subscribed) = (self.ended.token().clone(), self.subscribed.clone());
        tokio::spawn(async move {
            loop {
                let heard = tokio::select! {
                    () = ended.cancelled() => return,
                    heard = changes.next() => heard,
                };
                let changed = match heard {
                    Heard::Changed { catalogue, values } => (catalogue, values),
                    Heard::Revoked => return end_session(&state, &sessions, session.as_ref()).await,
                    Heard::Closed => return,
                };
                let watched: Vec<String> =
                    subscribed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).addresses().cloned().collect();
                for notice in notices(changed, &watched) {
                    if peer.send_notification(notice).await.is_err() {
                        return; // The session is gone.
                    }
                }
            }
        });
    }

    /// `subscriptions/listen` (2026-07-28) carries changes of the user's catalogue and updates
    /// of the metrics asked for: [`watch::bound_listen`] made the filter's addresses the
    /// canonical addresses of the user's metrics, within its bounds, before the SDK read it;
    /// here, a second line, only addresses of metrics are accepted, at most
    /// [`watch::MAX_SUBSCRIPTIONS`].
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder().tools_list_changed().build();
        let metrics = requested.resource_subscriptions.iter().flatten();
        let metrics: Vec<String> = metrics
            .filter(|uri| crate::domain::figures::Ask::from_uri(uri).is_ok())
            .take(watch::MAX_SUBSCRIPTIONS)
            .cloned()
            .collect();
        accepted.resource_subscriptions = Some(metrics);
        Some(accepted)
    }

    /// A `subscriptions/listen` stream: every change of the user's catalogue, here or in another
    /// process, as `notifications/tools/list_changed`, and new values as
    /// `notifications/resources/updated` for each metric it watches, for as long as the client
    /// listens, the process runs and the API token it was opened with works (once it is revoked
    /// the stream ends with an error that says so).
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let request = context.request_context();
        let user = self.user(&request.extensions)?;
        let parts = request.extensions.get::<Parts>();
        let token = parts
            .and_then(|parts| bearer(&parts.headers))
            .map(crate::domain::accounts::secrets::token_hash)
            .ok_or_else(|| McpError::internal_error("the request reached MCP without a token", None))?;
        // The filter's share of what the process watches, held until the stream ends. A filter
        // `watch::bound_listen` did not read (a body it could not make out, which the SDK read
        // otherwise) is not kept.
        let Some(_watching) = parts.and_then(|parts| parts.extensions.get::<watch::ListenShare>()).cloned() else {
            return Err(McpError::invalid_request("the listen request's filter could not be read", None));
        };
        let limit = self.state.quotas.mcp_sessions;
        let _open = self.listening.open(user.id, limit).ok_or_else(|| {
            McpError::invalid_request(
                format!("at most {limit} listen streams of one user are open at once: close one first"),
                None,
            )
        })?;
        let mut changes = Changes::new(&self.state, user.id, token);
        let watched = context.accepted().resource_subscriptions.as_deref().unwrap_or_default();
        let stopping = self.state.stopping.token();
        loop {
            let heard = tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = stopping.cancelled() => return Ok(()),
                heard = changes.next() => heard,
            };
            let changed = match heard {
                Heard::Changed { catalogue, values } => (catalogue, values),
                Heard::Revoked => {
                    return Err(McpError::invalid_request("the API token of this stream was revoked", None));
                }
                Heard::Closed => return Ok(()),
            };
            for notice in notices(changed, watched) {
                if context.sink().send(notice).await.is_err() {
                    return Ok(()); // The client is gone.
                }
            }
        }
    }
}

/// What a change heard (of the catalogue, of the values) tells a client, on a session's stream
/// or a listen stream alike: that its tool list changed, and an update of each metric it watches.
fn notices((catalogue, values): (bool, bool), watched: &[String]) -> Vec<ServerNotification> {
    let changed = catalogue.then(|| ServerNotification::ToolListChangedNotification(Default::default()));
    let updated = watched.iter().filter(|_| values).map(|uri| {
        let updated = ResourceUpdatedNotificationParam::new(uri.clone());
        ServerNotification::ResourceUpdatedNotification(ResourceUpdatedNotification::new(updated))
    });
    changed.into_iter().chain(updated).collect()
}

/// How many `subscriptions/listen` streams each user has open in this process: as many as the
/// MCP sessions a user may hold (`SERVIO_MAX_MCP_SESSIONS`), since each holds a connection and a
/// task for as long as it lasts.
#[derive(Default)]
struct Listening(std::sync::Mutex<std::collections::HashMap<i64, usize>>);

/// One open listen stream, counted until it is dropped.
struct OpenStream<'a> {
    listening: &'a Listening,
    user_id: i64,
}

impl Listening {
    /// Counts a new stream of `user_id`, or `None` when the user has `limit` open already.
    fn open(&self, user_id: i64, limit: usize) -> Option<OpenStream<'_>> {
        let mut open = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(user_id).or_default();
        if *count >= limit {
            return None;
        }
        *count += 1;
        Some(OpenStream { listening: self, user_id })
    }
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        let mut open = self.listening.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&self.user_id) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.user_id);
            }
        }
    }
}

/// The changes of one user's catalogue and values, as a stream of one API token hears them.
struct Changes {
    state: AppState,
    user_id: i64,
    /// The hash of the API token the stream was opened with.
    token: String,
    changes: tokio::sync::broadcast::Receiver<crate::notices::Change>,
}

/// What a stream hears next.
enum Heard {
    /// The catalogue, or the values, may have changed: tell the client.
    Changed {
        /// The catalogue.
        catalogue: bool,
        /// The values.
        values: bool,
    },
    /// The stream's API token no longer works: end the stream.
    Revoked,
    /// The process is stopping.
    Closed,
}

impl Changes {
    fn new(state: &AppState, user_id: i64, token: String) -> Changes {
        Changes { state: state.clone(), user_id, token, changes: state.notices.subscribe() }
    }

    /// Waits for the next change of the user's catalogue or values, or for the token to be
    /// revoked. Every notice of the user asks whether the token still works.
    async fn next(&mut self) -> Heard {
        loop {
            let change = match self.changes.recv().await {
                Ok(change) if change.user_id() != self.user_id => continue,
                Ok(change) => Some(change),
                // A lagging receiver may have missed this user's notice: act as if told.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return Heard::Closed,
            };
            if !token_works(&self.state, &self.token, self.user_id).await {
                return Heard::Revoked;
            }
            match change {
                Some(crate::notices::Change::Catalogue(_)) => return Heard::Changed { catalogue: true, values: false },
                Some(crate::notices::Change::Values(_)) => return Heard::Changed { catalogue: false, values: true },
                Some(crate::notices::Change::Access(_) | crate::notices::Change::Context(_)) => {}
                None => return Heard::Changed { catalogue: true, values: true },
            }
        }
    }
}

/// Whether the API token with hash `token` still belongs to `user_id`. A store that cannot
/// answer keeps the stream (the next notice asks again).
async fn token_works(state: &AppState, token: &str, user_id: i64) -> bool {
    match state.tokens.user(state, token).await {
        Ok(found) => found.is_some_and(|(user, _)| user.id == user_id),
        Err(error) => {
            tracing::warn!(user_id, error = %servio_client::error_chain(&error), "checking an MCP stream's token failed; the stream stays");
            true
        }
    }
}

/// Ends a session whose token was revoked: here, and in the store so that no process restores it.
async fn end_session(state: &AppState, sessions: &LocalSessionManager, session: Option<&SessionId>) {
    let Some(id) = session else { return };
    if let Err(error) = sessions.close_session(id).await {
        tracing::warn!(error = %servio_client::error_chain(&error), "ending an MCP session whose token was revoked failed");
    }
    if let Err(error) = state.store.delete_mcp_session(id).await {
        tracing::warn!(error = %servio_client::error_chain(&error), "forgetting an MCP session whose token was revoked failed");
    }
}

/// Why a request the SDK could not read is refused: invalid params for a method we serve,
/// with serde's reason (for `tools/call`, which member is wrong), otherwise an unknown method.
fn unreadable(request: &CustomRequest) -> McpError {
    let reason = match request.method.as_str() {
        "tools/call" => request.params_as::<CallToolRequestParams>().err(),
        "tools/list" => request.params_as::<PaginatedRequestParams>().err(),
        _ => return McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method.clone(), None),
    };
    let reason = reason.map_or_else(|| "params of the wrong shape".to_owned(), |e| e.to_string());
    let expected = match request.method.as_str() {
        "tools/call" => "{\"name\": string, \"arguments\": object}",
        _ => "{\"cursor\": string} or nothing",
    };
    McpError::invalid_params(format!("{} takes {expected}: {reason}", request.method), None)
}

/// The call log's status word for what the platform refused to answer itself.
fn asked_status(error: &McpError) -> &'static str {
    match error.code {
        ErrorCode::RESOURCE_NOT_FOUND => "not_found",
        ErrorCode::INVALID_PARAMS => "invalid_arguments",
        ErrorCode::INVALID_REQUEST => "invalid_request",
        _ => "internal",
    }
}

/// A catalogue tool as MCP lists it.
fn mcp_tool(tool: &gateway::CatalogueTool) -> Tool {
    let schema = schema::offered(&tool.input_schema);
    let mut listed = Tool::new(tool.name.clone(), tool.description.clone(), Arc::new(schema));
    listed.title = Some(format!("{} on {}", tool.tool, tool.origin));
    listed
}

/// MCP's structured content is an object: a site's object result as it is, anything else
/// (an array, a number) under `result`.
fn structured(result: Value) -> Value {
    match result {
        Value::Object(_) => result,
        other => json!({ "result": other }),
    }
}

/// A call refused by the user's gateway limits, as MCP's error: the limit and when to try
/// again in words, `retry_after` (seconds) as data.
fn throttled(failure: &Failure) -> McpError {
    McpError::invalid_request(failure.to_string(), Some(failure.details()))
}

/// A failed call as a tool result the AI can read (`isError`), with the details as data.
fn tool_error(failure: &Failure) -> CallToolResult {
    let details = failure.details();
    let mut result = CallToolResult::structured_error(details);
    result.content = vec![ContentBlock::text(failure.to_string())];
    result
}
