//! The gateway over plain HTTP, for clients that do not speak MCP: the user's tool catalogue,
//! a call by prefixed name, the call log and whether it keeps arguments.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::gateway::{self, Failure};
use crate::json_body::JsonBody;

/// The gateway routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/tools", get(list))
        .route("/api/tools/{name}/call", post(call))
        .route("/api/tool-calls", get(calls))
        .route("/api/me/log_arguments", put(set_log_arguments))
}

async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let catalogue = gateway::catalogue(&state, &caller.user).await?;
    let tools: Vec<Value> = catalogue
        .tools()
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "site_id": tool.site_id,
                "origin": tool.origin,
                "tool": tool.tool,
                "description": tool.description,
                "input_schema": tool.input_schema,
            })
        })
        .collect();
    Ok(Json(json!({ "tools": tools })))
}

async fn call(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(args): JsonBody<Value>,
) -> Result<Response, ApiError> {
    if !args.is_object() {
        return Err(ApiError::BadRequest("the body must be the arguments as a JSON object".into()));
    }
    match gateway::call(&state, &caller.user, &name, &args).await {
        Ok(result) => Ok(Json(json!({ "result": result })).into_response()),
        Err(failure) => Ok(failure_response(&failure)),
    }
}

/// A failed call: 400 for invalid arguments (with each offending path) or a name holding a NUL,
/// 404 for an unknown tool, 502 when the site failed or refused the credential (the caller's own
/// token was fine).
fn failure_response(failure: &Failure) -> Response {
    let status = match failure {
        Failure::UnknownTool(_) => StatusCode::NOT_FOUND,
        Failure::InvalidArguments(_) | Failure::InvalidName(_) => StatusCode::BAD_REQUEST,
        Failure::UnusableSchema(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Failure::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_GATEWAY,
    };
    (status, Json(failure.details())).into_response()
}

#[derive(Deserialize)]
struct Limit {
    limit: Option<i64>,
}

async fn calls(
    State(state): State<AppState>,
    caller: Caller,
    Query(limit): Query<Limit>,
) -> Result<Json<Value>, ApiError> {
    let limit = limit.limit.unwrap_or(100).clamp(1, 1000);
    let calls = state.store.tool_calls(caller.user.id, limit).await?;
    let log_arguments = state.store.log_arguments(caller.user.id).await?;
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| {
            json!({
                "tool": c.tool,
                "site_id": c.site_id,
                "called_at": c.called_at,
                "status": c.status,
                "duration_ms": c.duration_ms,
                "arguments": c.arguments.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok()),
            })
        })
        .collect();
    Ok(Json(json!({ "log_arguments": log_arguments, "calls": calls })))
}

#[derive(Deserialize)]
struct LogArguments {
    log_arguments: bool,
}

async fn set_log_arguments(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(setting): JsonBody<LogArguments>,
) -> Result<Json<Value>, ApiError> {
    state.store.set_log_arguments(caller.user.id, setting.log_arguments).await?;
    state.gateway.forget(caller.user.id);
    Ok(Json(json!({ "log_arguments": setting.log_arguments })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_schema_is_422_not_500() {
        let response = failure_response(&Failure::UnusableSchema("a remote $ref".into()));
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    }
}
