//! Collection and the dashboard over the JSON API.

use axum::Json;
use axum::extract::{Path, Query};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use axum::http::StatusCode;

use super::service::{self, BackfillQueued, BackfillSummary, CollectSummary, Dashboard, JobProgress, Range};
use crate::AppState;
use crate::auth::Api;
use crate::error::{ApiError, ErrorBody};
use crate::json_body::JsonBody;

/// The collection routes of the API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(backfill))
        .routes(routes!(queue_backfill, job_progress))
        .routes(routes!(collect))
        .routes(routes!(dashboard))
}

/// Collect the site's metrics for a range of dates (from, to)
#[utoipa::path(post, path = "/api/vault/{id}/backfill", request_body = Range, responses(
    (status = 200, description = "What was collected", body = BackfillSummary),
    (status = 400, description = "Bad dates, or no valid brief", body = ErrorBody),
))]
async fn backfill(
    api: Api,
    Path(id): Path<i64>,
    JsonBody(range): JsonBody<Range>,
) -> Result<Json<BackfillSummary>, ApiError> {
    service::run_backfill(&api.state, &api.user, id, &range).await.map(Json)
}

/// Queue the collection of the site's metrics for a range of dates (from, to) as jobs, which
/// the workers collect; answers at once
#[utoipa::path(post, path = "/api/vault/{id}/jobs", request_body = Range, responses(
    (status = 202, description = "Queued", body = BackfillQueued),
    (status = 400, description = "Bad dates, or no valid brief", body = ErrorBody),
))]
async fn queue_backfill(
    api: Api,
    Path(id): Path<i64>,
    JsonBody(range): JsonBody<Range>,
) -> Result<(StatusCode, Json<BackfillQueued>), ApiError> {
    let queued = service::queue_backfill(&api.state, &api.user, id, &range).await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

/// How many of the site's collection jobs are still to do
#[utoipa::path(get, path = "/api/vault/{id}/jobs", responses((status = 200, description = "The progress", body = JobProgress)))]
async fn job_progress(api: Api, Path(id): Path<i64>) -> Result<Json<JobProgress>, ApiError> {
    service::job_progress(&api.state, api.user.id, id).await.map(Json)
}

/// Collect the site's due periods now (failing ones wait out their backoff)
#[utoipa::path(post, path = "/api/vault/{id}/collect", responses((status = 200, description = "What was collected", body = CollectSummary)))]
async fn collect(api: Api, Path(id): Path<i64>) -> Result<Json<CollectSummary>, ApiError> {
    service::collect_now(&api.state, &api.user, id).await.map(Json)
}

/// How far back the dashboard reaches.
#[derive(Debug, Deserialize, IntoParams)]
struct Window {
    /// Days of values, 1 to 400 (default 62).
    days: Option<u32>,
}

/// Every metric with its recent values (?days=N), the latest and its trend, and the slots they share
#[utoipa::path(get, path = "/api/dashboard", params(Window), responses(
    (status = 200, description = "The dashboard data", body = Dashboard),
    (status = 400, description = "`days` out of range", body = ErrorBody),
))]
async fn dashboard(api: Api, Query(window): Query<Window>) -> Result<Json<Dashboard>, ApiError> {
    let days = window.days.unwrap_or(service::DEFAULT_DAYS);
    service::dashboard_data(&api.state, &api.user, days).await.map(Json)
}
