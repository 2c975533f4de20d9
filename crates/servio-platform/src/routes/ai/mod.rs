//! The "AI clients" page: how to connect an MCP client, a token for it (shown once), the
//! catalogue it will see, and the gateway's call log with its argument setting. It renders the
//! typed views of [`crate::domain::tools`] and [`crate::domain::accounts`].

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::{Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::domain::accounts::{NewToken, TokenScope, issue_token};
use crate::domain::tools::{CallView, CatalogueToolView, call_log, catalogue, set_log_arguments};
use crate::error::ApiError;
use crate::web::{Layout, render, table};

/// The page's routes.
pub fn pages() -> Router<AppState> {
    table([("/ai", get(page)), ("/ai/tokens", post(create_token)), ("/ai/log_arguments", post(keep_arguments))])
}

#[derive(Template)]
#[template(path = "ai.html")]
struct AiPage {
    layout: Layout,
    mcp_url: String,
    platform_url: String,
    new_token: Option<String>,
    tools: Vec<CatalogueToolView>,
    log_arguments: bool,
    calls: Vec<CallView>,
}

impl AiPage {
    /// When a call was made, as the log shows it (UTC, to the second).
    fn when(call: &CallView) -> String {
        jiff::Timestamp::from_second(call.called_at)
            .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_default()
    }

    /// A call's arguments as the JSON text kept, or nothing.
    fn arguments(call: &CallView) -> String {
        call.arguments.as_ref().map(ToString::to_string).unwrap_or_default()
    }
}

async fn page(State(state): State<AppState>, user: PageUser) -> Result<Response, ApiError> {
    render_page(&state, &user, None).await
}

async fn render_page(state: &AppState, user: &PageUser, new_token: Option<String>) -> Result<Response, ApiError> {
    let catalogue = catalogue(state, &user.user, &servio_store::Grant::all_sites(servio_store::Scope::Account)).await?;
    let log = call_log(state, user.user.id, servio_store::CallPage { before: None, limit: 50 }).await?;
    let platform_url = state.oauth.public_url.trim_end_matches('/').to_owned();
    let page = AiPage {
        layout: Layout::of(Some(user)),
        mcp_url: format!("{platform_url}/mcp"),
        platform_url,
        new_token,
        tools: catalogue.tools,
        log_arguments: log.log_arguments,
        calls: log.calls,
    };
    Ok(render(&page))
}

async fn create_token(State(state): State<AppState>, posted: PageForm<TokenForm>) -> Result<Response, ApiError> {
    // The AI clients page makes `ai` tokens: a model can call the approved tools with it, and
    // never approve new ones or make more tokens.
    let form = NewToken { name: posted.form.name.clone(), scope: TokenScope::Ai, sites: None, password: None };
    let issued = issue_token(&state, (&posted.user.user, true), &form).await?;
    render_page(&state, &posted.user, Some(issued.token)).await
}

/// The token form: its name may be left out, and is then refused by [`issue_token`] as empty.
#[derive(Deserialize)]
struct TokenForm {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct LogForm {
    keep: Option<bool>,
}

async fn keep_arguments(State(state): State<AppState>, posted: PageForm<LogForm>) -> Result<Redirect, ApiError> {
    let keep = posted.form.keep.ok_or_else(|| ApiError::BadRequest("`keep`: true or false".into()))?;
    set_log_arguments(&state, posted.user.user.id, keep).await?;
    Ok(Redirect::to("/ai"))
}
