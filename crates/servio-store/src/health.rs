//! A site's collection health across its users, for the owner of its Directory listing: how
//! the collections of each metric ended over a window, the reasons they did not store a value,
//! and how long the site took to answer. Counts only, never a user's identity; and every figure
//! fewer than a threshold of distinct users stand behind is left out by the store itself, so
//! no caller can show it by mistake. Only users who have collected from the site on enough
//! distinct days count towards it (accounts made yesterday to reach the threshold do not), and
//! the figures are rounded ([`COUNT_STEP`], [`DURATION_STEP_MS`]) so that subtracting one's
//! own accounts from them reveals nothing exact.

use crate::AttemptOutcome;

/// How many collections of one metric ended one way.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OutcomeCount {
    /// The metric.
    pub metric_key: String,
    /// How they ended.
    #[sqlx(try_from = "String")]
    pub outcome: AttemptOutcome,
    /// How many attempts.
    pub attempts: i64,
    /// How many distinct users they were for.
    pub users: i64,
}

/// A reason collections of one metric stored no value, with how often.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ReasonCount {
    /// The metric.
    pub metric_key: String,
    /// The reason, in words.
    pub reason: String,
    /// How many attempts ended with it.
    pub attempts: i64,
    /// How many distinct users they were for.
    pub users: i64,
}

/// How long the site took to answer the calls collecting one metric (nearest-rank percentiles).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Latency {
    /// The metric.
    pub metric_key: String,
    /// How many calls were timed.
    pub calls: i64,
    /// How many distinct users they were for.
    pub users: i64,
    /// The median, in milliseconds.
    pub p50_ms: f64,
    /// The 95th percentile, in milliseconds.
    pub p95_ms: f64,
}

/// A site's collection health over a window, each figure backed by enough users.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SiteHealth {
    /// Attempts by metric and outcome.
    pub outcomes: Vec<OutcomeCount>,
    /// Reasons by metric, most frequent first.
    pub reasons: Vec<ReasonCount>,
    /// Call durations by metric.
    pub latencies: Vec<Latency>,
}

/// The step counts are shown in (rounded down to a multiple of it): an owner who made some of
/// the accounts behind a figure knows their own attempts exactly, and subtracting them from an
/// exact total would tell another user's; from a rounded one it tells only a range.
pub const COUNT_STEP: i64 = 5;

/// The step call durations are shown in, in milliseconds (rounded to the nearest multiple).
pub const DURATION_STEP_MS: f64 = 10.0;

impl SiteHealth {
    /// Every count rounded down to [`COUNT_STEP`] and every duration to [`DURATION_STEP_MS`].
    pub(crate) fn coarsened(mut self) -> SiteHealth {
        let count = |n: &mut i64| *n -= n.rem_euclid(COUNT_STEP);
        let duration = |ms: &mut f64| *ms = (*ms / DURATION_STEP_MS).round() * DURATION_STEP_MS;
        for outcome in &mut self.outcomes {
            count(&mut outcome.attempts);
            count(&mut outcome.users);
        }
        for reason in &mut self.reasons {
            count(&mut reason.attempts);
            count(&mut reason.users);
        }
        for latency in &mut self.latencies {
            count(&mut latency.calls);
            count(&mut latency.users);
            duration(&mut latency.p50_ms);
            duration(&mut latency.p95_ms);
        }
        self
    }
}
