//! Collection for a user and the dashboard data, for the API, the page and MCP alike: a backfill of a
//! date range for one vault site, collect-now, and the dashboard data (every metric with its
//! view over the window, [`crate::domain::figures::view`]: its values, the latest one, its change
//! against the comparison period of §8, only when that period was collected, its to-date
//! totals and the reasons of its periods without a value), and the cards they share (canonical
//! keys from several sites in one card with a total, see [`cards`](mod@cards)).

pub mod cards;

use std::collections::HashMap;
use std::sync::Arc;

use jiff::civil::Date;
use serde::Serialize;
use servio_collector::plan::Planner;
use servio_core::manifests::{CheckedManifest, Wait};
use servio_store::VaultEntry;
use utoipa::ToSchema;

use self::cards::{Card, SiteMetric, cards};
use crate::AppState;
use crate::domain::figures::Raw;
use crate::domain::figures::view::views;
use crate::domain::figures::{FiguresError, MetricRef, ViewSummary, Window};
use crate::domain::vault::{BriefError, changes_waiting};
use crate::error::ApiError;
use crate::shared::dates::{Range, dates};
use crate::shared::today::Today;

/// What a backfill waited for came to, once each of its periods was tried.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackfillSummary {
    /// Values stored.
    pub stored: usize,
    /// Answers that yielded no number (each with its reason in the collection log).
    pub dropped: usize,
    /// Periods whose call failed; those that failed transiently (a timeout, `5xx`, `429`) are
    /// tried again later, as a queued backfill's are.
    pub failed: usize,
}

/// How long a backfill's request waits for the workers to try its periods
/// (`Backfill::run`); past it, the answer says what is still to collect.
pub const BACKFILL_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What a backfill's request answers: what was collected, or what is still queued.
pub(crate) enum BackfillAnswer {
    /// Every period was tried within [`BACKFILL_WAIT`].
    Collected(BackfillSummary),
    /// Queued: at once when asked (`?queue=true`), or some periods still untried after
    /// [`BACKFILL_WAIT`].
    Queued(BackfillQueued),
}

/// What a collection of due periods did.
#[derive(Debug, Serialize, ToSchema)]
pub struct CollectSummary {
    /// Values stored.
    pub stored: usize,
    /// Answers that yielded no number.
    pub dropped: usize,
    /// Calls that failed.
    pub failed: usize,
    /// Slots backing off after a transient failure, not called.
    pub waiting: usize,
}

/// A backfill asked for: who, which of their vault sites, and which dates. Queued as jobs
/// either way, and the request answers at once ([`Backfill::queue`]) or waits for them
/// ([`Backfill::run`]).
pub(crate) struct Backfill<'a> {
    pub state: &'a AppState,
    pub user: &'a servio_store::User,
    pub id: i64,
    pub range: &'a Range,
}

impl Backfill<'_> {
    /// The vault entry and the dates, as both ways start: the dates checked first, so a bad
    /// range is a `400` whoever asks.
    async fn entry_and_dates(&self) -> Result<(servio_store::VaultEntry, (Date, Date)), ApiError> {
        let dates = dates(self.range)?;
        let entry = self.state.store.vault_entry(self.user.id, self.id).await?.ok_or(ApiError::NotFound)?;
        Ok((entry, dates))
    }

    /// Queues the dates as jobs, under the same limits as [`Backfill::queue`], and waits up to
    /// [`BACKFILL_WAIT`] for the workers to try each period: the request never calls the site
    /// itself, so its calls take their turn and the workers' room like any other's.
    pub(crate) async fn run(&self) -> Result<BackfillAnswer, ApiError> {
        let (entry, dates) = self.entry_and_dates().await?;
        let done = self.state.collector.backfill(self.user, &entry, dates, self.state.backfill_wait).await?;
        let progress = done.progress;
        if progress.untried > 0 {
            let pending = self.state.store.pending_jobs(self.user.id, self.id).await?;
            return Ok(BackfillAnswer::Queued(BackfillQueued { queued: done.queued, pending }));
        }
        let count = |n: i64| usize::try_from(n).unwrap_or(0);
        Ok(BackfillAnswer::Collected(BackfillSummary {
            stored: count(progress.stored),
            dropped: count(progress.dropped),
            failed: count(progress.failed + progress.retrying),
        }))
    }

    /// Queues the dates as jobs the workers collect.
    pub(crate) async fn queue(&self) -> Result<BackfillQueued, ApiError> {
        let (entry, dates) = self.entry_and_dates().await?;
        let queued = self.state.collector.queue_backfill(self.user, &entry, dates, jiff::Timestamp::now()).await?;
        Ok(BackfillQueued { queued, pending: self.state.store.pending_jobs(self.user.id, self.id).await? })
    }
}

