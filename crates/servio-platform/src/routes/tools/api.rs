//! The gateway over plain HTTP, for clients that do not speak MCP: the user's tool catalogue,
//! a call by prefixed name, the call log and whether it keeps arguments.

use axum::Json;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::Api;
use crate::domain::gateway::{self, Failure};
use crate::domain::tools::{self, CallLog, CallResult, Catalogue, LogArguments};
use crate::error::{ApiError, ErrorBody};
use crate::json_body::JsonBody;
use crate::params::Params;

/// The gateway routes of the API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(call))
        .routes(routes!(calls))
        .routes(routes!(set_log_arguments))
}

/// The AI gateway's catalogue: every approved tool of the vault under its prefixed name
#[utoipa::path(get, path = "/api/tools", operation_id = "list_tools", responses((status = 200, description = "The catalogue", body = Catalogue)))]
async fn list(api: Api) -> Result<Json<Catalogue>, ApiError> {
    tools::catalogue(&api.state, &api.user, &api.via.grant()).await.map(Json)
}

/// Call a tool by prefixed name; the body is its arguments (400 names each offending path, 502 when the site fails)
#[utoipa::path(post, path = "/api/tools/{name}/call", request_body(content = Object, description = "The tool's arguments, a JSON object"), responses(
    (status = 200, description = "The site's answer", body = CallResult),
    (status = 400, description = "Invalid arguments, each offending path named", body = ErrorBody),
    (status = 404, description = "No such tool in the catalogue", body = ErrorBody),
    (status = 422, description = "The tool's input schema cannot be used to check arguments", body = ErrorBody),
    (status = 429, description = "Past the user's gateway limits (calls, or bytes of the call log, a minute): nothing was called or logged; `Retry-After` says when to try again", body = ErrorBody),
    (status = 502, description = "The site failed or refused the stored credential", body = ErrorBody),
    (status = 503, description = "No argument validation was free for 5 s (`--check-wait`); `Retry-After` says when to try again", body = ErrorBody),
))]
async fn call(
    api: Api,
    Params(Path(name)): Params<Path<String>>,
    JsonBody(args): JsonBody<Value>,
) -> Result<Response, ApiError> {
    if !args.is_object() {
        return Err(ApiError::BadRequest("the body must be the arguments as a JSON object".into()));
    }
    match gateway::call(&api.state, (&api.user, api.via.token_id()), &api.via.grant(), &name, &args).await {
        Ok(result) => Ok(Json(CallResult { result }).into_response()),
        Err(failure) => Ok(failure_response(&failure)),
    }
}

/// A failed call: 400 for invalid arguments (with each offending path) or a name holding a NUL,
/// 404 for an unknown tool, 429 with `Retry-After` past the user's gateway limits, 502 when the
/// site failed or refused the credential (the caller's own token was fine), 503 with
/// `Retry-After` when no validation was free.
fn failure_response(failure: &Failure) -> Response {
    let status = match failure {
        Failure::UnknownTool(_) => StatusCode::NOT_FOUND,
        Failure::InvalidArguments(_) | Failure::InvalidName(_) => StatusCode::BAD_REQUEST,
        Failure::UnusableSchema(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Failure::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        Failure::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
        Failure::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::BAD_GATEWAY,
    };
    let mut response = (status, Json(failure.details())).into_response();
    let retry_after = match failure {
        Failure::Busy(busy) => Some(busy.retry_after.as_secs().max(1)),
        Failure::Throttled { retry_after, .. } => Some((*retry_after).max(1)),
        _ => None,
    };
    if let Some(seconds) = retry_after {
        response.headers_mut().insert(axum::http::header::RETRY_AFTER, seconds.into());
    }
    response
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct Page {
    /// How many calls, newest first (1 to 200, 100 unless given).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    /// Only calls older than this one: the `next_before` of the page before.
    before: Option<i64>,
}

/// A page of the user's gateway call log, newest first (?limit=N, at most 200; ?before=ID for the next page)
#[utoipa::path(get, path = "/api/tool-calls", params(Page), responses(
    (status = 200, description = "A page of the log; `next_before` asks for the next", body = CallLog),
    (status = 400, description = "A limit outside 1 to 200", body = ErrorBody),
))]
async fn calls(api: Api, Params(Query(page)): Params<Query<Page>>) -> Result<Json<CallLog>, ApiError> {
    let limit = page.limit.unwrap_or(tools::DEFAULT_PAGE);
    if !(1..=tools::MAX_PAGE).contains(&limit) {
        let most = tools::MAX_PAGE;
        return Err(ApiError::BadRequest(format!("`limit` must be from 1 to {most} (calls a page), not {limit}")));
    }
    let page = servio_store::CallPage { before: page.before, limit };
    tools::call_log(&api.state, api.user.id, page).await.map(Json)
}

/// Whether the call log keeps each call's arguments (off by default)
#[utoipa::path(put, path = "/api/me/log_arguments", request_body = LogArguments, responses((status = 200, description = "The setting now", body = LogArguments)))]
async fn set_log_arguments(
    api: Api,
    JsonBody(setting): JsonBody<LogArguments>,
) -> Result<Json<LogArguments>, ApiError> {
    tools::set_log_arguments(&api.state, api.user.id, setting.log_arguments).await.map(Json)
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
