//! The gateway as plain HTTP shows it, for the API and the "AI clients" page alike:
//! the user's tool catalogue, the call log and whether it keeps arguments, as typed views.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use servio_store::CallPage;
use utoipa::ToSchema;

use crate::AppState;
use crate::domain::gateway;
use crate::error::ApiError;

/// A tool of the user's catalogue.
#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogueToolView {
    /// The prefixed name AI clients call it by.
    pub name: String,
    /// The vault site it belongs to.
    pub site_id: i64,
    /// The site's origin.
    pub origin: String,
    /// The tool's name in the site's manifest.
    pub tool: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    #[schema(value_type = Object)]
    pub input_schema: Value,
}

/// The user's catalogue.
#[derive(Debug, Serialize, ToSchema)]
pub struct Catalogue {
    /// In vault order, then manifest order.
    pub tools: Vec<CatalogueToolView>,
}

/// The answer of a tool call.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallResult {
    /// What the site answered, as JSON.
    #[schema(value_type = Object)]
    pub result: Value,
}

/// One call in the log.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallView {
    /// Its id: `before` of the next page, for the calls older than it.
    pub id: i64,
    /// The prefixed name called.
    pub tool: String,
    /// The vault site called, when the name was known.
    pub site_id: Option<i64>,
    /// When (Unix seconds).
    pub called_at: i64,
    /// `ok` or why it failed (`site_error`, `invalid_arguments`, …).
    pub status: String,
    /// The status in words: `answered`, or what went wrong (`the site answered 503: …`).
    pub status_text: String,
    /// What was asked: `tool` (a site's tool), `metrics` (`servio_metrics`), `resource` (a
    /// metric's resource, its address in `tool`) or `prompt`.
    pub kind: String,
    /// The API token that made it, while it exists; `null` once revoked or for a browser session.
    pub token: Option<TokenRef>,
    /// Who made it, in words: `token "laptop"`, `a revoked token`, or `a browser session`.
    pub made_with: String,
    /// How long it took.
    pub duration_ms: f64,
    /// The arguments, when the user keeps them.
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<Value>,
}

/// An API token, as the call log names it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenRef {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
}

/// The user's call log.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallLog {
    /// Whether arguments are kept.
    pub log_arguments: bool,
    /// Newest first.
    pub calls: Vec<CallView>,
    /// The `before` that asks for the next (older) page, when this one was full.
    pub next_before: Option<i64>,
}

/// The most calls one page of the log holds: with each logged field bounded
/// (`servio_store::LOGGED_ARGUMENTS_BYTES` the largest), a page is a few MiB at most.
pub const MAX_PAGE: i64 = 200;

/// How many calls a page holds unless asked for another number.
pub const DEFAULT_PAGE: i64 = 100;

/// Whether the call log keeps each call's arguments.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct LogArguments {
    /// `true` to keep them (off by default).
    pub log_arguments: bool,
}

/// The user's catalogue, as far as `reach` (the asking token's grant) goes.
pub(crate) async fn catalogue(
    state: &AppState,
    user: &servio_store::User,
    reach: &servio_store::Grant,
) -> Result<Catalogue, ApiError> {
    let catalogue = gateway::catalogue(state, user).await?;
    let tools = catalogue
        .tools()
        .iter()
        .filter(|tool| reach.reaches(tool.site_id))
        .map(|tool| CatalogueToolView {
            name: tool.name.clone(),
            site_id: tool.site_id,
            origin: tool.origin.clone(),
            tool: tool.tool.clone(),
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
        })
        .collect();
    Ok(Catalogue { tools })
}

/// A page of the user's calls, newest first, and whether arguments are kept.
pub(crate) async fn call_log(state: &AppState, user_id: i64, page: CallPage) -> Result<CallLog, ApiError> {
    let calls = state.store.tool_calls(user_id, page).await?;
    let full = i64::try_from(calls.len()).is_ok_and(|n| n == page.limit);
    let next_before = calls.last().filter(|_| full).map(|call| call.id);
    let log_arguments = state.store.log_arguments(user_id).await?;
    let calls = calls
        .into_iter()
        .map(|c| {
            let token = c.token_id.zip(c.token_name).map(|(id, name)| TokenRef { id, name });
            let made_with = match (&token, c.token_id) {
                (Some(token), _) => format!("token {:?}", token.name),
                (None, Some(_)) => "a revoked token".to_owned(),
                (None, None) => "a browser session, or a token before the log kept them".to_owned(),
            };
            let status_text = match (c.status.as_str(), c.detail) {
                ("ok", _) => "answered".to_owned(),
                (_, Some(detail)) => detail,
                (status, None) => status.replace('_', " "),
            };
            CallView {
                id: c.id,
                arguments: c.arguments.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok()),
                tool: c.tool,
                site_id: c.site_id,
                called_at: c.called_at,
                status: c.status,
                status_text,
                kind: c.kind,
                token,
                made_with,
                duration_ms: c.duration_ms,
            }
        })
        .collect();
    Ok(CallLog { log_arguments, calls, next_before })
}

/// Sets whether the user's call log keeps arguments.
pub(crate) async fn set_log_arguments(state: &AppState, user_id: i64, keep: bool) -> Result<LogArguments, ApiError> {
    state.store.set_log_arguments(user_id, keep).await?;
    Ok(LogArguments { log_arguments: keep })
}
