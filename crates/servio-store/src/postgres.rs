//! The PostgreSQL backend, for several `servio serve` processes sharing one database: opening
//! and migrating, and what only PostgreSQL does (the rest is in the domain modules): full-text search
//! over a `tsvector`, and batches that travel as arrays through `UNNEST`, one statement each
//! (the dashboard's values, enqueueing and completing jobs), with leases that skip locked rows.

use std::borrow::Cow;

use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};
use tokio::sync::mpsc;

use crate::Result;
use crate::jobs::JOB_COLUMNS;
use crate::text::storable_opt;
use crate::{Completion, Heard, Job, JobLease, NewJob, Pruned};

/// Connects to `url`.
pub(crate) async fn connect(url: &str) -> Result<PgPool> {
    Ok(PgPoolOptions::new().max_connections(16).connect(url).await?)
}

/// Migrates the database of `pool` (its current schema), and names its channel of change
/// notices: one per schema, since notices are database-wide and each schema is a platform of
/// its own.
pub(crate) async fn prepare(pool: &PgPool) -> Result<String> {
    crate::migrations::postgres().run(pool).await?;
    let schema: String = sqlx::query_scalar("SELECT current_schema()").fetch_one(pool).await?;
    Ok(channel_of(&schema))
}

/// `servio_changes` and the schema's name in letters, digits and `_`, within PostgreSQL's 63
/// bytes for a name.
fn channel_of(schema: &str) -> String {
    let safe: String = schema.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let mut channel = format!("servio_changes_{safe}");
    channel.truncate(63);
    channel
}

/// Tells the listeners of this schema's channel of `change`.
pub(crate) async fn announce(pool: &PgPool, channel: &str, change: &str) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)").bind(channel).bind(change).execute(pool).await?;
    Ok(())
}

/// Listens on this schema's channel on a connection of its own, passing on what is heard,
/// and [`Heard::Missed`] after the connection was lost (it reconnects by itself).
pub(crate) async fn changes(pool: &PgPool, channel: &str) -> Result<mpsc::Receiver<Heard>> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    let (heard, receiver) = mpsc::channel(1024);
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            let next = match listener.try_recv().await {
                Ok(Some(notice)) if !failing => Heard::Change(notice.payload().to_owned()),
                Ok(_) => Heard::Missed,
                Err(error) => {
                    if !failing {
                        tracing::warn!(%error, "listening for other processes' changes failed; retrying");
                    }
                    failing = true;
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            };
            failing = false;
            if heard.send(next).await.is_err() {
                break;
            }
        }
    });
    Ok(receiver)
}

/// Listed sites matching every word as a prefix (`rust:* & forum:*`), best first.
pub(crate) const SEARCH_MATCHING: crate::directory::SearchMatching = crate::directory::SearchMatching {
    sql: concat!(
        "SELECT ",
        found_columns!(),
        " FROM listings l JOIN sites s ON s.id = l.site_id WHERE l.listed AND l.search @@ to_tsquery('simple', $1)
         ORDER BY ts_rank(l.search, to_tsquery('simple', $1)) DESC, l.name LIMIT $2"
    ),
    pattern: |words| words.iter().map(|w| format!("{w}:*")).collect::<Vec<_>>().join(" & "),
};

/// Jobs enqueued at once past which the jobs table's statistics are renewed at once, rather
/// than by autovacuum up to a minute later.
const REANALYZE_AFTER: u64 = 1_000;

