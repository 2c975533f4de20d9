//! What collection wrote ([`Collection`]): each slot's value, every attempt at it, and what
//! the collector and the dashboard read of them. What one collection of a slot came to is a
//! [`CollectionResult`], written as the value when there is one and the attempt always: jobs
//! ([`Jobs::complete_jobs`](crate::Jobs::complete_jobs), under their fence) and backfills
//! ([`Collection::record_result`]) write through the same type.

use async_trait::async_trait;

use crate::Result;
use crate::database::{Backend, Conn, Database};
use crate::text::{storable, storable_opt};
use crate::{Change, SiteHealth, User, VaultEntry};

/// How a collection attempt ended, as the attempt log keeps it (stored as its lowercase name,
/// the same text as before it was typed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum AttemptOutcome {
    /// A value was stored.
    Stored,
    /// The site answered, but with no number: the slot is settled without a value.
    Dropped,
    /// The call failed for good.
    Failed,
    /// The call failed transiently; the slot may be tried again.
    Retry,
}

impl AttemptOutcome {
    /// The stored text: `stored`, `dropped`, `failed` or `retry`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A stored text that names no outcome or state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {text:?}")]
pub struct UnknownName {
    /// What was being read (`outcome`, `job state`).
    pub what: &'static str,
    /// The text found.
    pub text: String,
}

/// Rows carry the outcome as text; `#[sqlx(try_from = "String")]` reads it through this.
impl TryFrom<String> for AttemptOutcome {
    type Error = UnknownName;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse().map_err(|_| UnknownName { what: "outcome", text })
    }
}

/// What a collection came to, and so what is written for it.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectionResult<'a> {
    /// A value: stored for the slot, an attempt `stored` logged; a job is done.
    Stored {
        /// The number.
        value: f64,
        /// The value as the site sent it.
        raw: &'a str,
        /// What it was read from, as a JSON object (`time_zone`, `tool`, `arguments`,
        /// `value_path`), for audit; `None` where that is not known.
        source: Option<&'a str>,
    },
    /// The value was dropped: an attempt `dropped` logged; a job failed for good.
    Dropped {
        /// Why.
        reason: &'a str,
        /// The raw value found, when there was one.
        raw: Option<&'a str>,
    },
    /// A permanent failure: an attempt `failed` logged; a job failed for good.
    Failed {
        /// Why.
        reason: &'a str,
    },
    /// A transient failure: an attempt `retry` logged; a job is pending again from
    /// `not_before`, or, with `None` (the next try would be past the deadline), failed.
    Retry {
        /// Why.
        reason: &'a str,
        /// When the site asked to be tried again (`Retry-After`).
        retry_at: Option<i64>,
        /// When a job may be leased again (`None` outside jobs).
        not_before: Option<i64>,
    },
    /// Nothing to log (the site left the vault, or the period ran out before the job was
    /// tried): a job failed.
    Abandoned,
}

impl CollectionResult<'_> {
    /// The value to store, when there is one.
    pub fn value(&self) -> Option<(f64, &str)> {
        match self {
            CollectionResult::Stored { value, raw, .. } => Some((*value, raw)),
            _ => None,
        }
    }

    /// What a stored value was read from (see [`CollectionResult::Stored`]).
    pub fn source(&self) -> Option<&str> {
        match self {
            CollectionResult::Stored { source, .. } => *source,
            _ => None,
        }
    }

    /// The outcome of the attempt this result logs (`None`: an abandoned job logs nothing).
    pub fn outcome(&self) -> Option<AttemptOutcome> {
        self.attempt().map(|attempt| attempt.outcome)
    }

    /// The attempt this result logs: its outcome, reason, raw value and `Retry-After`
    /// (`None`: an abandoned job logs nothing).
    pub(crate) fn attempt(&self) -> Option<Attempted<'_>> {
        let (outcome, reason, raw, retry_at) = match self {
            CollectionResult::Stored { raw, .. } => (AttemptOutcome::Stored, None, Some(*raw), None),
            CollectionResult::Dropped { reason, raw } => (AttemptOutcome::Dropped, Some(*reason), *raw, None),
            CollectionResult::Failed { reason } => (AttemptOutcome::Failed, Some(*reason), None, None),
            CollectionResult::Retry { reason, retry_at, .. } => (AttemptOutcome::Retry, Some(*reason), None, *retry_at),
            CollectionResult::Abandoned => return None,
        };
        Some(Attempted { outcome, reason, raw, retry_at })
    }
}

/// The attempt a collection result logs: the row the writes of both stores insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attempted<'a> {
    /// How it ended.
    pub(crate) outcome: AttemptOutcome,
    /// Why, unless stored.
    pub(crate) reason: Option<&'a str>,
    /// The raw value found, when there was one.
    pub(crate) raw: Option<&'a str>,
    /// When the site asked to be tried again.
    pub(crate) retry_at: Option<i64>,
}

/// Where a collected value belongs: user, site, metric and period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot<'a> {
    /// The user.
    pub user_id: i64,
    /// The site.
    pub site_id: i64,
    /// The metric's key.
    pub metric_key: &'a str,
    /// `hour`, `day`, `week` or `month`.
    pub granularity: &'a str,
    /// The period's first instant (seconds since the Unix epoch).
    pub period_start: i64,
    /// The period's end (exclusive).
    pub period_end: i64,
    /// The period's first local date.
    pub start_date: &'a str,
    /// The period's key, its local start as collected (`servio_manifest::period::Period::key`):
    /// the slot holds one value per key, so the same local period collected under another zone
    /// replaces the value (interpretation §8).
    pub period_key: &'a str,
}

impl Slot<'_> {
    /// The key an hour value collected before keys existed has (migration 0014): its start
    /// date and first instant, `2026-11-01@1793512800`. Its zone was not recorded, so its
    /// clock hour is unknown; a new value of the hour starting at that instant replaces it.
    pub(crate) fn legacy_key(&self) -> String {
        format!("{}@{}", self.start_date, self.period_start)
    }
}

