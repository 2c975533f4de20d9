//! Collecting a user's metrics: fill in the period, call the tool with the user's credential,
//! read and reduce the value, store it with its raw form, and log the attempt whatever happens.
//! A dropped value is never stored (so never shown as zero); its reason is in the log.

use std::collections::HashMap;

use jiff::civil::Date;
use servio_client::{CallError, call_tool_checked, call_tool_raw};
use servio_collector::plan::Planner;
use servio_manifest::period::{Period, PlaceholderValues};
use servio_manifest::schema::ArgumentValidator;
use servio_manifest::value::extract;
use servio_manifest::{Brief, Manifest, Metric};
use servio_store::{CollectionResult, SiteRecord, Slot, StoreError, User, VaultEntry};

use crate::AppState;
pub use crate::credential::fresh_bearer;
use crate::credential::replacement;

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

/// What a site's answer came to, before anything is written: the same for a direct collection
/// (a backfill) and for a job, whose completion writes it only while its lease is its own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// What it was.
    pub(crate) outcome: Outcome,
    /// The raw value found (stored, or dropped), for audit.
    pub(crate) raw: Option<String>,
    /// When the site asked to be tried again (`Retry-After`), with a transient failure.
    pub(crate) retry_at: Option<i64>,
}

/// The argument validators of the tools a brief calls, by tool name, compiled once for many
/// calls (compiling a schema costs more than the call). A tool missing here (unknown, or its
/// schema does not compile) is called through [`call_tool_raw`], which says why it cannot be.
#[derive(Default)]
pub(crate) struct Validators(HashMap<String, ArgumentValidator>);

impl Validators {
    /// Compiles the validator of every tool `brief` calls.
    pub(crate) fn new(manifest: &Manifest, brief: &Brief) -> Validators {
        let mut validators = HashMap::new();
        for metric in &brief.metrics {
            if validators.contains_key(&metric.tool) {
                continue;
            }
            if let Some(Ok(validator)) = manifest.tool(&metric.tool).map(|t| ArgumentValidator::new(&t.input_schema)) {
                validators.insert(metric.tool.clone(), validator);
            }
        }
        Validators(validators)
    }
}

/// What a collection's call carries: the token, and the vault entry it came from, to refresh
/// it from when the site refuses it.
#[derive(Clone, Copy)]
pub(crate) struct Bearer<'a> {
    /// The site.
    pub(crate) site: &'a SiteRecord,
    /// The vault entry's sealed credential, as read.
    pub(crate) sealed: Option<&'a [u8]>,
    /// The token sent (already refreshed if it was about to expire).
    pub(crate) token: Option<&'a str>,
}

/// Calls `tool` with `args`, checked by its compiled validator when there is one.
async fn send(
    state: &AppState,
    manifest: &Manifest,
    validators: &Validators,
    tool: &str,
    args: &serde_json::Value,
    token: Option<&str>,
) -> Result<Vec<u8>, CallError> {
    match validators.0.get(tool) {
        Some(validator) => call_tool_checked(&state.client, manifest, validator, tool, args, token).await,
        None => call_tool_raw(&state.client, manifest, tool, args, token).await,
    }
}

/// Calls the tool of `metric` for `period` in the user's zone and reads the value; writes
/// nothing. A `401` to an OAuth token that had not expired (revoked, or rotated by the site)
/// refreshes it once and calls again, as the gateway does.
pub(crate) async fn ask(
    state: &AppState,
    user: &User,
    manifest: &Manifest,
    validators: &Validators,
    bearer: Bearer<'_>,
    metric: &Metric,
    period: &Period,
) -> Answer {
    let args = metric.args_for(&PlaceholderValues::for_period(period, &user.time_zone));
    let failed = |reason: String, transient: bool| Answer {
        outcome: Outcome::Failed { reason, transient },
        raw: None,
        retry_at: None,
    };
    let mut sent = send(state, manifest, validators, &metric.tool, &args, bearer.token).await;
    let refused = matches!(sent, Err(CallError::Failed { status: 401, .. }));
    if refused && let Some(token) = bearer.token {
        match replacement(state, user, bearer.site, manifest, bearer.sealed, token).await {
            Ok(Some(fresh)) => sent = send(state, manifest, validators, &metric.tool, &args, Some(&fresh)).await,
            // Nothing to refresh (a pasted token): the 401 is the answer, logged as such.
            Ok(None) => {}
            Err(error) => eprintln!("servio: refreshing the OAuth token for {} failed: {error}", bearer.site.origin),
        }
    }
    match sent {
        Ok(body) => match extract(&body, &metric.value_path) {
            Ok(found) => Answer { outcome: Outcome::Stored(found.value), raw: Some(found.raw), retry_at: None },
            Err(dropped) => Answer {
                outcome: Outcome::Dropped(format!("valuePath {}: {}", metric.value_path, dropped.reason)),
                raw: dropped.raw,
                retry_at: None,
            },
        },
        Err(CallError::Failed { status, body, retry_after }) if status >= 500 || status == 429 => Answer {
            retry_at: retry_after.map(|t| t.as_second()),
            ..failed(format!("the tool answered {status}: {body}"), true)
        },
        Err(CallError::Failed { status, body, .. }) => failed(format!("the tool answered {status}: {body}"), false),
        Err(CallError::NotJson(detail)) => Answer {
            outcome: Outcome::Dropped(format!("the response is not JSON: {detail}")),
            raw: None,
            retry_at: None,
        },
        Err(error @ CallError::Request(_)) => failed(error.to_string(), true),
        Err(error) => failed(error.to_string(), false),
    }
}

