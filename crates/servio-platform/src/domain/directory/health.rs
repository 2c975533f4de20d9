//! Collection health for site owners: for the owner of a verified Directory listing, how the
//! collections of each metric of their brief ended across every user over 7 or 28 days, the top
//! reasons in words, and how long the site took to answer. Counts only, never a user's
//! identity; a figure fewer than [`MIN_USERS`] users stand behind is left out by the store,
//! counting only users who have collected on [`MIN_DAYS`] days, and figures are rounded.

use serde::{Deserialize, Serialize};
use servio_store::SiteHealth;
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::{AppState, now};

/// The fewest distinct users a figure must stand for to be shown.
pub const MIN_USERS: i64 = 5;
/// The fewest distinct days a user must have collected from the site on to count towards
/// [`MIN_USERS`]: an owner's own new accounts cannot make up the threshold at once.
pub const MIN_DAYS: i64 = 7;
/// The windows an owner may look at, in days.
pub const WINDOWS: [i64; 2] = [7, 28];
/// Reasons shown per metric.
const TOP_REASONS: usize = 5;

/// Which window (`?days=7` or `28`, 7 unless asked).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Window {
    /// 7 or 28.
    #[param(schema_with = window_days)]
    pub days: Option<i64>,
}

/// The schema of [`Window::days`]: one of [`WINDOWS`].
fn window_days() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .enum_values(Some(WINDOWS))
        .build()
}

/// A site's collection health.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// The site listed.
    pub origin: String,
    /// The window, in days back from now.
    pub days: i64,
    /// The fewest users a figure stands for; smaller figures are left out.
    pub min_users: i64,
    /// The fewest distinct days a user must have collected on to count among them.
    pub min_days: i64,
    /// Per metric of the brief, in its order (and any metric collected that it no longer has).
    pub metrics: Vec<MetricHealth>,
}

/// One metric's collection health.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct MetricHealth {
    /// The metric's key.
    pub key: String,
    /// Attempts by outcome (`stored`, `dropped`, `failed`, `retry`), those with enough users.
    pub outcomes: Vec<OutcomeFigure>,
    /// The most frequent reasons for no value, most frequent first.
    pub reasons: Vec<ReasonFigure>,
    /// How long the site took to answer, when enough users stand behind it.
    pub latency: Option<LatencyFigure>,
}

/// How many attempts ended one way.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutcomeFigure {
    /// `stored`, `dropped`, `failed` or `retry`.
    pub outcome: &'static str,
    /// How many attempts.
    pub attempts: i64,
    /// How many users (at least `min_users`).
    pub users: i64,
}

/// A reason collections stored no value.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReasonFigure {
    /// The reason, in words.
    pub reason: String,
    /// How many attempts ended with it.
    pub attempts: i64,
}

/// The site's answer times for a metric.
#[derive(Debug, Serialize, ToSchema)]
pub struct LatencyFigure {
    /// Calls timed.
    pub calls: i64,
    /// Median, in milliseconds.
    pub p50_ms: f64,
    /// 95th percentile, in milliseconds.
    pub p95_ms: f64,
}

/// The health of the site the user's claim `id` lists, over `window`: `404` for a claim that
/// is not theirs, `400` for one not verified (or suspended) or another window.
pub(crate) async fn health(state: &AppState, user_id: i64, id: i64, window: &Window) -> Result<Health, ApiError> {
    let days = window.days.unwrap_or(WINDOWS[0]);
    if !WINDOWS.contains(&days) {
        return Err(ApiError::BadRequest("`days` must be 7 or 28".into()));
    }
    let claim = super::owned_claim(state, user_id, id).await?;
    let listing = state.store.claim_listing(claim.id).await?.filter(|listing| listing.listed);
    let listing = listing
        .ok_or_else(|| ApiError::BadRequest("the claim is not verified: the health page is for listed sites".into()))?;
    let since = now() - days * 24 * 3600;
    let figures = state.store.site_health(listing.site_id, since, MIN_USERS, MIN_DAYS).await?;
    let brief_keys = match state.store.site(listing.site_id).await? {
        Some(site) => brief_keys(state, &site).await?,
        None => Vec::new(),
    };
    let metrics = by_metric(brief_keys, figures);
    Ok(Health { origin: claim.origin, days, min_users: MIN_USERS, min_days: MIN_DAYS, metrics })
}

