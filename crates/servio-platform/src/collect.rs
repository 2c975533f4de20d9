//! Collecting a user's metrics: fill in the period, call the tool with the user's credential,
//! read and reduce the value, store it with its raw form, and log the attempt whatever happens.
//! A dropped value is never stored (so never shown as zero); its reason is in the log.

use jiff::civil::Date;
use serde_json::Value;
use servio_client::{CallError, call_tool_raw};
use servio_manifest::period::{Period, PlaceholderValues};
use servio_manifest::value::extract;
use servio_manifest::{Brief, Manifest, Metric};
use servio_store::{SiteRecord, Slot, StoreError, User};

use crate::secrets::credential_aad;
use crate::{AppState, now};

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

/// The bearer token a site gets for this user: a pasted token, or an OAuth access token.
pub fn bearer(state: &AppState, user_id: i64, site_id: i64, sealed: Option<&[u8]>) -> Option<String> {
    let plain = state.secrets.open(sealed?, &credential_aad(user_id, site_id))?;
    match serde_json::from_slice::<Value>(&plain) {
        Ok(Value::Object(tokens)) if tokens.get("kind").and_then(Value::as_str) == Some("oauth2") => {
            tokens.get("access_token").and_then(Value::as_str).map(str::to_owned)
        }
        _ => String::from_utf8(plain).ok(),
    }
}

/// Collects `metric` of `site` for `user` over `period`.
#[allow(clippy::too_many_arguments)]
pub async fn collect(
    state: &AppState,
    user: &User,
    site: &SiteRecord,
    manifest: &Manifest,
    token: Option<&str>,
    metric: &Metric,
    period: &Period,
) -> Result<Outcome, StoreError> {
    let start_date = period.start_date.to_string();
    let slot = Slot {
        user_id: user.id,
        site_id: site.id,
        metric_key: &metric.key,
        granularity: metric.granularity.as_str(),
        period_start: period.start.as_second(),
        period_end: period.end.as_second(),
        start_date: &start_date,
    };
    let args = metric.args_for(&PlaceholderValues::for_period(period, &user.time_zone));
    let outcome = match call_tool_raw(&state.client, manifest, &metric.tool, &args, token).await {
        Ok(body) => match extract(&body, &metric.value_path) {
            Ok(found) => {
                state.store.store_value(&slot, found.value, &found.raw, now()).await?;
                state.store.log_attempt(&slot, "stored", None, Some(&found.raw), now()).await?;
                return Ok(Outcome::Stored(found.value));
            }
            Err(dropped) => {
                let reason = format!("valuePath {}: {}", metric.value_path, dropped.reason);
                state.store.log_attempt(&slot, "dropped", Some(&reason), dropped.raw.as_deref(), now()).await?;
                return Ok(Outcome::Dropped(reason));
            }
        },
        Err(CallError::Failed { status, body }) => Outcome::Failed {
            reason: format!("the tool answered {status}: {body}"),
            transient: status >= 500 || status == 429,
        },
        Err(CallError::NotJson(detail)) => Outcome::Dropped(format!("the response is not JSON: {detail}")),
        Err(error @ CallError::Request(_)) => Outcome::Failed { reason: error.to_string(), transient: true },
        Err(error) => Outcome::Failed { reason: error.to_string(), transient: false },
    };
    let (kind, reason) = match &outcome {
        Outcome::Dropped(reason) => ("dropped", reason.clone()),
        Outcome::Failed { reason, transient: true } => ("retry", reason.clone()),
        Outcome::Failed { reason, transient: false } => ("failed", reason.clone()),
        Outcome::Stored(_) => unreachable!("returned above"),
    };
    state.store.log_attempt(&slot, kind, Some(&reason), None, now()).await?;
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
            let outcome =
                collect(state, user, site, manifest, token, metric, period).await.map_err(|e| e.to_string())?;
            summary.add(&outcome);
        }
    }
    Ok(summary)
}

/// How long after a period is due its collection keeps being retried.
pub const DEADLINE: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// Collects, for one user's vault site, the latest due period of every metric that is not
/// settled yet (stored, or ended for good). A new brief or metric thus starts with the current
/// period; older periods only come from a backfill. Transient failures are tried again on the
/// next round until [`DEADLINE`] after the period was due.
pub async fn collect_due(
    state: &AppState,
    user: &User,
    entry: &servio_store::VaultEntry,
    now: jiff::Timestamp,
) -> Result<Summary, String> {
    let report = servio_manifest::check(entry.site.manifest.as_bytes(), &servio_manifest::CheckOptions::default());
    let (Some(manifest), Some(brief)) = (report.manifest.as_ref(), report.brief.as_ref()) else {
        return Ok(Summary::default());
    };
    let zone = servio_manifest::period::zone(&user.time_zone).map_err(|e| e.to_string())?;
    let token = bearer(state, user.id, entry.site.id, entry.credential.as_deref());
    let mut summary = Summary::default();
    for metric in &brief.metrics {
        let period = servio_collector::plan::latest_due(metric.granularity, &zone, now).map_err(|e| e.to_string())?;
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
        let outcome = collect(state, user, &entry.site, manifest, token.as_deref(), metric, &period)
            .await
            .map_err(|e| e.to_string())?;
        summary.add(&outcome);
    }
    Ok(summary)
}

/// Collects what is due for every user, every `tick`, forever.
pub async fn run_periodically(state: AppState, tick: std::time::Duration) {
    loop {
        match state.store.all_vault_entries().await {
            Ok(entries) => {
                for (user, entry) in entries {
                    if let Err(error) = collect_due(&state, &user, &entry, jiff::Timestamp::now()).await {
                        eprintln!("servio: collecting for {} failed: {error}", entry.site.origin);
                    }
                }
            }
            Err(error) => eprintln!("servio: listing vaults for collection failed: {error}"),
        }
        tokio::time::sleep(tick).await;
    }
}