/// A backfill queued as jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackfillQueued {
    /// Periods queued now (those with a value, or with a job already, are not queued again).
    pub queued: u64,
    /// The site's jobs still to do, these included: poll `GET /api/vault/{id}/jobs` until 0.
    pub pending: i64,
}

/// How far the collection jobs of a vault site have got.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobProgress {
    /// Jobs still to do: due, being collected, or waiting to retry after a transient failure.
    pub pending: i64,
}

/// How many collection jobs of the user's vault site `id` are still to do.
pub(crate) async fn job_progress(state: &AppState, user_id: i64, id: i64) -> Result<JobProgress, ApiError> {
    state.store.vault_entry(user_id, id).await?.ok_or(ApiError::NotFound)?;
    Ok(JobProgress { pending: state.store.pending_jobs(user_id, id).await? })
}

/// Collects what is due for this site now (what the scheduler does every few minutes); slots
/// backing off after a transient failure are counted as `waiting`, not called.
pub(crate) async fn collect_now(
    state: &AppState,
    user: &servio_store::User,
    id: i64,
) -> Result<CollectSummary, ApiError> {
    let entry = state.store.vault_entry(user.id, id).await?.ok_or(ApiError::NotFound)?;
    let summary = state.collector.collect_due(user, &entry, &mut Planner::new(jiff::Timestamp::now())).await?;
    Ok(CollectSummary {
        stored: summary.stored,
        dropped: summary.dropped,
        failed: summary.failed,
        waiting: summary.waiting,
    })
}

/// How many days of periods the API's dashboard shows unless asked (`?days=`), as it always
/// has; the page and MCP show [`crate::domain::figures::view::DEFAULT_DAYS`] unless asked, with the
/// same meaning of a window (N days of periods ending at the latest due period).
pub const DEFAULT_DAYS: u32 = 62;
/// The furthest back it reaches: a year's chart with its comparison periods.
pub const MAX_DAYS: u32 = 400;

/// The dashboard data, typed so that it is serialized straight to the response (built as a
/// `serde_json::Value`, the 3,100 values of a 50-metric user were copied twice more by
/// `json!`) and so that the page reads the same fields the API serves.
#[derive(Debug, Serialize, ToSchema)]
pub struct Dashboard {
    /// The user's IANA zone; periods are in it.
    pub time_zone: String,
    /// One entry per (site, metric), as it has always been.
    pub metrics: Vec<MetricData>,
    /// The metrics grouped as the dashboard shows them, one card each (added later, so older
    /// clients can ignore it), see [`cards`](mod@cards). Served as `slots`, as it always was: the API's
    /// clients and tests read that name.
    #[serde(rename = "slots")]
    pub cards: Vec<Card>,
    /// Sites that need the user: changes waiting for their approval, or a brief that is ignored
    /// (none of its metrics collected), with why.
    pub attention: Vec<SiteAttention>,
}

