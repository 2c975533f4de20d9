//! Scheduled collections as jobs shared by many workers ([`Jobs`]).
//!
//! A job is one slot to collect. Planning enqueues it (idempotently: one job per slot); a
//! worker leases due jobs (an owner and an expiry), and every lease increments the job's fence and moves
//! the job's `not_before` to the lease's end (so that a job whose worker died is due again
//! then, and held jobs never stand in a lease's way). A
//! completion writes the value and the attempt in the same transaction as the job's new state,
//! and only while the fence it leased with is still the job's: a worker paused past its lease,
//! whose job another worker has leased since, writes nothing.
//!
//! Leases are fair: each takes every user's scheduled periods before any backfill, and the
//! users with due jobs in turns (each user's first job, then each one's second, and so on), so
//! one user's backlog never delays another user's due periods by more than a turn.

use async_trait::async_trait;

use crate::Result;
use crate::database::{Backend, Database};
use crate::{Change, CollectionResult, Slot, StoredPeriod, postgres, sqlite};

/// A slot to enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob<'a> {
    /// What to collect.
    pub slot: Slot<'a>,
    /// Not leased before this instant (when the period is due).
    pub not_before: i64,
    /// After this instant a transient failure ends the job as failed.
    pub deadline: i64,
    /// A scheduled period or a backfill's: leases take scheduled ones first.
    pub kind: JobKind,
}

/// Why a job exists, which decides its place in leases: every user's scheduled periods go
/// before any backfill, and within each, users take turns (see `Jobs::lease_jobs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A due period the scheduler planned (or collect-now, or a site just added).
    Scheduled,
    /// A past period a user asked to backfill.
    Backfill,
}

impl JobKind {
    /// The stored number: 0 for scheduled, 1 for backfill (leases order by it).
    pub fn as_i64(self) -> i64 {
        match self {
            JobKind::Scheduled => 0,
            JobKind::Backfill => 1,
        }
    }
}

/// What a worker asks for when it leases jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLease<'a> {
    /// Who leases (a worker id), recorded as the lease owner.
    pub owner: &'a str,
    /// The lease's clock: jobs due at or before it, whose lease (if any) has expired by then.
    pub now: i64,
    /// When the lease expires; another worker may then lease the job again.
    pub lease_until: i64,
    /// At most this many jobs, periods whole: the last period taken may pass it by its
    /// other jobs (see `Jobs::lease_jobs`).
    pub limit: i64,
    /// Only the jobs of this (user, site), for collecting one vault entry now.
    pub only: Option<(i64, i64)>,
    /// Where the turns start: within each turn, the users after this id go first, then the
    /// others from the lowest. A worker passes [`last_served`] of its previous lease, so that
    /// leases smaller than the number of users with due jobs still serve every user in turn
    /// (ties went to the oldest job, and a backlog queued first always has the oldest).
    pub after_user: i64,
}

/// The user whose turn came last in `jobs`, leased with turns starting after `after_user`:
/// the next lease's [`JobLease::after_user`]. `after_user` itself when nothing was leased.
pub fn last_served(after_user: i64, jobs: &[Job]) -> i64 {
    jobs.iter().map(|job| job.user_id).max_by_key(|&user| (user <= after_user, user)).unwrap_or(after_user)
}

/// A leased job.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Job {
    /// Its id.
    pub id: i64,
    /// The fence this lease holds: the completion commits only while it is still the job's.
    pub fence: i64,
    /// The user.
    pub user_id: i64,
    /// The site.
    pub site_id: i64,
    /// The metric's key.
    pub metric_key: String,
    /// The period: one job per (user, site, period key, metric).
    #[sqlx(flatten)]
    pub period: StoredPeriod,
    /// After this instant a transient failure ends the job as failed.
    pub deadline: i64,
}

impl Job {
    /// The slot the job fills.
    pub fn slot(&self) -> Slot<'_> {
        Slot {
            user_id: self.user_id,
            site_id: self.site_id,
            metric_key: &self.metric_key,
            granularity: &self.period.granularity,
            period_start: self.period.start,
            period_end: self.period.end,
            start_date: &self.period.start_date,
            period_key: &self.period.key,
        }
    }
}

/// A leased job with its result, to complete.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion<'a> {
    /// The job, with the fence it was leased with.
    pub job: &'a Job,
    /// What to write.
    pub result: CollectionResult<'a>,
    /// How long the site took to answer the call (milliseconds), when a call was made.
    pub duration_ms: Option<f64>,
}

