//! Collection over the API: a backfill of a date range for one vault site, and the dashboard
//! data (every metric with its recent values, the latest one, and its trend against the
//! comparison period of §8, only when that period was collected), and the slots they share
//! (canonical keys from several sites in one slot with a total, see [`crate::slots`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use servio_collector::manifests::CheckedManifest;
use servio_collector::trend::{Trend, comparison_start, trend};

use crate::AppState;
use crate::auth::Caller;
use servio_collector::plan::Planner;

use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::slots::{SiteMetric, slots};

/// The collection routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/vault/{id}/backfill", post(run_backfill))
        .route("/api/vault/{id}/collect", post(collect_now))
        .route("/api/dashboard", get(dashboard))
}

#[derive(Deserialize)]
struct Range {
    from: String,
    to: String,
}

async fn run_backfill(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    JsonBody(range): JsonBody<Range>,
) -> Result<Json<Value>, ApiError> {
    let date = |field: &str, text: &str| -> Result<jiff::civil::Date, ApiError> {
        text.parse()
            .map_err(|e| ApiError::BadRequest(format!("`{field}` {text:?} is not a date of the form YYYY-MM-DD: {e}")))
    };
    let (first, last) = (date("from", &range.from)?, date("to", &range.to)?);
    if last < first || (last - first).get_days() > 400 {
        return Err(ApiError::BadRequest("`to` must be on or after `from`, at most 400 days later".into()));
    }
    let entry = state.store.vault_entry(caller.user.id, id).await?.ok_or(ApiError::NotFound)?;
    let summary = state.collector.backfill(&caller.user, &entry, first, last).await?;
    Ok(Json(json!({ "stored": summary.stored, "dropped": summary.dropped, "failed": summary.failed })))
}