/// Collects `metric` of `site` for `user` over `period`, logging the attempt as made `at`;
/// writes directly, without a job (backfills).
#[allow(clippy::too_many_arguments)]
async fn collect(
    state: &AppState,
    user: &User,
    manifest: &Manifest,
    validators: &Validators,
    bearer: Bearer<'_>,
    metric: &Metric,
    period: &Period,
    at: jiff::Timestamp,
) -> Result<Outcome, StoreError> {
    let start_date = period.start_date.to_string();
    let slot = slot(user, bearer.site, metric, period, &start_date);
    let at = at.as_second();
    let answer = ask(state, user, manifest, validators, bearer, metric, period).await;
    let raw = answer.raw.as_deref();
    let result = match &answer.outcome {
        Outcome::Stored(value) => CollectionResult::Stored { value: *value, raw: raw.unwrap_or_default() },
        Outcome::Dropped(reason) => CollectionResult::Dropped { reason, raw },
        Outcome::Failed { reason, transient: true } => {
            CollectionResult::Retry { reason, retry_at: answer.retry_at, not_before: None }
        }
        Outcome::Failed { reason, transient: false } => CollectionResult::Failed { reason },
    };
    state.store.record_result(&slot, &result, at).await?;
    Ok(answer.outcome)
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
    /// Slots not tried this time: their backoff has not passed, or another worker holds them.
    pub waiting: usize,
    /// Results not committed: another worker took the job over after this one's lease ran out.
    pub fenced_out: usize,
}

impl Summary {
    fn add(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Stored(_) => self.stored += 1,
            Outcome::Dropped(_) => self.dropped += 1,
            Outcome::Failed { .. } => self.failed += 1,
        }
    }

    /// Adds another run's counts.
    pub fn merge(&mut self, other: &Summary) {
        self.stored += other.stored;
        self.dropped += other.dropped;
        self.failed += other.failed;
        self.waiting += other.waiting;
        self.fenced_out += other.fenced_out;
    }

    /// One line for people: `12 stored, 0 dropped, 1 failed, 0 fenced out`.
    pub fn describe(&self) -> String {
        format!(
            "{} stored, {} dropped, {} failed, {} fenced out",
            self.stored, self.dropped, self.failed, self.fenced_out
        )
    }
}

/// Collects every metric of `brief` for every period starting between `first` and `last`
/// (a backfill), in the user's zone, with the credential of the user's vault `entry`.
pub async fn backfill(
    state: &AppState,
    user: &User,
    entry: &VaultEntry,
    manifest: &Manifest,
    brief: &Brief,
    first: Date,
    last: Date,
) -> Result<Summary, String> {
    let zone = servio_manifest::period::zone(&user.time_zone).map_err(|e| e.to_string())?;
    let sealed = entry.credential.as_deref();
    let token = fresh_bearer(state, user, &entry.site, manifest, sealed).await;
    let bearer = Bearer { site: &entry.site, sealed, token: token.as_deref() };
    let validators = Validators::new(manifest, brief);
    let mut summary = Summary::default();
    for metric in &brief.metrics {
        let periods = servio_collector::plan::periods_between(metric.granularity, first, last, &zone)
            .map_err(|e| e.to_string())?;
        for period in periods.iter().filter(|p| servio_collector::plan::is_due(p, jiff::Timestamp::now())) {
            let outcome = collect(state, user, manifest, &validators, bearer, metric, period, jiff::Timestamp::now())
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
/// The slots go through jobs, as with `servio worker`, so a worker never collects them twice.
pub async fn collect_due(
    state: &AppState,
    user: &User,
    entry: &servio_store::VaultEntry,
    planner: &mut Planner,
) -> Result<Summary, String> {
    crate::jobs::collect_entry(state, user, entry, planner).await
}

/// Collects what is due for every user, every `tick`, forever (see [`crate::jobs::run_rounds`]).
pub async fn run_periodically(state: AppState, tick: std::time::Duration) {
    crate::jobs::run_rounds(state, tick).await
}