/// Where a job stands (stored as its lowercase name, the same text as before it was typed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum JobState {
    /// Still to do, or to retry.
    Pending,
    /// A value stored.
    Done,
    /// Ended without a value.
    Failed,
}

impl JobState {
    /// The stored text: `pending`, `done` or `failed`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl CollectionResult<'_> {
    /// The job's state after this result.
    pub fn state(&self) -> JobState {
        match self {
            CollectionResult::Stored { .. } => JobState::Done,
            CollectionResult::Retry { not_before: Some(_), .. } => JobState::Pending,
            _ => JobState::Failed,
        }
    }

    /// When a job pending again may be leased.
    pub fn not_before(&self) -> Option<i64> {
        match self {
            CollectionResult::Retry { not_before, .. } => *not_before,
            _ => None,
        }
    }
}

/// How the jobs of a backfill's periods stand, each counted once by its state and the outcome
/// of its period's latest attempt: what a request that waits for its backfill reads
/// ([`Jobs::backfill_progress`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackfillProgress {
    /// Not tried yet.
    pub untried: i64,
    /// Tried, failed transiently, and to be tried again.
    pub retrying: i64,
    /// A value stored.
    pub stored: i64,
    /// The site answered, with no number.
    pub dropped: i64,
    /// Ended without a value otherwise: refused for good, out of time, or nothing left to do.
    pub failed: i64,
}

/// Which jobs of a vault entry [`Jobs::backfill_progress`] looks at: those whose periods start
/// within `starts` (both ends included) and that are still to do or changed at `since` or
/// later, whoever queued them (a period's scheduled job, an earlier backfill's), so that a
/// request waiting for its backfill looks at its periods and not at those settled before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackfillJobs {
    /// When the request began (Unix seconds).
    pub since: i64,
    /// The first instants of its first and last periods.
    pub starts: (i64, i64),
}

/// The columns a [`Job`] is read from.
pub(crate) const JOB_COLUMNS: &str =
    "id, fence, user_id, site_id, metric_key, granularity, period_start, period_end, start_date, period_key, deadline";

/// How many jobs are in each state, and how often jobs were leased again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Still to do (or to retry).
    pub pending: i64,
    /// A value stored.
    pub done: i64,
    /// Ended without a value.
    pub failed: i64,
    /// Jobs leased more than once (a lease that expired, or a retry).
    pub leased_again: i64,
    /// The highest fence of any job.
    pub max_fence: i64,
}

/// The condition, shared by both stores' lease queries, that a job `t` is due at the lease's
/// clock (`$3`) and held by no one (never leased, or its lease expired by then).
pub(crate) fn due(t: &str) -> String {
    format!("{t}.state = 'pending' AND {t}.not_before <= $3 AND ({t}.lease_expires IS NULL OR {t}.lease_expires <= $3)")
}

/// Binds a [`JobLease`] to either store's lease query, whose parameters both number alike:
/// `$1` owner, `$2` lease end, `$3` clock, `$4` limit, `$5` the user served last, and with
/// `only`, `$6` its user and `$7` its site.
macro_rules! bind_lease {
    ($query:expr, $lease:expr) => {{
        let lease: &$crate::JobLease<'_> = $lease;
        let query = bind!($query, lease.owner, lease.lease_until, lease.now, lease.limit, lease.after_user);
        match lease.only {
            Some((user_id, site_id)) => query.bind(user_id).bind(site_id),
            None => query,
        }
    }};
}
pub(crate) use bind_lease;