/// One statement for the whole plan: the slots travel as arrays.
pub(crate) async fn enqueue_jobs(pool: &PgPool, jobs: &[NewJob<'_>], now: i64) -> Result<u64> {
    if jobs.is_empty() {
        return Ok(0);
    }
    let column = |f: &dyn Fn(&NewJob<'_>) -> i64| jobs.iter().map(f).collect::<Vec<i64>>();
    let text = |f: &dyn Fn(&NewJob<'_>) -> String| jobs.iter().map(f).collect::<Vec<String>>();
    let inserted = sqlx::query(
        "INSERT INTO jobs (user_id, site_id, metric_key, granularity, period_start, period_end, start_date,
                           not_before, deadline, period_key, kind, created_at, updated_at)
         SELECT *, $10::BIGINT, $10::BIGINT FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[],
                                                $5::BIGINT[], $6::BIGINT[], $7::TEXT[], $8::BIGINT[], $9::BIGINT[],
                                                $11::TEXT[], $12::BIGINT[])
         ON CONFLICT (user_id, site_id, period_key, metric_key) DO NOTHING",
    )
    .bind(column(&|j| j.slot.user_id))
    .bind(column(&|j| j.slot.site_id))
    .bind(text(&|j| j.slot.metric_key.to_owned()))
    .bind(text(&|j| j.slot.granularity.to_owned()))
    .bind(column(&|j| j.slot.period_start))
    .bind(column(&|j| j.slot.period_end))
    .bind(text(&|j| j.slot.start_date.to_owned()))
    .bind(column(&|j| j.not_before))
    .bind(column(&|j| j.deadline))
    .bind(now)
    .bind(text(&|j| j.slot.period_key.to_owned()))
    .bind(column(&|j| j.kind.as_i64()))
    .execute(pool)
    .await?;
    // Leases must walk each user's pending jobs through the index in order and stop after a batch. With statistics
    // from before a large plan, the planner expects a few pending jobs and sorts them all
    // instead, on every lease (measured: 9 ms a lease of 128 among 20,000 pending).
    if inserted.rows_affected() >= REANALYZE_AFTER {
        sqlx::query("ANALYZE jobs").execute(pool).await?;
    }
    Ok(inserted.rows_affected())
}

/// Leases due jobs fairly (see `Jobs::lease_jobs`) with `FOR UPDATE SKIP LOCKED`.
pub(crate) async fn lease_jobs(pool: &PgPool, lease: &JobLease<'_>) -> Result<Vec<Job>> {
    // Fair turns: `users` steps through the users with pending jobs (one index descent each,
    // a loose index scan), `candidates` reads at most a batch of each one's due jobs, scheduled
    // before backfills and soonest first, and numbers them per user (`turn`); `seeds` are then
    // every user's scheduled jobs turn by turn, then their backfills turn by turn, each turn's
    // users from the one after `after_user` round (see `JobLease::after_user`), a batch at most.
    // So one user's backlog costs a lease one batch of reads, and another user's due jobs wait a
    // turn at most.
    //
    // `taken` turns the seeds into whole periods, as `sqlite::whole_periods` does, but
    // it reads each period once and stops at the limit: it walks the seeds' periods in their
    // order, locks each one's due jobs (through the unique index, which leads with the user,
    // site and period key), and `rank()` numbers every job with one more than the jobs of the
    // periods before it, so `rank <= limit` keeps the periods that start under the limit, whole.
    // That condition on a rank that only grows ends the walk (a run condition): the periods
    // past the limit are neither read nor locked, but for the first job of the next one. (It
    // counted the due jobs of every seed's period, twice, then read the periods taken again
    // and locked every seed besides: 40% of a lease's buffers went to periods past the limit.)
    // The seeds themselves are not locked: leasers take turns (below), so no other leaser is
    // taking them, and a period whose jobs are all skipped counts for nothing.
    //
    // SKIP LOCKED: rows another transaction is changing right now are passed over, not waited
    // for. A lease changes no indexed column (unlike SQLite's, it leaves `not_before`), so
    // that with the room the table's fill factor leaves it is a HOT update: no index entry
    // written. Leases step over the jobs others hold (a few hundred at most), which costs less
    // (BENCHMARKS.md). The rows locked are updated by their physical address (`ctid`, stable
    // while the lock is held): no second descent of the primary key per job.
    let (users, only) = match lease.only {
        // Collecting one vault entry now: its user only.
        Some(_) => ("SELECT $6::BIGINT AS user_id", "AND j.site_id = $7"),
        None => (
            "WITH RECURSIVE walk(user_id) AS (
                 (SELECT user_id FROM jobs WHERE state = 'pending' ORDER BY user_id LIMIT 1)
                 UNION ALL
                 SELECT (SELECT j.user_id FROM jobs j WHERE j.state = 'pending' AND j.user_id > w.user_id
                         ORDER BY j.user_id LIMIT 1)
                 FROM walk w WHERE w.user_id IS NOT NULL
             )
             SELECT user_id FROM walk WHERE user_id IS NOT NULL",
            "",
        ),
    };
    let (due_j, due_s) = (crate::jobs::due("j"), crate::jobs::due("s"));
    let sql = format!(
        "WITH users AS ({users}),
         candidates AS (
             SELECT c.user_id, c.site_id, c.period_key, c.kind,
                    row_number() OVER (PARTITION BY c.user_id ORDER BY c.kind, c.not_before, c.id) AS turn
             FROM users u CROSS JOIN LATERAL (
                 SELECT j.id, j.user_id, j.site_id, j.period_key, j.kind, j.not_before FROM jobs j
                 WHERE j.user_id = u.user_id AND {due_j} {only}
                 ORDER BY j.kind, j.not_before, j.id LIMIT $4
             ) c
         ),
         seeds AS (
             SELECT user_id, site_id, period_key,
                    row_number() OVER (ORDER BY kind, turn, user_id <= $5, user_id) AS place
             FROM candidates ORDER BY kind, turn, user_id <= $5, user_id LIMIT $4
         ),
         periods AS (
             SELECT user_id, site_id, period_key, min(place) AS first FROM seeds
             GROUP BY user_id, site_id, period_key
         ),
         taken AS (
             SELECT ctid FROM (
                 SELECT s.ctid, rank() OVER (ORDER BY p.first) AS ordinal
                 FROM (SELECT * FROM periods ORDER BY first) p CROSS JOIN LATERAL (
                     SELECT s.ctid FROM jobs s
                     WHERE s.user_id = p.user_id AND s.site_id = p.site_id AND s.period_key = p.period_key
                       AND {due_s}
                     FOR UPDATE SKIP LOCKED
                 ) s
             ) t WHERE ordinal <= $4
         )
         UPDATE jobs SET fence = fence + 1, lease_owner = $1, lease_expires = $2, updated_at = $3
         WHERE ctid = ANY(ARRAY(SELECT ctid FROM taken))
         RETURNING {JOB_COLUMNS}"
    );
    // Only constant texts are formatted in; every value is bound.
    let query = crate::jobs::bind_lease!(sqlx::query_as(sqlx::AssertSqlSafe(sql)), lease);
    // Leases of one schema take turns (a transaction-scoped advisory lock): leasers running at
    // once would all rank the same jobs first and, skipping each other's, come away with part
    // of a batch or nothing. One at a time, each ranks what the last one left (a lease takes a
    // few milliseconds: hundreds of batches a second, more than sites answer).
    //
    // The same statement makes the lease's plan a generic one, for this transaction only: with
    // its values at hand the planner made a custom plan on every lease (about 1 ms, as long as
    // the lease itself), and the generic plan is the same plan. Without its values the planner
    // expects a batch of every user's jobs and a cost past JIT's thresholds, so JIT is off for
    // the transaction too: compiling the generic plan cost 1.3 s a lease among 200,000 jobs
    // (`bench/leases.sh`).
    let mut tx = pool.begin().await?;
    sqlx::query(
        "SELECT pg_advisory_xact_lock($1, hashtext(current_schema())),
                set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true)",
    )
    .bind(LEASE_LOCK)
    .execute(&mut *tx)
    .await?;
    let jobs = query.fetch_all(&mut *tx).await?;
    tx.commit().await?;
    Ok(jobs)
}