/// The period of a stored value or a queued job, as its row holds it: what a [`Slot`] borrows
/// of a period, owned.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredPeriod {
    /// `hour`, `day`, `week` or `month`.
    pub granularity: String,
    /// The period's first instant (seconds since the Unix epoch).
    #[sqlx(rename = "period_start")]
    pub start: i64,
    /// The period's end (exclusive).
    #[sqlx(rename = "period_end")]
    pub end: i64,
    /// The period's first local date.
    pub start_date: String,
    /// The period's key (see [`Slot::period_key`]).
    #[sqlx(rename = "period_key")]
    pub key: String,
}

/// A stored value.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredValue {
    /// The metric.
    pub metric_key: String,
    /// Its period.
    #[sqlx(flatten)]
    pub period: StoredPeriod,
    /// The number.
    pub value: f64,
    /// The value as the site sent it.
    pub raw: String,
    /// When it was collected.
    pub collected_at: i64,
    /// What it was read from, a JSON object (see [`CollectionResult::Stored`]); `None` for
    /// values collected before it was recorded.
    pub source: Option<String>,
}

/// A period's number, as a chart or a total reads it ([`Collection::numbers_in`]): no raw
/// text, source or instants beyond the start, about a third of a [`StoredValue`] in memory
/// (a dashboard of a year of fifty metrics holds 20,000 of them).
#[derive(Debug, Clone, PartialEq)]
pub struct PeriodNumber {
    /// The period's first instant.
    pub start: i64,
    /// The period's first local date.
    pub start_date: String,
    /// The period's key, when it is not its start date (hours).
    pub key: Option<String>,
    /// The number.
    pub value: f64,
}

impl PeriodNumber {
    /// The period's key (see [`Slot::period_key`]).
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or(&self.start_date)
    }

    /// The number of a stored value.
    pub fn of(value: &StoredValue) -> PeriodNumber {
        let period = &value.period;
        let key = (period.key != period.start_date).then(|| period.key.clone());
        PeriodNumber { start: period.start, start_date: period.start_date.clone(), key, value: value.value }
    }
}

/// The numbers of one metric of one of a user's sites, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteNumbers {
    /// The site.
    pub site_id: i64,
    /// The metric.
    pub metric_key: String,
    /// Its numbers, oldest first.
    pub numbers: Vec<PeriodNumber>,
}

/// A stored value of one of a user's sites, as [`Collection::values_in`] reads them.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SiteValue {
    /// The site.
    pub site_id: i64,
    /// The value.
    #[sqlx(flatten)]
    pub value: StoredValue,
}

/// A period without a value of one of a user's sites' metrics, as
/// [`Collection::unfilled_in`] reads them.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SiteUnfilled {
    /// The site.
    pub site_id: i64,
    /// The metric.
    pub metric_key: String,
    /// The period and its latest attempt.
    #[sqlx(flatten)]
    pub period: UnfilledPeriod,
}

/// One collection attempt, kept whatever happened.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Attempt {
    /// The metric.
    pub metric_key: String,
    /// The period's first local date.
    pub start_date: String,
    /// When.
    pub attempted_at: i64,
    /// How it ended.
    #[sqlx(try_from = "String")]
    pub outcome: AttemptOutcome,
    /// Why, when not stored.
    pub reason: Option<String>,
    /// The raw value found, when there was one.
    pub raw: Option<String>,
    /// When a transient failure is tried again (Unix seconds), if it is.
    pub retry_at: Option<i64>,
}

/// The most periods [`Collection::unfilled_periods`] returns: a range's worth for any granularity
/// (400 days of hours is 9,600).
pub const UNFILLED_LIMIT: i64 = 10_000;

/// A period of a metric with no value, and the latest attempt at it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UnfilledPeriod {
    /// The period's first instant.
    pub period_start: i64,
    /// The period's first local date.
    pub start_date: String,
    /// The period's key (`None` for attempts logged before keys).
    pub period_key: Option<String>,
    /// When the latest attempt was made.
    pub attempted_at: i64,
    /// How it ended: dropped, failed or retry.
    #[sqlx(try_from = "String")]
    pub outcome: AttemptOutcome,
    /// Why.
    pub reason: Option<String>,
    /// When a transient failure is tried again, if it is.
    pub retry_at: Option<i64>,
}

/// The transient failures of one slot so far, for backoff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retries {
    /// How many attempts failed transiently.
    pub failures: i64,
    /// When the latest of them was.
    pub last_at: Option<i64>,
    /// The latest time a site asked to be tried again at (`Retry-After`).
    pub retry_at: Option<i64>,
}

/// A vault entry with its user: the user's columns are renamed where they meet the site's.
#[derive(sqlx::FromRow)]
struct EntryOfUser {
    user_id: i64,
    email: String,
    password_hash: String,
    time_zone: String,
    user_created: i64,
    #[sqlx(flatten)]
    entry: VaultEntry,
}

impl EntryOfUser {
    fn into_pair(self) -> (User, VaultEntry) {
        let EntryOfUser { user_id, email, password_hash, time_zone, user_created, entry } = self;
        (User { id: user_id, email, password_hash, time_zone, created_at: user_created }, entry)
    }
}

/// The most (user, site) pairs [`Collection::entries_of`] asks for in one query: twice as many
/// bound ids at most, well within both backends' limits.
const ENTRIES_AT_ONCE: usize = 1_000;

/// The distinct user ids and site ids of `pairs`.
fn distinct_ids(pairs: &[(i64, i64)]) -> (Vec<i64>, Vec<i64>) {
    let mut users: Vec<i64> = pairs.iter().map(|(user, _)| *user).collect();
    let mut sites: Vec<i64> = pairs.iter().map(|(_, site)| *site).collect();
    for ids in [&mut users, &mut sites] {
        ids.sort_unstable();
        ids.dedup();
    }
    (users, sites)
}