/// A site of the vault that needs the user's attention.
#[derive(Debug, Serialize, ToSchema)]
pub struct SiteAttention {
    /// The site.
    pub site: SiteData,
    /// Whether changes wait for the user's approval (the approved version acts meanwhile).
    pub changes_waiting: bool,
    /// Whether those changes hold characters a person does not see (the site page shows them).
    pub hidden_text: bool,
    /// Why the brief of the manifest acting for the user is ignored, so that none of its metrics
    /// are collected; empty when it is not.
    pub brief_errors: Vec<BriefError>,
}

/// A metric of a site with its recent values.
#[derive(Debug, Serialize, ToSchema)]
pub struct MetricData {
    /// The site.
    pub site: SiteData,
    /// The metric key.
    pub key: String,
    /// The canonical key's label.
    #[schema(value_type = Option<String>)]
    pub label: Option<&'static str>,
    /// The declared unit.
    pub unit: Option<String>,
    /// `hour`, `day`, `week` or `month`.
    #[schema(value_type = String)]
    pub granularity: &'static str,
    /// The newest value in the window.
    pub latest: Option<Latest>,
    /// Against the comparison period of §8, only when that was collected.
    pub change: Option<ChangeAgainst>,
    /// The window's values (the periods of `?days=` days ending at the latest due period),
    /// oldest first.
    pub values: Vec<Point>,
    /// The metric's view over the window, as the page, MCP's resources, tool, prompt and App
    /// show it: the latest value with its source and comparison, the reasons of the periods
    /// without one (their latest attempt's), the to-date totals and this week's periods without
    /// a value (each value's source is in the metric's MCP resource, over the same window).
    pub view: ViewSummary,
}

/// The site of a metric.
#[derive(Debug, Serialize, ToSchema)]
pub struct SiteData {
    /// The vault site's id.
    pub id: i64,
    /// Its origin.
    pub origin: String,
    /// The manifest's name.
    pub name: String,
}

/// The newest value of a metric.
#[derive(Debug, Serialize, ToSchema)]
pub struct Latest {
    /// The period's key: its first local date (and hour, for `hour`).
    pub period: String,
    /// The value.
    pub value: f64,
    /// The value as the site sent it, as JSON: a number or a string.
    #[schema(schema_with = Raw::schema)]
    pub raw: Raw,
}

/// The change of the latest value against the comparison period (§8), as the dashboard's data
/// has always served it: the compact form of the figures' [`crate::domain::figures::Comparison`].
/// Not a [`servio_store::Change`], which is a change notice.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangeAgainst {
    /// The comparison period's first local date.
    pub against: String,
    /// The difference (in points for a rate in percent).
    pub change: f64,
    /// The difference in percent; absent when the previous value is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
    /// The change in words, as every surface shows it ("no change against …", "▲ +2.1 pts
    /// against …", "▼ -3.5% against …").
    pub text: String,
}

/// A collected value.
#[derive(Debug, Serialize, ToSchema)]
pub struct Point {
    /// The period's first local date.
    pub period: String,
    /// The value.
    pub value: f64,
}

/// The checked manifest that acts for the user of `entry` (the one they approved, as every
/// other path uses), from the collector's manifest cache (checking every manifest on every
/// dashboard request was an eighth of its CPU in the benchmark).
async fn acting_checked(state: &AppState, entry: &VaultEntry) -> Result<Option<Arc<CheckedManifest>>, ApiError> {
    Ok(state.collector.acting(entry, Wait::Bounded).await?)
}

