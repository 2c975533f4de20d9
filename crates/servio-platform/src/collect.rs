//! Collecting a user's metrics: fill in the period, call the tool with the user's credential,
//! read and reduce the value, store it with its raw form, and log the attempt whatever happens.
//! A dropped value is never stored (so never shown as zero); its reason is in the log.

use jiff::civil::Date;
use servio_client::{CallError, call_tool_raw};
use servio_collector::plan::Planner;
use servio_manifest::period::{Period, PlaceholderValues};
use servio_manifest::value::extract;
use servio_manifest::{Brief, Manifest, Metric};
use servio_store::{SiteRecord, Slot, StoreError, User};

use crate::AppState;
pub use crate::credential::fresh_bearer;

/// What one collection did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A value was stored.
    Stored(f64),
    /// The site answered, but the value was dropped (the reason says why).
    Dropped(String),
    /// The call failed; `transient` failures are worth retrying.
    Failed {
        /// Why.
        reason: String,
        /// Connect, timeout, 5xx or 429.
        transient: bool,
    },
}

/// The slot `metric` of `site` fills for `user` over `period`.
fn slot<'a>(user: &User, site: &SiteRecord, metric: &'a Metric, period: &Period, start_date: &'a str) -> Slot<'a> {
    Slot {
        user_id: user.id,
        site_id: site.id,
        metric_key: &metric.key,
        granularity: metric.granularity.as_str(),
        period_start: period.start.as_second(),
        period_end: period.end.as_second(),
        start_date,
    }
}

/// Collects `metric` of `site` for `user` over `period`, logging the attempt as made `at`.
#[allow(clippy::too_many_arguments)]
pub async fn collect(
    state: &AppState,
    user: &User,
    site: &SiteRecord,
    manifest: &Manifest,
    token: Option<&str>,
    metric: &Metric,
    period: &Period,
    at: jiff::Timestamp,
) -> Result<Outcome, StoreError> {
    let start_date = period.start_date.to_string();
    let slot = slot(user, site, metric, period, &start_date);
    let at = at.as_second();
    let args = metric.args_for(&PlaceholderValues::for_period(period, &user.time_zone));
    let outcome = match call_tool_raw(&state.client, manifest, &metric.tool, &args, token).await {
        Ok(body) => match extract(&body, &metric.value_path) {
            Ok(found) => {
                state.store.store_value(&slot, found.value, &found.raw, at).await?;
                state.store.log_attempt(&slot, "stored", None, Some(&found.raw), at).await?;
                return Ok(Outcome::Stored(found.value));
            }
            Err(dropped) => {
                let reason = format!("valuePath {}: {}", metric.value_path, dropped.reason);
                state.store.log_attempt(&slot, "dropped", Some(&reason), dropped.raw.as_deref(), at).await?;
                return Ok(Outcome::Dropped(reason));
            }
        },
        Err(CallError::Failed { status, body, retry_after }) if status >= 500 || status == 429 => {
            let reason = format!("the tool answered {status}: {body}");
            let retry_at = retry_after.map(|t| t.as_second());
            state.store.log_retry(&slot, &reason, retry_at, at).await?;
            return Ok(Outcome::Failed { reason, transient: true });
        }
        Err(CallError::Failed { status, body, .. }) => {
            Outcome::Failed { reason: format!("the tool answered {status}: {body}"), transient: false }
        }
        Err(CallError::NotJson(detail)) => Outcome::Dropped(format!("the response is not JSON: {detail}")),
        Err(error @ CallError::Request(_)) => Outcome::Failed { reason: error.to_string(), transient: true },
        Err(error) => Outcome::Failed { reason: error.to_string(), transient: false },
    };
    match &outcome {
        Outcome::Failed { reason, transient: true } => state.store.log_retry(&slot, reason, None, at).await?,
        Outcome::Failed { reason, transient: false } => {
            state.store.log_attempt(&slot, "failed", Some(reason), None, at).await?
        }
        Outcome::Dropped(reason) => state.store.log_attempt(&slot, "dropped", Some(reason), None, at).await?,
        Outcome::Stored(_) => unreachable!("returned above"),
    }
    Ok(outcome)
}

/// Counts of a collection run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Values stored.
    pub stored: usize,
    /// Values dropped.
    pub dropped: usize,
    /// Calls that failed.
    pub failed: usize,
    /// Slots not tried this time: they failed transiently and their backoff has not passed.
    pub waiting: usize,
}

impl Summary {
    fn add(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Stored(_) => self.stored += 1,
            Outcome::Dropped(_) => self.dropped += 1,
            Outcome::Failed { .. } => self.failed += 1,
        }
    }
}

