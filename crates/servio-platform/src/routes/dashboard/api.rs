//! Collection and the dashboard over the JSON API.

use axum::Json;
use axum::extract::Path;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::service::{self, BackfillSummary, CollectSummary, Dashboard, Range};
use crate::AppState;
use crate::auth::Api;
use crate::error::{ApiError, ErrorBody};
use crate::json_body::JsonBody;

/// The collection routes of the API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(backfill)).routes(routes!(collect)).routes(routes!(dashboard))
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

/// Collect the site's due periods now (failing ones wait out their backoff)
#[utoipa::path(post, path = "/api/vault/{id}/collect", responses((status = 200, description = "What was collected", body = CollectSummary)))]
async fn collect(api: Api, Path(id): Path<i64>) -> Result<Json<CollectSummary>, ApiError> {
    service::collect_now(&api.state, &api.user, id).await.map(Json)
}

/// Every metric with its recent values, the latest and its trend, and the slots they share
#[utoipa::path(get, path = "/api/dashboard", responses((status = 200, description = "The dashboard data", body = Dashboard)))]
async fn dashboard(api: Api) -> Result<Json<Dashboard>, ApiError> {
    service::dashboard_data(&api.state, &api.user).await.map(Json)
}