/// Stores one value, replacing the value of its period key (the same local period, whatever
/// zone it was collected in: its instants become the new ones).
/// Binds: user, site, metric key, granularity, period start, period end, start date, value,
/// raw, collected at, period key, source.
const STORE_VALUE: &str = concat!(
    "INSERT INTO metric_values ",
    value_columns!(),
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ",
    replace_value!()
);

/// The columns a value is written with, in the order [`STORE_VALUE`] binds them.
macro_rules! value_columns {
    () => {
        "(user_id, site_id, metric_key, granularity, period_start, period_end, start_date, value, raw, collected_at,
          period_key, source)"
    };
}
pub(crate) use value_columns;

/// What a new value of a slot does to the one stored under its period key: replaces every
/// column but the slot's. The one text of the value upsert: the single write ([`STORE_VALUE`])
/// and PostgreSQL's batched job completion both end with it.
macro_rules! replace_value {
    () => {
        "ON CONFLICT (user_id, site_id, metric_key, period_key) DO UPDATE SET
             value = excluded.value, raw = excluded.raw, collected_at = excluded.collected_at,
             granularity = excluded.granularity, period_start = excluded.period_start,
             period_end = excluded.period_end, start_date = excluded.start_date, source = excluded.source"
    };
}
pub(crate) use replace_value;

/// Deletes an hour value of a slot stored before period keys (see `Slot::legacy_key`), which a
/// new value of that hour replaces. Binds: user, site, metric key, legacy key.
const DELETE_LEGACY_VALUE: &str =
    "DELETE FROM metric_values WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND period_key = $4";

/// Logs one attempt. Binds: user, site, metric key, period start, start date, attempted at,
/// outcome, reason, raw, retry at, duration, period key.
const LOG_ATTEMPT: &str = "INSERT INTO collection_attempts
         (user_id, site_id, metric_key, period_start, start_date, attempted_at, outcome, reason, raw, retry_at,
          duration_ms, period_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

/// Whether an attempt row is one of the slot's: by its period key, or, logged before keys, by
/// the period's instant. Binds: period key as `$4`, period start as `$5`.
macro_rules! attempt_of_slot {
    () => {
        "(period_key = $4 OR (period_key IS NULL AND period_start = $5))"
    };
}

/// Whether an attempt row is of a user who has collected from the site (`$1`) on at least
/// `$4` distinct days: accounts made to make up a health figure's threshold count only once
/// they have collected that long (a backfill's many attempts are all of one day).
macro_rules! established_users {
    () => {
        "user_id IN (SELECT user_id FROM collection_attempts WHERE site_id = $1
                     GROUP BY user_id HAVING count(DISTINCT attempted_at / 86400) >= $4)"
    };
}

/// A site's attempts by metric and outcome, of established users. Binds: site, since, the
/// fewest users a figure stands on, and the days that make a user established.
const HEALTH_OUTCOMES: &str = concat!(
    "SELECT metric_key, outcome, count(*) AS attempts, count(DISTINCT user_id) AS users
     FROM collection_attempts WHERE site_id = $1 AND attempted_at >= $2 AND ",
    established_users!(),
    " GROUP BY metric_key, outcome HAVING count(DISTINCT user_id) >= $3 ORDER BY metric_key, outcome"
);

/// A site's most frequent reasons for no value, as [`HEALTH_OUTCOMES`] counts them. Binds: the same.
const HEALTH_REASONS: &str = concat!(
    "SELECT metric_key, reason, count(*) AS attempts, count(DISTINCT user_id) AS users
     FROM collection_attempts WHERE site_id = $1 AND attempted_at >= $2 AND reason IS NOT NULL AND ",
    established_users!(),
    " GROUP BY metric_key, reason HAVING count(DISTINCT user_id) >= $3
     ORDER BY metric_key, attempts DESC, reason LIMIT 200"
);

/// How long a site took to answer, by metric: nearest-rank percentiles with window functions,
/// which both backends have (the smallest duration whose rank reaches the share of the calls).
/// Binds: as [`HEALTH_OUTCOMES`].
const HEALTH_LATENCIES: &str = concat!(
    "WITH timed AS (
         SELECT metric_key, user_id, duration_ms,
                row_number() OVER (PARTITION BY metric_key ORDER BY duration_ms) AS rank,
                count(*) OVER (PARTITION BY metric_key) AS calls
         FROM collection_attempts
         WHERE site_id = $1 AND attempted_at >= $2 AND duration_ms IS NOT NULL AND ",
    established_users!(),
    "
     )
     SELECT metric_key, max(calls) AS calls, count(DISTINCT user_id) AS users,
            min(CASE WHEN rank >= 0.5 * calls THEN duration_ms END) AS p50_ms,
            min(CASE WHEN rank >= 0.95 * calls THEN duration_ms END) AS p95_ms
     FROM timed GROUP BY metric_key HAVING count(DISTINCT user_id) >= $3 ORDER BY metric_key"
);

/// Every vault entry with its user's and its site's columns, as [`EntryOfUser`] reads them.
macro_rules! entries_of_users {
    () => {
        concat!(
            "SELECT u.id AS user_id, u.email, u.password_hash, u.time_zone, u.created_at AS user_created, ",
            vault_entry_columns!(),
            " FROM vault v JOIN users u ON u.id = v.user_id JOIN sites s ON s.id = v.site_id"
        )
    };
}

/// Stores one value of `slot` on the caller's transaction, replacing the one of its period key
/// (and, for an hour, one stored before keys at the same instant).
async fn store_value_on(
    conn: Conn<'_>,
    slot: &Slot<'_>,
    (value, raw, source): (f64, &str, Option<&str>),
    now: i64,
) -> Result<()> {
    let (raw, source) = (storable(raw), storable_opt(source));
    on!(conn, |conn| {
        if slot.granularity == "hour" {
            bind!(sqlx::query(DELETE_LEGACY_VALUE), slot.user_id, slot.site_id, slot.metric_key, slot.legacy_key())
                .execute(&mut *conn)
                .await?;
        }
        bind!(
            sqlx::query(STORE_VALUE),
            slot.user_id,
            slot.site_id,
            slot.metric_key,
            slot.granularity,
            slot.period_start,
            slot.period_end,
            slot.start_date,
            value,
            &*raw,
            now,
            slot.period_key,
            source.as_deref()
        )
        .execute(&mut *conn)
        .await?;
        Ok(())
    })
}