/// Collects every metric of `brief` for every period starting between `first` and `last`
/// (a backfill), in the user's zone.
#[allow(clippy::too_many_arguments)]
pub async fn backfill(
    state: &AppState,
    user: &User,
    site: &SiteRecord,
    manifest: &Manifest,
    brief: &Brief,
    token: Option<&str>,
    first: Date,
    last: Date,
) -> Result<Summary, String> {
    let zone = servio_manifest::period::zone(&user.time_zone).map_err(|e| e.to_string())?;
    let mut summary = Summary::default();
    for metric in &brief.metrics {
        let periods = servio_collector::plan::periods_between(metric.granularity, first, last, &zone)
            .map_err(|e| e.to_string())?;
        for period in periods.iter().filter(|p| servio_collector::plan::is_due(p, jiff::Timestamp::now())) {
            let outcome = collect(state, user, site, manifest, token, metric, period, jiff::Timestamp::now())
                .await
                .map_err(|e| e.to_string())?;
            summary.add(&outcome);
        }
    }
    Ok(summary)
}

/// How long after a period is due its collection keeps being retried.
pub const DEADLINE: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// Collects, for one user's vault site, the latest due period of every metric that is not
/// settled yet (stored, or ended for good). A new brief or metric thus starts with the current
/// period; older periods only come from a backfill. Transient failures are tried again, with
/// backoff and never before a site's `Retry-After`, until [`DEADLINE`] after the period was due.
pub async fn collect_due(
    state: &AppState,
    user: &User,
    entry: &servio_store::VaultEntry,
    planner: &mut Planner,
) -> Result<Summary, String> {
    let now = planner.now();
    let report = servio_manifest::check(entry.site.manifest.as_bytes(), &servio_manifest::CheckOptions::default());
    let (Some(manifest), Some(brief)) = (report.manifest.as_ref(), report.brief.as_ref()) else {
        return Ok(Summary::default());
    };
    let token = fresh_bearer(state, user, &entry.site, manifest, entry.credential.as_deref()).await;
    let mut summary = Summary::default();
    for metric in &brief.metrics {
        let period = planner.latest_due(&user.time_zone, metric.granularity).map_err(|e| e.to_string())?.clone();
        let due = period
            .end
            .checked_add(servio_collector::plan::settle_delay(period.granularity))
            .map_err(|e| e.to_string())?;
        if due.checked_add(DEADLINE).is_ok_and(|deadline| now > deadline) {
            continue;
        }
        let settled = state
            .store
            .slot_settled(user.id, entry.site.id, &metric.key, period.start.as_second())
            .await
            .map_err(|e| e.to_string())?;
        if settled {
            continue;
        }
        if !backoff_passed(state, user, &entry.site, metric, &period, now).await.map_err(|e| e.to_string())? {
            summary.waiting += 1;
            continue;
        }
        let outcome = collect(state, user, &entry.site, manifest, token.as_deref(), metric, &period, now)
            .await
            .map_err(|e| e.to_string())?;
        summary.add(&outcome);
    }
    Ok(summary)
}

/// Whether a slot may be tried at `now`: it never failed transiently, or its backoff is over.
async fn backoff_passed(
    state: &AppState,
    user: &User,
    site: &SiteRecord,
    metric: &Metric,
    period: &Period,
    now: jiff::Timestamp,
) -> Result<bool, StoreError> {
    let start_date = period.start_date.to_string();
    let retries = state.store.retries(&slot(user, site, metric, period, &start_date)).await?;
    let Some(last_at) = retries.last_at.and_then(|t| jiff::Timestamp::from_second(t).ok()) else {
        return Ok(true);
    };
    let retry_after = retries.retry_at.and_then(|t| jiff::Timestamp::from_second(t).ok());
    let failures = u32::try_from(retries.failures).unwrap_or(u32::MAX);
    Ok(servio_collector::plan::next_retry(failures, last_at, retry_after) <= now)
}

/// Collects what is due for every user, every `tick`, forever.
pub async fn run_periodically(state: AppState, tick: std::time::Duration) {
    loop {
        match state.store.all_vault_entries().await {
            Ok(entries) => {
                // One instant per round: users sharing a zone share its due periods.
                let mut planner = Planner::new(jiff::Timestamp::now());
                for (user, entry) in entries {
                    if let Err(error) = collect_due(&state, &user, &entry, &mut planner).await {
                        eprintln!("servio: collecting for {} failed: {error}", entry.site.origin);
                    }
                }
            }
            Err(error) => eprintln!("servio: listing vaults for collection failed: {error}"),
        }
        tokio::time::sleep(tick).await;
    }
}