/// Collects what is due for this site now (what the scheduler does every few minutes); slots
/// backing off after a transient failure are counted as `waiting`, not called.
async fn collect_now(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Value>, ApiError> {
    let entry = state.store.vault_entry(caller.user.id, id).await?.ok_or(ApiError::NotFound)?;
    let summary = state.collector.collect_due(&caller.user, &entry, &mut Planner::new(jiff::Timestamp::now())).await?;
    Ok(Json(json!({
        "stored": summary.stored,
        "dropped": summary.dropped,
        "failed": summary.failed,
        "waiting": summary.waiting,
    })))
}

/// How far back the dashboard shows values.
const RECENT_SECONDS: i64 = 62 * 24 * 3600;

async fn dashboard(State(state): State<AppState>, caller: Caller) -> Result<Json<Dashboard>, ApiError> {
    dashboard_data(&state, &caller.user).await.map(Json)
}

/// The dashboard data, typed so that it is serialized straight to the response: built as a
/// `serde_json::Value`, its 3,100 values of a 50-metric user were copied twice more by `json!`.
#[derive(Serialize)]
pub(crate) struct Dashboard {
    time_zone: String,
    metrics: Vec<MetricData>,
    slots: Vec<Value>,
}

#[derive(Serialize)]
struct MetricData {
    site: SiteData,
    key: String,
    label: Option<&'static str>,
    unit: Option<String>,
    granularity: &'static str,
    latest: Option<Latest>,
    change: Value,
    values: Vec<Point>,
}

#[derive(Serialize)]
struct SiteData {
    id: i64,
    origin: String,
    name: String,
}

#[derive(Serialize)]
struct Latest {
    period: String,
    value: f64,
    raw: Raw,
}

/// The value as the site sent it, kept for audit: the store keeps the JSON text found at the
/// brief's `valuePath`, and the API serves it as that JSON (`3969.55` for a number, `"$936.24"`
/// for a string), not as a string holding JSON text. The text goes out byte for byte, so a
/// number keeps every digit the site wrote.
#[derive(Serialize)]
#[serde(untagged)]
enum Raw {
    /// Stored text that is JSON, served as it is.
    Json(Box<RawValue>),
    /// Stored text that is not JSON, served as a string: an audit field never fails a dashboard.
    Text(String),
}

impl Raw {
    fn from_stored(text: &str) -> Raw {
        RawValue::from_string(text.to_owned()).map_or_else(|_| Raw::Text(text.to_owned()), Raw::Json)
    }
}

#[derive(Serialize)]
struct Point {
    period: String,
    value: f64,
}

/// A site's checked manifest when its brief is valid, from the collector's manifest cache
/// (checking every manifest on every dashboard request was an eighth of its CPU in the
/// benchmark).
fn checked_brief(state: &AppState, site: &servio_store::SiteRecord) -> Option<Arc<CheckedManifest>> {
    state.collector.manifests().get(site.id, &site.manifest).filter(|checked| checked.brief.is_some())
}

/// The dashboard data of `user`, as JSON (for the page).
pub(crate) async fn dashboard_json(state: &AppState, user: &servio_store::User) -> Result<Value, ApiError> {
    let data = dashboard_data(state, user).await?;
    serde_json::to_value(data).map_err(|e| ApiError::Internal(format!("the dashboard as JSON: {e}")))
}

/// The dashboard data of `user`.
pub(crate) async fn dashboard_data(state: &AppState, user: &servio_store::User) -> Result<Dashboard, ApiError> {
    let caller = crate::auth::Caller { user: user.clone(), via: crate::auth::Via::ApiToken };
    let zone = servio_manifest::period::zone(&caller.user.time_zone).map_err(|e| ApiError::Internal(e.to_string()))?;
    let since = crate::now() - RECENT_SECONDS;
    let mut metrics = Vec::new();
    let mut for_slots = Vec::new();
    let mut checked = Vec::new();
    for site in state.store.vault(caller.user.id).await? {
        if let Some(valid) = checked_brief(state, &site) {
            checked.push((site, valid));
        }
    }
    // Every metric's recent values in one query: one query per metric was most of a request.
    let pairs: Vec<(i64, &str)> = checked
        .iter()
        .flat_map(|(site, valid)| {
            valid.brief.iter().flat_map(|brief| &brief.metrics).map(move |metric| (site.id, metric.key.as_str()))
        })
        .collect();
    let mut recent: HashMap<(i64, String), Vec<servio_store::StoredValue>> = HashMap::new();
    for (site_id, value) in state.store.values_of(caller.user.id, &pairs, since).await? {
        recent.entry((site_id, value.metric_key.clone())).or_default().push(value);
    }
    for (site, valid) in &checked {
        let manifest = &valid.manifest;
        for metric in valid.brief.iter().flat_map(|brief| &brief.metrics) {
            let values = recent.remove(&(site.id, metric.key.clone())).unwrap_or_default();
            let latest = values.last();
            let change = match latest {
                None => Value::Null,
                Some(latest) => {
                    let date: jiff::civil::Date =
                        latest.start_date.parse().map_err(|e: jiff::Error| ApiError::Internal(e.to_string()))?;
                    let period = servio_manifest::period::resolve(metric.granularity, date, 0, &zone)
                        .map_err(|e| ApiError::Internal(e.to_string()))?;
                    let (compare_date, _) = comparison_start(&period).map_err(|e| ApiError::Internal(e.to_string()))?;
                    let previous = values.iter().find(|v| v.start_date == compare_date.to_string()).map(|v| v.value);
                    match trend(latest.value, previous) {
                        Trend::None => Value::Null,
                        Trend::Absolute(change) => json!({ "against": compare_date.to_string(), "change": change }),
                        Trend::Relative { change, percent } => {
                            json!({ "against": compare_date.to_string(), "change": change, "percent": percent })
                        }
                    }
                }
            };
            for_slots.push(SiteMetric {
                site_id: site.id,
                site_name: manifest.name.clone(),
                key: metric.key.clone(),
                unit: metric.unit.clone(),
                granularity: metric.granularity.as_str().to_owned(),
                values: values.iter().map(|v| (v.period_start, v.start_date.clone(), v.value)).collect(),
            });
            let latest =
                latest.map(|v| Latest { period: v.start_date.clone(), value: v.value, raw: Raw::from_stored(&v.raw) });
            metrics.push(MetricData {
                site: SiteData { id: site.id, origin: site.origin.clone(), name: manifest.name.clone() },
                key: metric.key.clone(),
                label: servio_manifest::brief::canonical_label(&metric.key),
                unit: metric.unit.clone(),
                granularity: metric.granularity.as_str(),
                latest,
                change,
                values: values.into_iter().map(|v| Point { period: v.start_date, value: v.value }).collect(),
            });
        }
    }
    let slots = slots(&for_slots);
    Ok(Dashboard { time_zone: caller.user.time_zone, metrics, slots })
}
