//! Collection and the dashboard over the JSON API.

use axum::Json;
use axum::extract::Query;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::Api;
use crate::domain::dashboard::{
    self as domain, Backfill, BackfillAnswer, BackfillQueued, BackfillSummary, CollectSummary, Dashboard, JobProgress,
};
use crate::error::{ApiError, ErrorBody};
use crate::json_body::JsonBody;
use crate::params::{Id, Params};
use crate::shared::dates::Range;

/// The collection routes of the API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(backfill))
        .routes(routes!(job_progress))
        .routes(routes!(collect))
        .routes(routes!(dashboard))
}

/// How a backfill's request answers.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct How {
    /// `true`: answer at once (`202`), then poll `GET /api/vault/{id}/jobs`; otherwise wait
    /// up to 30 s for the platform's workers to try each period (`200`, or `202` past it).
    /// Either way the periods are queued as jobs the workers collect.
    #[serde(default)]
    queue: bool,
}

/// Collect the site's metrics for a range of dates (from, to), queued as jobs, waiting for them or not
#[utoipa::path(post, path = "/api/vault/{id}/backfill", params(How), request_body = Range, responses(
    (status = 200, description = "What was collected: every period was tried within 30 s", body = BackfillSummary),
    (status = 202, description = "Queued: at once with `?queue=true`, otherwise when some periods were not yet \
                                   tried after 30 s (poll `GET /api/vault/{id}/jobs`)", body = BackfillQueued),
    (status = 400, description = "Bad dates, no valid brief, or more periods than one backfill may ask for \
                                   (10,000 by default, each metric's counted)", body = ErrorBody),
    (status = 409, description = "The user's backfill periods still to collect would pass their limit \
                                   (20,000 by default): ask again once those are collected", body = ErrorBody),
))]
async fn backfill(
    api: Api,
    Id(id): Id,
    Params(Query(how)): Params<Query<How>>,
    JsonBody(range): JsonBody<Range>,
) -> Result<Response, ApiError> {
    let backfill = Backfill { state: &api.state, user: &api.user, id, range: &range };
    let queued = match how.queue {
        true => backfill.queue().await?,
        false => match backfill.run().await? {
            BackfillAnswer::Collected(summary) => return Ok(Json(summary).into_response()),
            BackfillAnswer::Queued(queued) => queued,
        },
    };
    Ok((StatusCode::ACCEPTED, Json(queued)).into_response())
}

/// How many of the site's collection jobs are still to do (a queued backfill's progress)
#[utoipa::path(get, path = "/api/vault/{id}/jobs", responses((status = 200, description = "The progress", body = JobProgress)))]
async fn job_progress(api: Api, Id(id): Id) -> Result<Json<JobProgress>, ApiError> {
    domain::job_progress(&api.state, api.user.id, id).await.map(Json)
}

/// Collect the site's due periods now (failing ones wait out their backoff)
#[utoipa::path(post, path = "/api/vault/{id}/collect", responses(
    (status = 200, description = "What was collected", body = CollectSummary),
    (status = 400, description = "The site has no valid brief: nothing to collect", body = ErrorBody),
))]
async fn collect(api: Api, Id(id): Id) -> Result<Json<CollectSummary>, ApiError> {
    domain::collect_now(&api.state, &api.user, id).await.map(Json)
}

/// How far back the dashboard reaches.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct Window {
    /// Days of periods, 1 to 400 (default 62), ending at each metric's latest due period, as
    /// the page's range and MCP's window: N days, N / 7 weeks or N / 30 months (two at least),
    /// or the hours of N days.
    #[param(minimum = 1, maximum = 400)]
    days: Option<u32>,
}

/// Every metric's view over ?days=N (values and sources, latest and change, to-date totals, reasons) and the cards they share (`slots`)
#[utoipa::path(get, path = "/api/dashboard", params(Window), responses(
    (status = 200, description = "The dashboard data, with an ETag", body = Dashboard),
    (status = 304, description = "Not modified since the ETag sent in If-None-Match"),
    (status = 400, description = "`days` out of range", body = ErrorBody),
    (status = 403, description = "A token limited to some sites: the dashboard shows every site's figures", body = ErrorBody),
))]
async fn dashboard(
    api: Api,
    Params(Query(window)): Params<Query<Window>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if api.via.grant().sites.is_some() {
        return Err(crate::scopes::figures_of_every_site());
    }
    let days = window.days.unwrap_or(domain::DEFAULT_DAYS);
    let render = || async {
        let data = domain::dashboard_data(&api.state, &api.user, days).await?;
        // Sized for the answer at once (some 40 bytes a value, a kilobyte or two a metric with
        // its view): grown from nothing, a 140 KB answer was copied a dozen times over.
        let values: usize = data.metrics.iter().map(|metric| metric.values.len()).sum();
        let mut body = Vec::with_capacity(48 * values + 2048 * data.metrics.len() + 1024);
        serde_json::to_writer(&mut body, &data).map_err(ApiError::internal)?;
        Ok::<_, ApiError>(body)
    };
    let rendered = api.state.dashboards.get_or_render(api.user.id, days, render).await?;
    // `no-cache`: a client may keep it, but asks again (and gets 304 while it holds).
    let caching =
        [(header::ETAG, rendered.etag.clone()), (header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"))];
    if rendered.matches(headers.get(header::IF_NONE_MATCH)) {
        return Ok((StatusCode::NOT_MODIFIED, caching).into_response());
    }
    let json = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    Ok((caching, json, rendered.body.clone()).into_response())
}
