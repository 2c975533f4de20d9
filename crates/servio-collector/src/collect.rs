//! One collection: fill in the period, call the tool with the user's credential, read and
//! reduce the value. What it came to is a [`Reading`]; a job commits it under its
//! fence ([`crate::jobs`]: scheduled periods, collect-now and backfills alike), and the
//! attempt is logged whatever happens. A dropped value is never stored (so never shown as
//! zero); its reason is in the log.
//!
//! Metrics of a brief whose tool and resolved arguments are the same for a period share one
//! call (interpretation §5): [`shared_calls`] groups them, the site is asked once, and
//! [`judge`] reads each metric's value from that one answer. [`judge`] is also the one
//! classification of an answer (stored, dropped, a permanent or a transient failure) that
//! `servio brief test` shows, so that the dry run judges as the platform does.

use std::sync::Arc;

use serde_json::Value;
use servio_client::{CallError, ToolCall};
use servio_manifest::period::{Period, PlaceholderValues};
use servio_manifest::value::extract;
use servio_manifest::{Metric, ValuePath};
use servio_store::{CollectionResult, SiteRecord, User};

use crate::Collector;
use servio_core::credentials::Retried;
use servio_core::manifests::{CheckedManifest, Refusal, Wait};

/// What one collection came to.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectionOutcome {
    /// A value was read (and is stored).
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

/// What a site's answer came to, before anything is written: a job's completion writes it only
/// while its lease is its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// What it was.
    pub outcome: CollectionOutcome,
    /// The raw value found (stored, or dropped), for audit.
    pub raw: Option<String>,
    /// When the site asked to be tried again (`Retry-After`), with a transient failure.
    pub retry_at: Option<i64>,
    /// How long the site took to answer (milliseconds, a renewal's second call included).
    pub duration_ms: Option<f64>,
    /// What the value was read from ([`source_of`]), stored with it for audit.
    pub source: Option<String>,
}

impl Reading {
    /// What is written for this reading: a transient failure is retried from `not_before`
    /// (a job's next try; `None` when it would be past the deadline).
    pub(crate) fn to_write(&self, not_before: Option<i64>) -> CollectionResult<'_> {
        match &self.outcome {
            CollectionOutcome::Stored(value) => {
                let raw = self.raw.as_deref().unwrap_or_default();
                CollectionResult::Stored { value: *value, raw, source: self.source.as_deref() }
            }
            CollectionOutcome::Dropped(reason) => CollectionResult::Dropped { reason, raw: self.raw.as_deref() },
            CollectionOutcome::Failed { reason, transient: true } => {
                CollectionResult::Retry { reason, retry_at: self.retry_at, not_before }
            }
            CollectionOutcome::Failed { reason, transient: false } => CollectionResult::Failed { reason },
        }
    }

    /// Whether the platform tries this again later (a transient failure, §8).
    pub fn is_transient(&self) -> bool {
        matches!(self.outcome, CollectionOutcome::Failed { transient: true, .. })
    }

    fn failed(reason: String, transient: bool) -> Reading {
        Reading {
            outcome: CollectionOutcome::Failed { reason, transient },
            raw: None,
            retry_at: None,
            duration_ms: None,
            source: None,
        }
    }

    fn dropped(reason: String, raw: Option<String>) -> Reading {
        Reading { outcome: CollectionOutcome::Dropped(reason), raw, retry_at: None, duration_ms: None, source: None }
    }
}

/// What a site's answer to a call means for a metric whose value is at `value_path`: the one
/// classification of §7 and §8, for the collector and `servio brief test` alike. A value is
/// stored, or dropped with its reason (no number there, or an answer that is not JSON); a
/// failure is transient (no answer: connect, timeout; or `5xx`, `429`, with the site's
/// `Retry-After`) and retried until the period's deadline, or permanent (any other status, or
/// a call that could not be made: unknown tool, invalid arguments, an unusable schema).
pub fn judge(answer: &Result<Vec<u8>, CallError>, value_path: &ValuePath) -> Reading {
    match answer {
        Ok(body) => match extract(body, value_path) {
            Ok(found) => Reading {
                outcome: CollectionOutcome::Stored(found.value),
                raw: Some(found.raw),
                retry_at: None,
                duration_ms: None,
                source: None,
            },
            Err(dropped) => Reading::dropped(format!("valuePath {value_path}: {}", dropped.reason), dropped.raw),
        },
        Err(CallError::Failed { status, body, retry_after }) if *status >= 500 || *status == 429 => Reading {
            retry_at: retry_after.map(|t| t.as_second()),
            ..Reading::failed(format!("the tool answered {status}: {body}"), true)
        },
        Err(CallError::Failed { status, body, .. }) => {
            Reading::failed(format!("the tool answered {status}: {body}"), false)
        }
        Err(CallError::NotJson(detail)) => Reading::dropped(format!("the response is not JSON: {detail}"), None),
        Err(error @ CallError::Request(_)) => Reading::failed(error.to_string(), true),
        Err(error) => Reading::failed(error.to_string(), false),
    }
}

