//! The "AI clients" page: how to connect an MCP client, a token for it (shown once), the
//! catalogue it will see, and the gateway's call log with its argument setting.

use askama::Template;
use axum::Router;
use axum::extract::{Form, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use servio_store::User;

use crate::AppState;
use crate::error::ApiError;
use crate::routes::pages::{require_form_user, require_user};

/// The page's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/ai", get(page))
        .route("/ai/tokens", post(create_token))
        .route("/ai/log_arguments", post(set_log_arguments))
}

struct CallRow {
    when: String,
    tool: String,
    status: String,
    duration: String,
    arguments: String,
}

#[derive(Template)]
#[template(path = "ai.html")]
struct AiPage {
    signed_in: Option<String>,
    csrf_token: String,
    mcp_url: String,
    platform_url: String,
    new_token: Option<String>,
    tools: Vec<(String, String)>,
    log_arguments: bool,
    calls: Vec<CallRow>,
}

async fn page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match require_user(&state, &headers).await {
        Ok((user, csrf_token)) => render(&state, &user, csrf_token, None).await,
        Err(response) => response,
    }
}

async fn render(state: &AppState, user: &User, csrf_token: String, new_token: Option<String>) -> Response {
    let catalogue = match crate::gateway::catalogue(state, user).await {
        Ok(catalogue) => catalogue,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let (calls, log_arguments) =
        match (state.store.tool_calls(user.id, 50).await, state.store.log_arguments(user.id).await) {
            (Ok(calls), Ok(keep)) => (calls, keep),
            (Err(error), _) | (_, Err(error)) => return ApiError::from(error).into_response(),
        };
    let platform_url = state.oauth.public_url.trim_end_matches('/').to_owned();
    let page = AiPage {
        signed_in: Some(user.email.clone()),
        csrf_token,
        mcp_url: format!("{platform_url}/mcp"),
        platform_url,
        new_token,
        tools: catalogue.tools().iter().map(|t| (t.name.clone(), format!("{} on {}", t.tool, t.origin))).collect(),
        log_arguments,
        calls: calls
            .into_iter()
            .map(|c| CallRow {
                when: jiff::Timestamp::from_second(c.called_at)
                    .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
                    .unwrap_or_default(),
                tool: c.tool,
                status: c.status,
                duration: format!("{:.1}", c.duration_ms),
                arguments: c.arguments.unwrap_or_default(),
            })
            .collect(),
    };
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(error) => ApiError::Internal(error.to_string()).into_response(),
    }
}

// Every field defaults, so that who may post is checked before what was posted.
#[derive(Deserialize)]
struct TokenForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    name: String,
}

async fn create_token(State(state): State<AppState>, headers: HeaderMap, Form(form): Form<TokenForm>) -> Response {
    let (user, csrf_token) = match require_form_user(&state, &headers, &form.csrf_token).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let token = match crate::routes::accounts::issue_token(&state, user.id, &form.name).await {
        Ok((_, token)) => token,
        Err(error) => return error.into_response(),
    };
    render(&state, &user, csrf_token, Some(token)).await
}

#[derive(Deserialize)]
struct LogForm {
    #[serde(default)]
    csrf_token: String,
    keep: Option<bool>,
}

async fn set_log_arguments(State(state): State<AppState>, headers: HeaderMap, Form(form): Form<LogForm>) -> Response {
    let (user, _) = match require_form_user(&state, &headers, &form.csrf_token).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let Some(keep) = form.keep else {
        return ApiError::BadRequest("`keep`: true or false".into()).into_response();
    };
    let stored = state.store.set_log_arguments(user.id, keep).await;
    state.gateway.forget(user.id);
    match stored {
        Ok(()) => Redirect::to("/ai").into_response(),
        Err(error) => ApiError::from(error).into_response(),
    }
}
