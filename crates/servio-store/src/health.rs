//! A site's collection health across its users, for the owner of its Directory listing: how
//! the collections of each metric ended over a window, the reasons they did not store a value,
//! and how long the site took to answer. Counts only, never a user's identity; and every figure
//! fewer than a threshold of distinct users stand behind is left out by the store itself, so
//! no caller can show it by mistake.

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