/// What makes two calls the same: the tool, its resolved arguments, and the period's instants.
type SameCall<'a> = (&'a str, &'a Value, (i64, i64));

/// The calls that `calls` (each a tool, its resolved arguments and the period) come to: the
/// indexes of the calls that are the same, grouped in the order they first appear. One call
/// per group answers them all (§5: the metrics of a brief with the same tool and resolved
/// arguments for a period share one call).
pub fn shared_calls<'a>(calls: impl IntoIterator<Item = (&'a str, &'a Value, &'a Period)>) -> Vec<Vec<usize>> {
    let mut groups: Vec<(SameCall<'_>, Vec<usize>)> = Vec::new();
    for (index, (tool, args, period)) in calls.into_iter().enumerate() {
        let call = (tool, args, (period.start.as_second(), period.end.as_second()));
        // A brief has a few metrics: a scan costs less than hashing arguments.
        match groups.iter_mut().find(|(seen, _)| *seen == call) {
            Some((_, members)) => members.push(index),
            None => groups.push((call, vec![index])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// What a collection's call carries: the token, and the vault entry it came from, to renew it
/// from when the site refuses it.
#[derive(Clone, Copy)]
pub(crate) struct Bearer<'a> {
    /// The site.
    pub(crate) site: &'a SiteRecord,
    /// The vault entry's sealed credential, as read.
    pub(crate) sealed: Option<&'a [u8]>,
    /// The token sent (already renewed if it was about to expire).
    pub(crate) token: Option<&'a str>,
}

/// One call to make for `user`: `tool` of the site `bearer` calls, with `args` (a period's,
/// resolved), for every metric that shares it.
#[derive(Clone, Copy)]
pub(crate) struct ToolAsk<'a> {
    /// Whose.
    pub(crate) user: &'a User,
    /// The manifest acting for them.
    pub(crate) checked: &'a Arc<CheckedManifest>,
    /// The site and the token it is called with.
    pub(crate) bearer: Bearer<'a>,
    /// The tool, unprefixed.
    pub(crate) tool: &'a str,
    /// The resolved arguments.
    pub(crate) args: &'a Value,
}

/// A site's answer to one call, for each metric that shares the call to read its value from.
pub(crate) struct Answer {
    /// The body, or why there is none.
    pub(crate) body: Result<Vec<u8>, CallError>,
    /// How long the site took to answer (milliseconds, a renewal's second call included).
    pub(crate) duration_ms: f64,
}

impl Answer {
    /// What the answer to a call with `args` (resolved in the user's zone named `zone_name`)
    /// means for `metric`.
    pub(crate) fn reading(&self, metric: &Metric, args: &Value, zone_name: &str) -> Reading {
        Reading {
            duration_ms: Some(self.duration_ms),
            source: Some(source_of(metric, args, zone_name)),
            ..judge(&self.body, &metric.value_path)
        }
    }
}

/// What a value of `metric` is read from, kept with it for audit: the zone its period was
/// resolved in, the tool, the resolved arguments and the `valuePath`, as a JSON object
/// (`{"time_zone", "tool", "arguments", "value_path"}`).
pub fn source_of(metric: &Metric, args: &Value, zone_name: &str) -> String {
    serde_json::json!({
        "time_zone": zone_name,
        "tool": metric.tool,
        "arguments": args,
        "value_path": metric.value_path.to_string(),
    })
    .to_string()
}

/// The arguments of `metric` for `period` in the user's zone named `zone_name`.
pub(crate) fn args_of(metric: &Metric, period: &Period, zone_name: &str) -> Value {
    metric.args_for(&PlaceholderValues::for_period(period, zone_name))
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

/// How long after a period is due its collection keeps being retried.
pub const DEADLINE: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// Until when a transient failure of `period` is retried: [`DEADLINE`] after it is due (its
/// end and settle delay); `None` for a period that never ends.
pub fn retry_deadline(period: &Period) -> Option<jiff::Timestamp> {
    let due = period.end.checked_add(crate::plan::settle_delay(period.granularity)).ok()?;
    due.checked_add(DEADLINE).ok()
}

impl Collector {
    /// Calls `tool` with `args`, checked by its compiled validator off the async threads
    /// ([`servio_core::ManifestCache::validate`]); a tool the manifest lacks, or whose schema cannot
    /// be used, fails with the reason.
    async fn call_tool(
        &self,
        checked: &Arc<CheckedManifest>,
        tool: &str,
        args: &serde_json::Value,
        token: Option<&str>,
    ) -> Result<Vec<u8>, CallError> {
        let Some(index) = checked.tool_index(tool) else {
            // The client's own lookup fails saying which tools there are.
            return ToolCall { manifest: &checked.manifest, name: tool, args, token }.send(&self.client, None).await;
        };
        // Background collection waits its turn: its calls in flight are bounded by the call room.
        match self.manifests.validate(checked, index, args, Wait::Turn).await {
            Ok(()) => {}
            Err(Refusal::Unusable(reason)) => return Err(CallError::BadSchema(reason)),
            Err(Refusal::Invalid(problems)) => return Err(CallError::InvalidArguments(problems)),
            Err(Refusal::Busy(busy)) => return Err(CallError::BadSchema(busy.to_string())),
        }
        servio_client::post_tool(&self.client, &checked.manifest.server_url, tool, args, token).await
    }

    /// Calls a tool with its arguments and the user's credential, once for every metric that
    /// shares the call; writes nothing. A `401` to an OAuth token renews it once and calls
    /// again ([`servio_core::Credentials::send_with_renewal`]).
    #[tracing::instrument(
        level = "debug",
        name = "collection",
        skip_all,
        fields(user_id = ask.user.id, site_id = ask.bearer.site.id, tool = %ask.tool)
    )]
    pub(crate) async fn ask(&self, ask: ToolAsk<'_>) -> Answer {
        let ToolAsk { user, checked, bearer, tool, args } = ask;
        let send = |token: Option<String>| async move { self.call_tool(checked, tool, args, token.as_deref()).await };
        let (site, sealed) = (bearer.site, bearer.sealed);
        let started = std::time::Instant::now();
        let sent =
            self.credentials.send_with_renewal(user.id, site, &checked.manifest, sealed, bearer.token, send).await;
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        if let Retried::RenewalFailed(error) = &sent.retried {
            // The 401 stays the answer, logged as such.
            tracing::warn!(site = %site.origin, error = %servio_client::error_chain(&error), "renewing the OAuth token failed");
        }
        Answer { body: sent.result, duration_ms }
    }
}

/// Counts a written collection result in the metrics, by the outcome its attempt logged, or as
/// `fenced_out` when a job's result was not committed (another lease held the job).
pub(crate) fn count_collection(result: &servio_store::CollectionResult<'_>, committed: bool) {
    let outcome: &'static str = match result.outcome() {
        _ if !committed => "fenced_out",
        Some(outcome) => outcome.into(),
        None => return,
    };
    metrics::counter!("servio_collections_total", "outcome" => outcome).increment(1);
}

#[cfg(test)]
mod tests {
    use servio_client::CallError;
    use servio_manifest::ValuePath;

    use super::{CollectionOutcome, judge};

    /// The one classification (§7, §8) the collector and `servio brief test` share: what each
    /// answer comes to, and whether the platform tries it again.
    #[test]
    fn answers_are_judged_once_for_everyone() {
        let path = ValuePath::parse("total").expect("a path");
        let failed = |status: u16| -> Result<Vec<u8>, CallError> {
            let retry_after = (status == 503).then(|| jiff::Timestamp::from_second(1_000).expect("an instant"));
            Err(CallError::Failed { status, body: "no".into(), retry_after })
        };
        let transient = |answer: &Result<Vec<u8>, CallError>| {
            let reading = judge(answer, &path);
            match reading.outcome {
                CollectionOutcome::Failed { transient, .. } => Some((transient, reading.retry_at)),
                _ => None,
            }
        };
        assert_eq!(transient(&failed(500)), Some((true, None)));
        assert_eq!(transient(&failed(503)), Some((true, Some(1_000))), "Retry-After is kept");
        assert_eq!(transient(&failed(429)), Some((true, None)));
        assert_eq!(transient(&failed(404)), Some((false, None)));
        assert_eq!(transient(&failed(401)), Some((false, None)));
        assert_eq!(transient(&Err(CallError::BadSchema("broken".into()))), Some((false, None)));
        let dropped = judge(&Err(CallError::NotJson("text/html".into())), &path).outcome;
        assert!(matches!(dropped, CollectionOutcome::Dropped(_)), "{dropped:?}");
        let dropped = judge(&Ok(br#"{"total": "no sales"}"#.to_vec()), &path);
        assert!(matches!(dropped.outcome, CollectionOutcome::Dropped(_)));
        assert_eq!(dropped.raw.as_deref(), Some("\"no sales\""), "the raw value is kept for audit");
        let stored = judge(&Ok(br#"{"total": "$2,340.00"}"#.to_vec()), &path);
        assert_eq!(stored.outcome, CollectionOutcome::Stored(2340.0));
    }
}