/// The metric keys of the site's current manifest's brief, in order.
async fn brief_keys(state: &AppState, site: &servio_store::SiteRecord) -> Result<Vec<String>, ApiError> {
    let wait = servio_core::manifests::Wait::Bounded;
    let checked = state.collector.manifests().get(&site.origin, &site.manifest, wait).await?;
    let brief = checked.as_ref().and_then(|checked| checked.brief.as_ref());
    Ok(brief.map(|brief| brief.metrics.iter().map(|m| m.key.clone()).collect()).unwrap_or_default())
}

/// The figures grouped per metric: the brief's metrics first, in its order, then any other
/// metric that has figures; the top reasons of each.
fn by_metric(keys: Vec<String>, figures: SiteHealth) -> Vec<MetricHealth> {
    let mut metrics: Vec<MetricHealth> =
        keys.into_iter().map(|key| MetricHealth { key, ..MetricHealth::default() }).collect();
    for outcome in figures.outcomes {
        let figure =
            OutcomeFigure { outcome: outcome.outcome.as_str(), attempts: outcome.attempts, users: outcome.users };
        metric(&mut metrics, &outcome.metric_key).outcomes.push(figure);
    }
    for reason in figures.reasons {
        let reasons = &mut metric(&mut metrics, &reason.metric_key).reasons;
        if reasons.len() < TOP_REASONS {
            reasons.push(ReasonFigure { reason: reason.reason, attempts: reason.attempts });
        }
    }
    for latency in figures.latencies {
        let figure = LatencyFigure { calls: latency.calls, p50_ms: latency.p50_ms, p95_ms: latency.p95_ms };
        metric(&mut metrics, &latency.metric_key).latency = Some(figure);
    }
    metrics
}

/// The metric `key` of `metrics`, added at the end when it is not there yet.
fn metric<'a>(metrics: &'a mut Vec<MetricHealth>, key: &str) -> &'a mut MetricHealth {
    let at = match metrics.iter().position(|m| m.key == key) {
        Some(at) => at,
        None => {
            metrics.push(MetricHealth { key: key.to_owned(), ..MetricHealth::default() });
            metrics.len() - 1
        }
    };
    &mut metrics[at]
}

#[cfg(test)]
mod tests {
    use servio_store::{AttemptOutcome, OutcomeCount, ReasonCount};

    use super::*;

    #[test]
    fn the_briefs_metrics_come_first_each_with_at_most_five_reasons() {
        let reason = |n: i64| ReasonCount {
            metric_key: "orders".into(),
            reason: format!("reason {n}"),
            attempts: 10 - n,
            users: 5,
        };
        let figures = SiteHealth {
            outcomes: vec![OutcomeCount {
                metric_key: "gone".into(),
                outcome: AttemptOutcome::Stored,
                attempts: 9,
                users: 6,
            }],
            reasons: (0..7).map(reason).collect(),
            latencies: Vec::new(),
        };
        let metrics = by_metric(vec!["revenue".into(), "orders".into()], figures);
        let keys: Vec<&str> = metrics.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["revenue", "orders", "gone"]);
        assert!(metrics[0].outcomes.is_empty() && metrics[0].latency.is_none(), "no figures: none invented");
        let reasons: Vec<&str> = metrics[1].reasons.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(reasons, ["reason 0", "reason 1", "reason 2", "reason 3", "reason 4"]);
        assert_eq!((metrics[2].outcomes[0].outcome, metrics[2].outcomes[0].attempts), ("stored", 9));
    }
}