/// The dashboard data of `user`: each metric's view over the periods of the last `days` days
/// ending at its latest due period ([`crate::domain::figures::view`], the one every surface shows).
pub(crate) async fn dashboard_data(
    state: &AppState,
    user: &servio_store::User,
    days: u32,
) -> Result<Dashboard, ApiError> {
    if !(1..=MAX_DAYS).contains(&days) {
        return Err(ApiError::BadRequest(format!("`days` must be from 1 to {MAX_DAYS}")));
    }
    let today = Today::of(user)?;
    let mut entries: Vec<(VaultEntry, Arc<CheckedManifest>)> = Vec::new();
    for entry in state.store.vault_entries(user.id).await? {
        if let Some(acting) = acting_checked(state, &entry).await? {
            entries.push((entry, acting));
        }
    }
    let attention = attention(state, user.id, &entries).await?;
    let found: Vec<MetricRef> = entries
        .iter()
        .flat_map(|(entry, acting)| {
            acting.brief.iter().flat_map(|brief| &brief.metrics).map(|metric| MetricRef {
                site: crate::domain::figures::authority(&entry.site.origin).to_owned(),
                origin: entry.site.origin.clone(),
                site_id: entry.site.id,
                site_name: acting.manifest.name.clone(),
                metric: metric.clone(),
            })
        })
        .collect();
    let window = Window::Last(days);
    let views = views(state, user.id, &today, &found, &window).await.map_err(|error| match error {
        FiguresError::Api(error) => error,
        other => ApiError::internal(other),
    })?;
    // The cards read the values where they are; the metrics then take them.
    let for_cards: Vec<SiteMetric> = found
        .iter()
        .zip(&views)
        .map(|(metric, view)| SiteMetric {
            site_id: metric.site_id,
            site_name: metric.site_name.clone(),
            key: metric.metric.key.clone(),
            unit: metric.metric.unit.clone(),
            granularity: metric.metric.granularity.as_str().to_owned(),
            values: &view.points,
        })
        .collect();
    let cards = cards(&for_cards);
    drop(for_cards);
    let metrics = found.into_iter().zip(views).map(metric_data).collect();
    Ok(Dashboard { time_zone: user.time_zone.clone(), metrics, cards, attention })
}

/// A metric's entry of the dashboard data: its view, and the fields the API has always had,
/// read from it.
fn metric_data((found, view): (MetricRef, ViewSummary)) -> MetricData {
    let latest = view.latest.as_ref().map(|figure| Latest {
        period: figure.period.clone(),
        value: figure.value,
        raw: figure.raw.copy(),
    });
    let change = view.change().and_then(|c| {
        Some(ChangeAgainst { against: c.period.clone()?, change: c.change?, percent: c.percent, text: c.text.clone()? })
    });
    let values = view.points.iter().map(|(_, period, value)| Point { period: period.clone(), value: *value }).collect();
    let metric = found.metric;
    MetricData {
        site: SiteData { id: found.site_id, origin: found.origin, name: found.site_name },
        label: servio_manifest::brief::canonical_label(&metric.key),
        key: metric.key,
        unit: metric.unit,
        granularity: metric.granularity.as_str(),
        latest,
        change,
        values,
        view,
    }
}

/// The sites of `entries` (each with its acting manifest, checked) that need the user: changes
/// waiting for approval (looked at only for sites whose newest manifest is not the approved
/// one), or an ignored brief.
async fn attention(
    state: &AppState,
    user_id: i64,
    entries: &[(VaultEntry, Arc<CheckedManifest>)],
) -> Result<Vec<SiteAttention>, ApiError> {
    let changed = entries.iter().any(|(entry, _)| crate::approval::acting_manifest(entry) != entry.site.manifest);
    let versions: HashMap<i64, i64> =
        if changed { state.store.current_versions(user_id).await?.into_iter().collect() } else { HashMap::new() };
    let mut attention = Vec::new();
    for (entry, checked) in entries {
        let site = (entry.site.id, entry.site.origin.as_str());
        let version = versions.get(&entry.site.id).copied();
        let waiting = changes_waiting(state, site, entry.approved_version, version, entry.kept_version).await?;
        let brief_errors: Vec<BriefError> = checked.brief_errors.iter().map(BriefError::from).collect();
        if waiting.needs_approval || !brief_errors.is_empty() {
            let site = &entry.site;
            let site = SiteData { id: site.id, origin: site.origin.clone(), name: checked.manifest.name.clone() };
            let (changes_waiting, hidden_text) = (waiting.needs_approval, waiting.hidden_text);
            attention.push(SiteAttention { site, changes_waiting, hidden_text, brief_errors });
        }
    }
    Ok(attention)
}