/// Jobs: scheduled collections shared by many workers.
#[async_trait]
pub trait Jobs: Send + Sync {
    /// Enqueues a job per slot; a slot that has a job already keeps it as it is (so planning
    /// from several processes is idempotent). Returns how many jobs are new.
    async fn enqueue_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64>;
    /// Leases up to `lease.limit` pending jobs due at `lease.now` and not leased (or whose
    /// lease has expired), fairly: every user's scheduled jobs before any backfill, and within
    /// each kind the users in turns (each one's soonest due job, then each one's next), so one
    /// user's backlog delays nobody else's due jobs by more than a turn; the cost of a lease
    /// grows with the users who have pending jobs, not with their number (at most a batch of
    /// each user's is read). It leases them to `lease.owner`, incrementing each
    /// one's fence, and with them every other such job of the same (user, site, period key):
    /// the metrics of a period that share a call are leased together. Periods are taken whole
    /// while the jobs before them number under `lease.limit`, so a batch passes it by at most
    /// the last period's other jobs. Jobs another leaser holds are skipped, never waited for.
    async fn lease_jobs(&self, lease: &JobLease<'_>) -> Result<Vec<Job>>;
    /// Completes leased jobs in one transaction: for each, only while its fence is still the
    /// job's, sets the job's new state and writes its result (value and attempt); one whose
    /// fence is stale writes nothing. Returns, in order, whether each was committed (`false`:
    /// fenced out, another lease holds the job).
    /// Tells [`Change::Values`] of each user a committed completion stored a value for.
    async fn complete_jobs(&self, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>>;
    /// How many jobs are in each state.
    async fn job_counts(&self) -> Result<JobCounts>;
    /// How many jobs of one vault entry are still to do (due, leased, or waiting to retry):
    /// the progress of a backfill or of the first collection of a new site.
    async fn pending_jobs(&self, user_id: i64, site_id: i64) -> Result<i64>;
    /// How many backfill jobs of the user, over all their sites, are still to do (the cap on a
    /// user's backfills in flight is checked against it).
    async fn pending_backfills(&self, user_id: i64) -> Result<i64>;
    /// How the jobs of the user's vault site `site_id` that `jobs` names stand, by state and by
    /// the outcome of each one's period's latest attempt.
    async fn backfill_progress(&self, user_id: i64, site_id: i64, jobs: BackfillJobs) -> Result<BackfillProgress>;
    /// Makes the jobs of `jobs`' slots that ended without a value pending again, due at each
    /// one's `not_before` until its `deadline`, their fences moved on: a period the user asks
    /// for again (collect-now, a backfill) is tried again whatever its earlier failures (§8,
    /// 2026-12-07). Returns how many.
    async fn revive_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64>;
    /// Makes pending again, due at `now` until `deadline`, the jobs of the user's vault site
    /// `site_id` whose period starts at or after `since` and that ended refused: their period's
    /// latest attempt failed for good (a `401` or `403`, no credential, a renewal refused, or
    /// any other refusal: a site may hide what it refuses behind a `404`), not dropped for a
    /// value that is not a number. What a credential saved asks for (§8, 2026-12-07). Returns
    /// how many.
    async fn revive_refused_jobs(
        &self,
        user_id: i64,
        site_id: i64,
        since: i64,
        (now, deadline): (i64, i64),
    ) -> Result<u64>;
    /// Hands back the pending jobs leased to `owner` (a process that stops): their leases end
    /// and they are due at `now`, so another worker leases them at once, and their fences move
    /// on, so a late result of `owner`'s is fenced out. Returns how many.
    async fn release_jobs(&self, owner: &str, now: i64) -> Result<u64>;
}

#[async_trait]
impl Jobs for Database {
    #[tracing::instrument(level = "debug", skip_all, fields(jobs = jobs.len()))]
    async fn enqueue_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64> {
        match &self.pool {
            Backend::Sqlite(pool) => sqlite::enqueue_jobs(pool, jobs, now).await,
            Backend::Postgres(pool) => postgres::enqueue_jobs(pool, jobs, now).await,
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(limit = lease.limit))]
    async fn lease_jobs(&self, lease: &JobLease<'_>) -> Result<Vec<Job>> {
        match &self.pool {
            Backend::Sqlite(pool) => sqlite::lease_jobs(pool, lease).await,
            Backend::Postgres(pool) => postgres::lease_jobs(pool, lease).await,
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(completions = completions.len()))]
    async fn complete_jobs(&self, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>> {
        let committed = match &self.pool {
            Backend::Sqlite(pool) => sqlite::complete_jobs(pool, completions, now).await,
            Backend::Postgres(pool) => postgres::complete_jobs(pool, completions, now).await,
        }?;
        let stored =
            completions.iter().zip(&committed).filter(|(c, committed)| **committed && c.result.value().is_some());
        self.hooks.tell_each(Change::Values, stored.map(|(c, _)| c.job.user_id));
        Ok(committed)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn job_counts(&self) -> Result<JobCounts> {
        on!(&self.pool, |pool| {
            let (pending, done, failed, leased_again, max_fence) = sqlx::query_as(
                "SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'done'),
                        count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE fence > 1),
                        COALESCE(max(fence), 0)
                 FROM jobs",
            )
            .fetch_one(pool)
            .await?;
            Ok(JobCounts { pending, done, failed, leased_again, max_fence })
        })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn pending_jobs(&self, user_id: i64, site_id: i64) -> Result<i64> {
        on!(&self.pool, |pool| {
            let pending = bind!(
                sqlx::query_scalar(
                    "SELECT count(*) FROM jobs WHERE user_id = $1 AND site_id = $2 AND state = 'pending'"
                ),
                user_id,
                site_id
            )
            .fetch_one(pool)
            .await?;
            Ok(pending)
        })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn pending_backfills(&self, user_id: i64) -> Result<i64> {
        on!(&self.pool, |pool| {
            let pending = bind!(
                sqlx::query_scalar("SELECT count(*) FROM jobs WHERE user_id = $1 AND state = 'pending' AND kind = $2"),
                user_id,
                crate::JobKind::Backfill.as_i64()
            )
            .fetch_one(pool)
            .await?;
            Ok(pending)
        })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn backfill_progress(&self, user_id: i64, site_id: i64, jobs: BackfillJobs) -> Result<BackfillProgress> {
        // Each job joined to its period's latest attempt (the attempts of the range's periods
        // only): a job still to do with a retry logged is backing off, one without is untried.
        let sql = "SELECT j.state, l.outcome, count(*) FROM jobs j
                   LEFT JOIN (
                       SELECT metric_key, period_key, outcome,
                              row_number() OVER (PARTITION BY metric_key, period_key ORDER BY id DESC) AS newest
                       FROM collection_attempts
                       WHERE user_id = $1 AND site_id = $2 AND period_start BETWEEN $4 AND $5
                   ) l ON l.newest = 1 AND l.metric_key = j.metric_key AND l.period_key = j.period_key
                   WHERE j.user_id = $1 AND j.site_id = $2 AND j.period_start BETWEEN $4 AND $5
                     AND (j.state = 'pending' OR j.updated_at >= $3)
                   GROUP BY j.state, l.outcome";
        let (since, (first, last)) = (jobs.since, jobs.starts);
        let rows: Vec<(String, Option<String>, i64)> =
            fetch!(&self.pool, fetch_all(sql, user_id, site_id, since, first, last))?;
        let mut progress = BackfillProgress::default();
        for (state, outcome, count) in rows {
            let counted = match (state.as_str(), outcome.as_deref()) {
                ("done", _) => &mut progress.stored,
                ("failed", Some("dropped")) => &mut progress.dropped,
                ("failed", _) => &mut progress.failed,
                ("pending", Some("retry")) => &mut progress.retrying,
                _ => &mut progress.untried,
            };
            *counted += count;
        }
        Ok(progress)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn revive_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64> {
        if jobs.is_empty() {
            return Ok(0);
        }
        let sql = "UPDATE jobs SET state = 'pending', not_before = $5, deadline = $6, lease_owner = NULL,
                       lease_expires = NULL, fence = fence + 1, updated_at = $7
                   WHERE user_id = $1 AND site_id = $2 AND period_key = $3 AND metric_key = $4 AND state = 'failed'";
        on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            let mut revived = 0;
            for job in jobs {
                let slot = &job.slot;
                let query = bind!(
                    sqlx::query(sql),
                    slot.user_id,
                    slot.site_id,
                    slot.period_key,
                    slot.metric_key,
                    job.not_before,
                    job.deadline,
                    now
                );
                revived += query.execute(&mut *tx).await?.rows_affected();
            }
            tx.commit().await?;
            Ok(revived)
        })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn revive_refused_jobs(
        &self,
        user_id: i64,
        site_id: i64,
        since: i64,
        (now, deadline): (i64, i64),
    ) -> Result<u64> {
        let sql = "UPDATE jobs SET state = 'pending', not_before = $4, deadline = $5, lease_owner = NULL,
                       lease_expires = NULL, fence = fence + 1, updated_at = $4
                   WHERE user_id = $1 AND site_id = $2 AND state = 'failed' AND period_start >= $3
                     AND (SELECT a.outcome FROM collection_attempts a
                          WHERE a.user_id = jobs.user_id AND a.site_id = jobs.site_id
                            AND a.metric_key = jobs.metric_key AND a.period_key = jobs.period_key
                          ORDER BY a.id DESC LIMIT 1) = 'failed'";
        on!(&self.pool, |pool| {
            let done = bind!(sqlx::query(sql), user_id, site_id, since, now, deadline).execute(pool).await?;
            Ok(done.rows_affected())
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn release_jobs(&self, owner: &str, now: i64) -> Result<u64> {
        let sql = "UPDATE jobs SET lease_owner = NULL, lease_expires = NULL, fence = fence + 1,
                       not_before = $2, updated_at = $2
                   WHERE state = 'pending' AND lease_owner = $1";
        execute!(&self.pool, sql, owner, now)
    }
}