/// The first key of the advisory lock leases take turns on (the second is the schema's hash).
const LEASE_LOCK: i32 = 0x5e7c_1a1d;

/// Completes a batch of jobs in one statement, whatever its size, and so one transaction in
/// one round trip.
pub(crate) async fn complete_jobs(pool: &PgPool, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>> {
    if completions.is_empty() {
        return Ok(Vec::new());
    }
    // The fence check updates the jobs whose fence is still the one leased (a lease since
    // has incremented it), and only the jobs it updated get their value and attempt written,
    // as `write_result_on` writes them elsewhere. The results travel as arrays, in order.
    // Their texts are made storable first: one NUL from a site would fail the whole statement,
    // and with it every other user's result in the group.
    let attempts: Vec<_> = completions.iter().map(|c| c.result.attempt()).collect();
    let reasons: Vec<Option<Cow<'_, str>>> = attempts.iter().map(|a| storable_opt(a.and_then(|a| a.reason))).collect();
    let raws: Vec<Option<Cow<'_, str>>> = attempts.iter().map(|a| storable_opt(a.and_then(|a| a.raw))).collect();
    let sources: Vec<Option<Cow<'_, str>>> = completions.iter().map(|c| storable_opt(c.result.source())).collect();
    let matched: Vec<(i64, i64)> = sqlx::query_as(concat!(
        "WITH c AS (
             SELECT * FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::TEXT[], $4::BIGINT[], $5::DOUBLE PRECISION[],
                                  $6::TEXT[], $7::TEXT[], $8::TEXT[], $9::BIGINT[], $11::DOUBLE PRECISION[],
                                  $12::BIGINT[], $13::BIGINT[], $14::TEXT[])
                 WITH ORDINALITY AS c(id, fence, state, not_before, value, outcome, reason, raw, retry_at,
                                      duration_ms, period_start, period_end, source, n)
         ),
         done AS (
             UPDATE jobs AS j SET state = c.state, not_before = COALESCE(c.not_before, j.not_before),
                                  lease_owner = NULL, lease_expires = NULL, updated_at = $10
             FROM c WHERE j.id = c.id AND j.fence = c.fence
             RETURNING j.id, j.fence, j.user_id, j.site_id, j.metric_key, j.granularity, j.start_date, j.period_key
         ),
         legacy AS (
             DELETE FROM metric_values m USING done d JOIN c ON (c.id, c.fence) = (d.id, d.fence)
             WHERE c.value IS NOT NULL AND d.granularity = 'hour' AND m.user_id = d.user_id
               AND m.site_id = d.site_id AND m.metric_key = d.metric_key
               AND m.period_key = d.start_date || '@' || c.period_start
         ),
         stored AS (
             INSERT INTO metric_values ",
        crate::collection::value_columns!(),
        "
             SELECT d.user_id, d.site_id, d.metric_key, d.granularity, c.period_start, c.period_end,
                    d.start_date, c.value, c.raw, $10, d.period_key, c.source
             FROM done d JOIN c ON (c.id, c.fence) = (d.id, d.fence) WHERE c.value IS NOT NULL ",
        crate::collection::replace_value!(),
        "
         ),
         logged AS (
             INSERT INTO collection_attempts (user_id, site_id, metric_key, period_start, start_date,
                                              attempted_at, outcome, reason, raw, retry_at, duration_ms, period_key)
             SELECT d.user_id, d.site_id, d.metric_key, c.period_start, d.start_date, $10, c.outcome,
                    c.reason, c.raw, c.retry_at, c.duration_ms, d.period_key
             FROM done d JOIN c ON (c.id, c.fence) = (d.id, d.fence) WHERE c.outcome IS NOT NULL ORDER BY c.n
         )
         SELECT id, fence FROM done",
    ))
    .bind(completions.iter().map(|c| c.job.id).collect::<Vec<i64>>())
    .bind(completions.iter().map(|c| c.job.fence).collect::<Vec<i64>>())
    .bind(completions.iter().map(|c| c.result.state().as_str()).collect::<Vec<&str>>())
    .bind(completions.iter().map(|c| c.result.not_before()).collect::<Vec<Option<i64>>>())
    .bind(completions.iter().map(|c| c.result.value().map(|(value, _)| value)).collect::<Vec<Option<f64>>>())
    .bind(attempts.iter().map(|a| a.map(|a| a.outcome.as_str())).collect::<Vec<Option<&str>>>())
    .bind(reasons.iter().map(Option::as_deref).collect::<Vec<Option<&str>>>())
    .bind(raws.iter().map(Option::as_deref).collect::<Vec<Option<&str>>>())
    .bind(attempts.iter().map(|a| a.and_then(|a| a.retry_at)).collect::<Vec<Option<i64>>>())
    .bind(now)
    .bind(completions.iter().map(|c| c.duration_ms).collect::<Vec<Option<f64>>>())
    // The period as collected: a job resolves its key in the user's zone when it is done; an
    // hour value from before period keys at its instant is replaced (`legacy`), as
    // `store_value_on` replaces it.
    .bind(completions.iter().map(|c| c.job.period.start).collect::<Vec<i64>>())
    .bind(completions.iter().map(|c| c.job.period.end).collect::<Vec<i64>>())
    .bind(sources.iter().map(Option::as_deref).collect::<Vec<Option<&str>>>())
    .fetch_all(pool)
    .await?;
    // By job and fence: a job leased again by the same worker may be in a batch twice.
    let matched: std::collections::HashSet<(i64, i64)> = matched.into_iter().collect();
    Ok(completions.iter().map(|c| matched.contains(&(c.job.id, c.job.fence))).collect())
}

/// The statement pruning `what`. The attempt log has no primary key index here (one index
/// less to write per collection): its oldest rows are found through the block range index on
/// `attempted_at` and deleted by their physical address, `ctid`.
pub(crate) fn prune_sql(what: Pruned) -> &'static str {
    match what {
        Pruned::Attempts => {
            "DELETE FROM collection_attempts WHERE ctid = ANY(ARRAY(
                 SELECT ctid FROM collection_attempts WHERE attempted_at < $1 LIMIT $2))"
        }
        _ => what.sql(),
    }
}