/// The one write of a collection result, on the caller's transaction: its value when there is
/// one, its attempt unless abandoned. Backfills and (on SQLite) fenced job completions both
/// come through here.
pub(crate) async fn write_result_on(
    conn: Conn<'_>,
    slot: &Slot<'_>,
    result: &CollectionResult<'_>,
    duration_ms: Option<f64>,
    now: i64,
) -> Result<()> {
    on!(conn, |conn| {
        if let Some((value, raw)) = result.value() {
            store_value_on((&mut *conn).into(), slot, (value, raw, result.source()), now).await?;
        }
        let Some(attempt) = result.attempt() else { return Ok(()) };
        let (reason, raw) = (storable_opt(attempt.reason), storable_opt(attempt.raw));
        bind!(
            sqlx::query(LOG_ATTEMPT),
            slot.user_id,
            slot.site_id,
            slot.metric_key,
            slot.period_start,
            slot.start_date,
            now,
            attempt.outcome.as_str(),
            reason.as_deref(),
            raw.as_deref(),
            attempt.retry_at,
            duration_ms,
            slot.period_key
        )
        .execute(&mut *conn)
        .await?;
        Ok(())
    })
}

/// What collection wrote: values, attempts, and what the collector reads of vaults.
#[async_trait]
pub trait Collection: Send + Sync {
    /// Writes what one collection of `slot` made at `now` came to, in one transaction: its
    /// value when there is one (replacing an earlier value of the slot; the attempt log keeps
    /// both) and its attempt (none for [`CollectionResult::Abandoned`]), without a job (tests and
    /// imports); collection writes through [`Jobs::complete_jobs`](crate::Jobs::complete_jobs), which writes the same
    /// under the job's fence.
    /// A value tells [`Change::Values`].
    async fn record_result(&self, slot: &Slot<'_>, result: &CollectionResult<'_>, now: i64) -> Result<()>;
    /// The transient failures of a slot (its period key) so far.
    async fn retries(&self, slot: &Slot<'_>) -> Result<Retries>;
    /// A user's values of one metric of one site whose period starts within `starts` (Unix
    /// seconds), oldest first.
    async fn values(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<StoredValue>>;
    /// How collections from `site_id` ended since `since`, across its users (see the `health`
    /// module): only the figures at least `min_users` distinct users stand behind, counting
    /// only users who have collected from the site on at least `min_days` distinct days,
    /// rounded (`COUNT_STEP`, `DURATION_STEP_MS`).
    async fn site_health(&self, site_id: i64, since: i64, min_users: i64, min_days: i64) -> Result<SiteHealth>;
    /// The latest attempts for a user's site, newest first.
    async fn attempts(&self, user_id: i64, site_id: i64, limit: i64) -> Result<Vec<Attempt>>;
    /// The periods of one metric starting within `starts` that have no value, each with its
    /// latest attempt (why it has none), oldest period first; at most [`UNFILLED_LIMIT`].
    async fn unfilled_periods(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<UnfilledPeriod>>;
    /// A user's values of the metrics `keys` of the sites `sites` (every combination; the
    /// caller keeps those it wants) whose period starts within `starts`, ordered by site, key
    /// and start: the dashboard's metric views, read in one query that seeks each combination.
    async fn values_in(
        &self,
        user_id: i64,
        sites: &[i64],
        keys: &[&str],
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<SiteValue>>;
    /// [`Collection::values_in`] with only what a chart or a total needs of each value
    /// ([`PeriodNumber`]), a [`SiteNumbers`] a metric that has any, ordered by site and key,
    /// for metrics whose periods are keyed as `keyed` says. On SQLite each metric's come packed
    /// in one text (sqlx hands each row of SQLite over as a channel message with a copy of
    /// every column: 4,700 rows were most of a dashboard's render), read from an index alone
    /// for periods keyed by their date.
    async fn numbers_in(
        &self,
        user_id: i64,
        (sites, keys): (&[i64], &[&str]),
        starts: std::ops::Range<i64>,
        keyed: PeriodKeys,
    ) -> Result<Vec<SiteNumbers>>;
    /// The whole stored values of a user at `at` (site, metric key, period start), those that
    /// exist, in no order: the few a surface shows with their source after reading numbers.
    async fn values_at(&self, user_id: i64, at: &[(i64, &str, i64)]) -> Result<Vec<SiteValue>>;
    /// [`Collection::unfilled_periods`] of the metrics `keys` of the sites `sites` at once,
    /// ordered by site, key and start; at most [`UNFILLED_LIMIT`] a combination asked for.
    async fn unfilled_in(
        &self,
        user_id: i64,
        sites: &[i64],
        keys: &[&str],
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<SiteUnfilled>>;
    /// Every vault entry of every user, as (user, entry), for the collector.
    async fn all_vault_entries(&self) -> Result<Vec<(User, VaultEntry)>>;
    /// The vault entries of `pairs` (user id, site id) with their users, in one query for up
    /// to a thousand pairs: a worker loads those of a leased batch at once. A pair no longer
    /// in a vault (or whose user is gone) is left out; the order is the database's.
    async fn entries_of(&self, pairs: &[(i64, i64)]) -> Result<Vec<(User, VaultEntry)>>;
    /// Whether a slot needs no more work: a value is stored for its period key, or an attempt
    /// for that key ended for good (`dropped` or `failed`; transient failures are logged as
    /// `retry` and do not count). The same local period under another zone is the same slot.
    async fn slot_settled(&self, slot: &Slot<'_>) -> Result<bool>;
    /// Whether the slot has a value (under its key, or the key it had before period keys): what
    /// a period the user asks for again is looked at for, whatever its earlier failures.
    async fn slot_has_value(&self, slot: &Slot<'_>) -> Result<bool>;
    /// Stores many values in one transaction, each replacing an earlier one of its slot as
    /// [`Collection::record_result`] does, and logs no attempts: for seeding (benchmarks, imports),
    /// where one durable commit per value would take minutes.
    /// Tells [`Change::Values`] of each user.
    async fn store_values(&self, values: &[(Slot<'_>, f64, &str)], now: i64) -> Result<()>;
}

/// `$query` (of [`Asked::sql`]) with the values `$asked` names bound in the order of its marks.
macro_rules! bind_asked {
    ($query:expr, $asked:expr) => {{
        let asked = $asked;
        let mut query = $query.bind(asked.user_id).bind(asked.starts.start).bind(asked.starts.end);
        for site in asked.sites {
            query = query.bind(*site);
        }
        for key in asked.keys {
            query = query.bind(*key);
        }
        query
    }};
}

/// [`Collection::values_in`]'s or [`Collection::numbers_in`]'s rows of `columns` meeting
/// `condition`, on whichever backend `pool` is. Only `$N` marks are formatted into the query;
/// every value is bound.
macro_rules! fetch_asked {
    ($pool:expr, $asked:expr, $columns:expr, $condition:expr) => {{
        let asked = $asked;
        let sql = asked.sql($columns, $condition);
        bind_asked!(sqlx::query_as::<_, SiteValue>(sqlx::AssertSqlSafe(sql)), asked).fetch_all($pool).await
    }};
}

#[async_trait]
impl Collection for Database {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn record_result(&self, slot: &Slot<'_>, write: &CollectionResult<'_>, now: i64) -> Result<()> {
        let result: Result<()> = on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            write_result_on((&mut *tx).into(), slot, write, None, now).await?;
            tx.commit().await?;
            Ok(())
        });
        result?;
        if write.value().is_some() {
            self.hooks.tell(&[Change::Values(slot.user_id)]);
        }
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn retries(&self, slot: &Slot<'_>) -> Result<Retries> {
        let sql = concat!(
            "SELECT count(*), max(attempted_at), max(retry_at) FROM collection_attempts
             WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND outcome = 'retry' AND ",
            attempt_of_slot!()
        );
        let (failures, last_at, retry_at) = fetch!(
            &self.pool,
            fetch_one(sql, slot.user_id, slot.site_id, slot.metric_key, slot.period_key, slot.period_start)
        )?;
        Ok(Retries { failures, last_at, retry_at })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn values(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<StoredValue>> {
        // The query of many metrics, for one: written once.
        let found = self.values_in(user_id, &[site_id], &[metric_key], starts).await?;
        Ok(found.into_iter().map(|one| one.value).collect())
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn site_health(&self, site_id: i64, since: i64, min_users: i64, min_days: i64) -> Result<SiteHealth> {
        let outcomes = fetch!(&self.pool, fetch_all(HEALTH_OUTCOMES, site_id, since, min_users, min_days))?;
        let reasons = fetch!(&self.pool, fetch_all(HEALTH_REASONS, site_id, since, min_users, min_days))?;
        let latencies = fetch!(&self.pool, fetch_all(HEALTH_LATENCIES, site_id, since, min_users, min_days))?;
        Ok(SiteHealth { outcomes, reasons, latencies }.coarsened())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn attempts(&self, user_id: i64, site_id: i64, limit: i64) -> Result<Vec<Attempt>> {
        let sql = "SELECT metric_key, start_date, attempted_at, outcome, reason, raw, retry_at FROM collection_attempts
                   WHERE user_id = $1 AND site_id = $2 ORDER BY id DESC LIMIT $3";
        fetch!(&self.pool, fetch_all(sql, user_id, site_id, limit))
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn unfilled_periods(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<UnfilledPeriod>> {
        // The query of many metrics, for one: written once.
        let found = self.unfilled_in(user_id, &[site_id], &[metric_key], starts).await?;
        Ok(found.into_iter().map(|one| one.period).collect())
    }

    #[tracing::instrument(level = "debug", skip_all, fields(sites = sites.len(), keys = keys.len()))]
    async fn values_in(
        &self,
        user_id: i64,
        sites: &[i64],
        keys: &[&str],
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<SiteValue>> {
        if sites.is_empty() || keys.is_empty() {
            return Ok(Vec::new());
        }
        let asked = Asked { user_id, sites, keys, starts };
        on!(&self.pool, |pool| Ok(fetch_asked!(pool, &asked, WHOLE_COLUMNS, "TRUE")?))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(?keyed))]
    async fn numbers_in(
        &self,
        user_id: i64,
        (sites, keys): (&[i64], &[&str]),
        starts: std::ops::Range<i64>,
        keyed: PeriodKeys,
    ) -> Result<Vec<SiteNumbers>> {
        if sites.is_empty() || keys.is_empty() {
            return Ok(Vec::new());
        }
        let asked = Asked { user_id, sites, keys, starts };
        let mut found = match &self.pool {
            Backend::Sqlite(pool) => match keyed {
                PeriodKeys::Dates => numbers_by_date(pool, &asked).await?,
                PeriodKeys::Stored => packed_numbers(pool, &asked).await?,
            },
            Backend::Postgres(pool) => with_rows(Vec::new(), fetch_asked!(pool, &asked, NUMBER_COLUMNS, "TRUE")?),
        };
        // Aggregates keep no order of their own.
        found.sort_by(|a, b| (a.site_id, &a.metric_key).cmp(&(b.site_id, &b.metric_key)));
        for metric in &mut found {
            metric.numbers.sort_by_key(|number| number.start);
        }
        Ok(found)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(at = at.len()))]
    async fn values_at(&self, user_id: i64, at: &[(i64, &str, i64)]) -> Result<Vec<SiteValue>> {
        if at.is_empty() {
            return Ok(Vec::new());
        }
        // The rows asked for as one JSON array bound once, each sought by the index: one
        // statement whatever their number (a chain of ORs was a new statement, parsed again, for
        // every count).
        let wanted =
            serde_json::to_string(at).map_err(|e| crate::StoreError::Corrupt(format!("rows asked for: {e}")))?;
        let columns =
            WHOLE_COLUMNS.split(", ").map(|column| format!("m.{}", column.trim())).collect::<Vec<_>>().join(", ");
        let sql = match &self.pool {
            // CROSS JOIN keeps the array outside: each of its rows seeks one value.
            Backend::Sqlite(_) => format!(
                "SELECT {columns} FROM json_each($2) w CROSS JOIN metric_values m
                 WHERE m.user_id = $1 AND m.site_id = w.value ->> 0 AND m.metric_key = w.value ->> 1
                   AND m.period_start = w.value ->> 2"
            ),
            Backend::Postgres(_) => format!(
                "SELECT {columns} FROM json_array_elements($2::json) w CROSS JOIN metric_values m
                 WHERE m.user_id = $1 AND m.site_id = (w ->> 0)::bigint AND m.metric_key = w ->> 1
                   AND m.period_start = (w ->> 2)::bigint"
            ),
        };
        // Only the column list is formatted in; every value is bound.
        on!(&self.pool, |pool| Ok(sqlx::query_as::<_, SiteValue>(sqlx::AssertSqlSafe(sql))
            .bind(user_id)
            .bind(wanted.as_str())
            .fetch_all(pool)
            .await?))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(sites = sites.len(), keys = keys.len()))]
    async fn unfilled_in(
        &self,
        user_id: i64,
        sites: &[i64],
        keys: &[&str],
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<SiteUnfilled>> {
        if sites.is_empty() || keys.is_empty() {
            return Ok(Vec::new());
        }
        // As `unfilled_periods`, each (site, metric, period)'s latest attempt.
        let sql = format!(
            "SELECT site_id, metric_key, period_start, start_date, period_key, attempted_at, outcome, reason, retry_at
             FROM (
                 SELECT a.*, row_number() OVER (PARTITION BY a.site_id, a.metric_key,
                                                             COALESCE(a.period_key, a.start_date || '@' || a.period_start)
                                                ORDER BY a.id DESC) AS newest
                 FROM collection_attempts a
                 WHERE a.user_id = $1 AND a.site_id IN ({}) AND a.metric_key IN ({}) AND a.period_start >= $2
                   AND a.period_start < $3
             ) latest
             WHERE newest = 1 AND outcome <> 'stored' AND NOT EXISTS (
                 SELECT 1 FROM metric_values v
                 WHERE v.user_id = $1 AND v.site_id = latest.site_id AND v.metric_key = latest.metric_key
                   AND (v.period_key = latest.period_key
                        OR (latest.period_key IS NULL AND v.period_start = latest.period_start))
             )
             ORDER BY site_id, metric_key, period_start LIMIT $4",
            marks(5, sites.len()),
            marks(5 + sites.len(), keys.len())
        );
        let combinations = i64::try_from(sites.len() * keys.len()).unwrap_or(i64::MAX);
        let limit = crate::UNFILLED_LIMIT.saturating_mul(combinations);
        on!(&self.pool, |pool| {
            // Only `$N` marks are formatted in; every value is bound.
            let mut query = sqlx::query_as::<_, SiteUnfilled>(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .bind(starts.start)
                .bind(starts.end)
                .bind(limit);
            for site in sites {
                query = query.bind(*site);
            }
            for key in keys {
                query = query.bind(*key);
            }
            Ok(query.fetch_all(pool).await?)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn all_vault_entries(&self) -> Result<Vec<(User, VaultEntry)>> {
        on!(&self.pool, |pool| {
            let sql = concat!(entries_of_users!(), " ORDER BY u.id, s.id");
            let rows: Vec<EntryOfUser> = sqlx::query_as(sql).fetch_all(pool).await?;
            Ok(rows.into_iter().map(EntryOfUser::into_pair).collect())
        })
    }

    #[tracing::instrument(level = "debug", skip_all, fields(pairs = pairs.len()))]
    async fn entries_of(&self, pairs: &[(i64, i64)]) -> Result<Vec<(User, VaultEntry)>> {
        on!(&self.pool, |pool| {
            let mut found = Vec::new();
            for chunk in pairs.chunks(ENTRIES_AT_ONCE) {
                let asked: std::collections::HashSet<&(i64, i64)> = chunk.iter().collect();
                let (users, sites) = distinct_ids(chunk);
                // Numbered marks, which both backends read: the users' ids, then the sites'.
                let marks =
                    |from: usize, n: usize| (from..from + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
                let sql = format!(
                    "{} WHERE v.user_id IN ({}) AND v.site_id IN ({})",
                    entries_of_users!(),
                    marks(1, users.len()),
                    marks(users.len() + 1, sites.len())
                );
                // Only marks are formatted in; every value is bound.
                let mut query = sqlx::query_as::<_, EntryOfUser>(sqlx::AssertSqlSafe(sql));
                for id in users.iter().chain(&sites) {
                    query = query.bind(*id);
                }
                let rows = query.fetch_all(pool).await?;
                // The lists match every user with every site: keep the pairs asked for.
                found.extend(
                    rows.into_iter()
                        .map(EntryOfUser::into_pair)
                        .filter(|(user, entry)| asked.contains(&(user.id, entry.site.id))),
                );
            }
            Ok(found)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn slot_settled(&self, slot: &Slot<'_>) -> Result<bool> {
        on!(&self.pool, |pool| {
            let settled: i64 = bind!(
                sqlx::query_scalar(concat!(
                    "SELECT (SELECT count(*) FROM metric_values
                             WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND period_key IN ($4, $6))
                          + (SELECT count(*) FROM collection_attempts
                             WHERE user_id = $1 AND site_id = $2 AND metric_key = $3
                               AND (outcome = 'dropped' OR outcome = 'failed') AND ",
                    attempt_of_slot!(),
                    ")"
                )),
                slot.user_id,
                slot.site_id,
                slot.metric_key,
                slot.period_key,
                slot.period_start,
                slot.legacy_key()
            )
            .fetch_one(pool)
            .await?;
            Ok(settled > 0)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn slot_has_value(&self, slot: &Slot<'_>) -> Result<bool> {
        let sql = "SELECT count(*) FROM metric_values
                   WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND period_key IN ($4, $5)";
        let (found,): (i64,) = fetch!(
            &self.pool,
            fetch_one(sql, slot.user_id, slot.site_id, slot.metric_key, slot.period_key, slot.legacy_key())
        )?;
        Ok(found > 0)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(values = values.len()))]
    async fn store_values(&self, values: &[(Slot<'_>, f64, &str)], now: i64) -> Result<()> {
        let result: Result<()> = on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            for (slot, value, raw) in values {
                store_value_on((&mut *tx).into(), slot, (*value, raw, None), now).await?;
            }
            tx.commit().await?;
            Ok(())
        });
        result?;
        self.hooks.tell_each(Change::Values, values.iter().map(|(slot, _, _)| slot.user_id));
        Ok(())
    }
}

/// `n` numbered marks from `$from`, comma-separated: an `IN` list both backends read.
/// Every column of a stored value, with its site.
const WHOLE_COLUMNS: &str = "site_id, metric_key, granularity, period_start, period_end, start_date, period_key, value, \
                             raw, collected_at, source";
/// A stored value's columns with its number and period only (see [`Collection::numbers_in`]).
const NUMBER_COLUMNS: &str = "site_id, metric_key, '' AS granularity, period_start, CAST(0 AS BIGINT) AS period_end, \
                              start_date, period_key, value, '' AS raw, CAST(0 AS BIGINT) AS collected_at, NULL AS source";

/// How the periods of the metrics [`Collection::numbers_in`] reads are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodKeys {
    /// By their start date: days, weeks and months (`Period::key`, and migration 0014 for
    /// values stored before keys), read on SQLite from the index `metric_values_as_sent`
    /// alone.
    Dates,
    /// As stored: hours, keyed by their local hour (or, stored before keys, date and start).
    Stored,
}

/// A value as the SQLite index `metric_values_as_sent` holds it (NULL when the value is not a
/// whole number of millionths): period start, start date and the count of millionths,
/// space-separated. Migration 0020, which made the index, repeats this very text: SQLite reads
/// an indexed expression from the index only where a query spells the same expression (held by
/// `numbers_by_date_read_the_index_alone`).
const VALUE_AS_SENT: &str = "CASE WHEN CAST(round(value * 1000000.0) AS INTEGER) / 1000000.0 = value \
    THEN period_start || ' ' || start_date || ' ' || CAST(round(value * 1000000.0) AS INTEGER) END";

/// The query of [`numbers_by_date`]: a row per metric, (site, key, values), its values
/// `VALUE_AS_SENT` comma-separated, or "start - -" for a value that is not whole millionths
/// (read again as a row: naming any column the index lacks here would read every row). A text
/// a metric, not one for them all: SQLite builds it with the C allocator, whose arenas kept
/// megabytes a render (the abuse suite's dashboards of 400 days grew the process 12 MiB more).
fn numbers_by_date_sql(asked: &Asked<'_>) -> String {
    format!(
        "SELECT site_id, metric_key, group_concat(coalesce({VALUE_AS_SENT}, period_start || ' - -'), ',')
         FROM metric_values WHERE {} GROUP BY site_id, metric_key",
        asked.filter()
    )
}

/// [`Collection::numbers_in`] on SQLite of periods keyed by their date, from the index alone;
/// the values that are not whole millionths read again as rows (those alone).
async fn numbers_by_date(pool: &sqlx::SqlitePool, asked: &Asked<'_>) -> Result<Vec<SiteNumbers>> {
    let sql = numbers_by_date_sql(asked);
    let metrics: Vec<(i64, String, String)> =
        bind_asked!(sqlx::query_as(sqlx::AssertSqlSafe(sql)), asked).fetch_all(pool).await?;
    let corrupt = |one: &str| crate::StoreError::Corrupt(format!("packed value {one:?}"));
    let mut inexact = false;
    let mut found = Vec::with_capacity(metrics.len());
    for (site_id, metric_key, sent) in metrics {
        let mut numbers = Vec::with_capacity(sent.len() / 24);
        for one in sent.split(',') {
            let mut parts = one.splitn(3, ' ');
            let (Some(start), Some(start_date), Some(number)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(corrupt(one));
            };
            if number == "-" {
                inexact = true;
                continue;
            }
            let start: i64 = start.parse().map_err(|_| corrupt(one))?;
            let millionths: i64 = number.parse().map_err(|_| corrupt(one))?;
            // The same division SQLite checked.
            let value = millionths as f64 / 1_000_000.0;
            numbers.push(PeriodNumber { start, start_date: start_date.to_owned(), key: None, value });
        }
        found.push(SiteNumbers { site_id, metric_key, numbers });
    }
    with_inexact(pool, asked, found, inexact).await
}

/// `found` with, when some were `inexact` (not whole millionths, left out of a packed text), the
/// numbers of those values read as rows, each added to its metric's.
async fn with_inexact(
    pool: &sqlx::SqlitePool,
    asked: &Asked<'_>,
    found: Vec<SiteNumbers>,
    inexact: bool,
) -> Result<Vec<SiteNumbers>> {
    if !inexact {
        return Ok(found);
    }
    Ok(with_rows(found, fetch_asked!(pool, asked, NUMBER_COLUMNS, &format!("({MILLIONTHS}) IS NULL"))?))
}

/// `found` with the numbers of `rows` added, each to its metric's.
fn with_rows(mut found: Vec<SiteNumbers>, rows: Vec<SiteValue>) -> Vec<SiteNumbers> {
    for row in rows {
        let number = PeriodNumber::of(&row.value);
        let same = |m: &&mut SiteNumbers| m.site_id == row.site_id && m.metric_key == row.value.metric_key;
        // Rows come ordered by metric: the last one is nearly always theirs.
        let metric = match found.last_mut().filter(same) {
            Some(last) => Some(last),
            None => found.iter_mut().find(same),
        };
        match metric {
            Some(metric) => metric.numbers.push(number),
            None => found.push(SiteNumbers {
                site_id: row.site_id,
                metric_key: row.value.metric_key,
                numbers: vec![number],
            }),
        }
    }
    found
}

/// A value that is a whole number of millionths (money, counts, most rates), as that count,
/// on SQLite; otherwise NULL. `count / 1000000.0` is the very double SQLite compared, and the
/// same division in Rust gives it again: exact, where SQLite's printing of a double is not
/// for every double (`printf('%!.17g')` and `quote` both miss some at the edges of the range).
const MILLIONTHS: &str = "CASE WHEN CAST(round(value * 1000000.0) AS INTEGER) / 1000000.0 = value \
                          THEN CAST(round(value * 1000000.0) AS INTEGER) END";

/// What [`Collection::values_in`] and [`Collection::numbers_in`] are asked: a user's values of
/// every combination of `sites` and `keys` whose period starts within `starts`.
struct Asked<'a> {
    user_id: i64,
    sites: &'a [i64],
    keys: &'a [&'a str],
    starts: std::ops::Range<i64>,
}

impl Asked<'_> {
    /// The query of `columns` of the values asked for that also meet `condition`, ordered by
    /// site, key and start; `$1` the user, `$2` and `$3` the starts, then the sites and keys.
    fn sql(&self, columns: &str, condition: &str) -> String {
        format!(
            "SELECT {columns} FROM metric_values WHERE {} AND {condition} ORDER BY site_id, metric_key, period_start",
            self.filter()
        )
    }

    /// The condition of the values asked for, with the marks [`Asked::sql`] says. Two IN lists
    /// over the index's first columns let each combination be sought.
    fn filter(&self) -> String {
        format!(
            "user_id = $1 AND site_id IN ({}) AND metric_key IN ({}) AND period_start >= $2 AND period_start < $3",
            marks(4, self.sites.len()),
            marks(4 + self.sites.len(), self.keys.len())
        )
    }
}

/// [`Collection::numbers_in`] on SQLite of periods keyed as stored: every row in one JSON text made by SQLite, each number
/// as its count of millionths; the rare numbers that are not whole millionths read again as
/// rows (those alone).
async fn packed_numbers(pool: &sqlx::SqlitePool, asked: &Asked<'_>) -> Result<Vec<SiteNumbers>> {
    // A JSON text a metric (see `numbers_by_date_sql`); an aggregate's JSON stays JSON only
    // when made inside it (a subquery's is text).
    let sql = format!(
        "SELECT site_id, metric_key, json_group_array(json_array(period_start, start_date, period_key, {MILLIONTHS}))
         FROM metric_values WHERE {} GROUP BY site_id, metric_key",
        asked.filter()
    );
    let metrics: Vec<(i64, String, String)> =
        bind_asked!(sqlx::query_as(sqlx::AssertSqlSafe(sql)), asked).fetch_all(pool).await?;
    let mut inexact = false;
    let mut found = Vec::with_capacity(metrics.len());
    for (site_id, metric_key, packed) in metrics {
        let rows: Vec<(i64, String, String, Option<i64>)> =
            serde_json::from_str(&packed).map_err(|e| crate::StoreError::Corrupt(format!("packed values: {e}")))?;
        let mut numbers = Vec::with_capacity(rows.len());
        for (start, start_date, key, millionths) in rows {
            inexact |= millionths.is_none();
            let Some(millionths) = millionths else { continue };
            let key = (key != start_date).then_some(key);
            // The same division SQLite checked (`MILLIONTHS`).
            numbers.push(PeriodNumber { start, start_date, key, value: millionths as f64 / 1_000_000.0 });
        }
        found.push(SiteNumbers { site_id, metric_key, numbers });
    }
    with_inexact(pool, asked, found, inexact).await
}

fn marks(from: usize, n: usize) -> String {
    (from..from + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::AttemptOutcome;

    /// The dashboard's numbers of days, weeks and months come from the index alone on SQLite
    /// (a value's row read as well made the read twice as long): the query spells the index's
    /// expression exactly as migration 0020 does.
    #[tokio::test]
    async fn numbers_by_date_read_the_index_alone() {
        let database = crate::Database::open_sqlite("sqlite::memory:").await.unwrap();
        let crate::database::Backend::Sqlite(pool) = &database.pool else { unreachable!("SQLite") };
        let asked = super::Asked { user_id: 1, sites: &[1, 2], keys: &["a", "b"], starts: 0..10 };
        let sql = format!("EXPLAIN QUERY PLAN {}", super::numbers_by_date_sql(&asked));
        let mut query = sqlx::query_as::<_, (i64, i64, i64, String)>(sqlx::AssertSqlSafe(sql)).bind(1_i64);
        query = query.bind(0_i64).bind(10_i64).bind(1_i64).bind(2_i64).bind("a").bind("b");
        let plan: Vec<String> = query.fetch_all(pool).await.unwrap().into_iter().map(|row| row.3).collect();
        assert!(plan.iter().any(|step| step.contains("COVERING INDEX metric_values_as_sent")), "{plan:?}");
    }

    #[test]
    fn outcomes_read_back_as_they_are_written() {
        for outcome in [AttemptOutcome::Stored, AttemptOutcome::Dropped, AttemptOutcome::Failed, AttemptOutcome::Retry]
        {
            assert_eq!(outcome.as_str().parse(), Ok(outcome));
        }
        assert!("Stored".parse::<AttemptOutcome>().is_err());
    }
}
