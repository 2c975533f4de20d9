//! The SQLite backend, one embedded file (WAL journal, foreign keys on): opening and
//! migrating, and what only SQLite does (the rest is in the domain modules): full-text search over
//! FTS5, the dashboard's values packed one JSON row per metric, and job batches as loops in one
//! immediate transaction (SQLite has one writer; its commits are what cost).

use std::str::FromStr;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use crate::Result;
use crate::collection::write_result_on;
use crate::jobs::JOB_COLUMNS;
use crate::{Completion, Job, JobLease, NewJob, StoreError};

/// Opens (creating when missing) the database at `url` and migrates it.
pub(crate) async fn connect(url: &str) -> Result<SqlitePool> {
    let memory = url.contains(":memory:");
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .foreign_keys(true)
        .journal_mode(if memory { SqliteJournalMode::Memory } else { SqliteJournalMode::Wal })
        .pragma("mmap_size", MMAP_BYTES.to_string());
    if !memory {
        private_files(options.get_filename())?;
    }
    // An in-memory database lives in its connection: keep exactly one.
    let pool = SqlitePoolOptions::new().max_connections(if memory { 1 } else { 8 }).connect_with(options).await?;
    crate::migrations::sqlite().run(&pool).await?;
    Ok(pool)
}

/// How much of the database file SQLite maps into memory and reads in place (256 MiB): pages
/// read with `read()` were copied from the kernel's cache into each connection's own 2 MiB
/// cache. The mapped pages are the kernel's file cache, shared by every connection and
/// released under memory pressure, not the process's heap.
const MMAP_BYTES: u64 = 256 * 1024 * 1024;

/// Makes the database file (created here when missing) readable by its owner only, and the
/// WAL and shared-memory files beside it too when they exist: they hold users' sealed
/// credentials and password hashes. SQLite gives the WAL and shared-memory files it creates the
/// database file's permissions.
#[cfg(unix)]
fn private_files(database: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let private = |path: &std::path::Path| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    if let Err(e) = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(database)
        && e.kind() != std::io::ErrorKind::AlreadyExists
    {
        return Err(StoreError::Io { action: "creating", path: database.to_owned(), source: e });
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = database.as_os_str().to_owned();
        name.push(suffix);
        let path = std::path::PathBuf::from(name);
        if path.exists() {
            private(&path).map_err(|source| StoreError::Io { action: "restricting", path: path.clone(), source })?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn private_files(_database: &std::path::Path) -> Result<()> {
    Ok(())
}

/// Listed sites matching every word as a prefix (`"rust"* "forum"*`), best first.
pub(crate) const SEARCH_MATCHING: crate::directory::SearchMatching = crate::directory::SearchMatching {
    sql: concat!(
        "SELECT ",
        found_columns!(),
        " FROM listings_fts f JOIN listings l ON l.site_id = f.rowid JOIN sites s ON s.id = l.site_id
         WHERE listings_fts MATCH $1 AND l.listed ORDER BY bm25(listings_fts, 10.0, 4.0, 1.0) LIMIT $2"
    ),
    pattern: |words| words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(" "),
};

/// Enqueues a whole plan in one immediate transaction.
pub(crate) async fn enqueue_jobs(pool: &SqlitePool, jobs: &[NewJob<'_>], now: i64) -> Result<u64> {
    // One write transaction for the whole plan: SQLite commits are what cost.
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let mut inserted = 0;
    for new in jobs {
        let slot = &new.slot;
        inserted += sqlx::query(
            "INSERT INTO jobs (user_id, site_id, metric_key, granularity, period_start, period_end, start_date,
                               not_before, deadline, created_at, updated_at, period_key, kind)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12)
             ON CONFLICT (user_id, site_id, period_key, metric_key) DO NOTHING",
        )
        .bind(slot.user_id)
        .bind(slot.site_id)
        .bind(slot.metric_key)
        .bind(slot.granularity)
        .bind(slot.period_start)
        .bind(slot.period_end)
        .bind(slot.start_date)
        .bind(new.not_before)
        .bind(new.deadline)
        .bind(now)
        .bind(slot.period_key)
        .bind(new.kind.as_i64())
        .execute(&mut *tx)
        .await?
        .rows_affected();
    }
    tx.commit().await?;
    Ok(inserted)
}

/// Leases due jobs fairly (see `Jobs::lease_jobs`) in one immediate transaction.
pub(crate) async fn lease_jobs(pool: &SqlitePool, lease: &JobLease<'_>) -> Result<Vec<Job>> {
    // SQLite has one writer at a time: an immediate transaction takes the write lock before
    // it reads, so two leasers can never pick the same rows. A lease moves `not_before` to
    // its lease's end, so held jobs sort after the due ones (SQLite has no HOT updates to
    // keep, unlike PostgreSQL's leases). The due jobs of the periods of the seeds come with
    // them, so that metrics sharing a call are in one batch (see `Jobs::lease_jobs`).
    //
    // Fair turns, as on PostgreSQL: `users` steps through the users with pending jobs (one
    // index seek each), `candidates` reads at most a batch of each one's due jobs (SQLite has
    // no LATERAL: a correlated `IN` with its own LIMIT), numbered per user; `seeds` takes
    // scheduled jobs before backfills, turn by turn, each turn's users from the one after
    // `after_user` round (see `JobLease::after_user`); of their periods, `taken` keeps whole
    // periods in the seeds' order while the jobs before stay under the limit
    // (`whole_periods`). The periods taken are joined on the unique index whole (a row-value
    // `IN` searched it by user and site only: 0.15 s of CPU a lease with 200,000 jobs of one
    // site).
    let (users, only) = match lease.only {
        Some(_) => ("SELECT $6 AS user_id", "AND j.site_id = $7"),
        None => ("SELECT user_id FROM walk WHERE user_id IS NOT NULL", ""),
    };
    let (due_j, due_s) = (crate::jobs::due("j"), crate::jobs::due("s"));
    let whole_periods = whole_periods(&due_s);
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    // Only constant texts are formatted in; every value is bound.
    let sql = format!(
        "WITH RECURSIVE walk(user_id) AS (
             SELECT (SELECT user_id FROM jobs WHERE state = 'pending' ORDER BY user_id LIMIT 1)
             UNION ALL
             SELECT (SELECT j.user_id FROM jobs j WHERE j.state = 'pending' AND j.user_id > w.user_id
                     ORDER BY j.user_id LIMIT 1)
             FROM walk w WHERE w.user_id IS NOT NULL
         ),
         users AS ({users}),
         candidates AS (
             SELECT c.user_id, c.site_id, c.period_key, c.kind,
                    row_number() OVER (PARTITION BY c.user_id ORDER BY c.kind, c.not_before, c.id) AS turn
             FROM users u JOIN jobs c ON c.id IN (
                 SELECT j.id FROM jobs j WHERE j.user_id = u.user_id AND {due_j} {only}
                 ORDER BY j.kind, j.not_before, j.id LIMIT $4
             )
         ),
         seeds AS (
             SELECT user_id, site_id, period_key,
                    row_number() OVER (ORDER BY kind, turn, user_id <= $5, user_id) AS place
             FROM candidates ORDER BY place LIMIT $4
         ),
         {whole_periods}
         UPDATE jobs SET fence = fence + 1, lease_owner = $1, lease_expires = $2, not_before = $2, updated_at = $3
         WHERE id IN (SELECT s.id FROM taken x
                      JOIN jobs s ON s.user_id = x.user_id AND s.site_id = x.site_id AND s.period_key = x.period_key
                      WHERE {due_s})
         RETURNING {JOB_COLUMNS}"
    );
    let query = crate::jobs::bind_lease!(sqlx::query_as(sqlx::AssertSqlSafe(sql)), lease);
    let jobs = query.fetch_all(&mut *tx).await?;
    tx.commit().await?;
    Ok(jobs)
}

/// The part of the lease query that turns its seeds into whole periods: `seeds` (user_id,
/// site_id, period_key, place: the lease's order) must precede it; it defines `taken`, the
/// periods of the seeds in their order for as long as the due jobs (`due_s`, a condition on
/// `s`) of the periods before stay under the lease's limit (`$4`).
/// So a lease takes every job of a period at once (metrics that share a call are asked in one)
/// and at most one period's other jobs past its limit: counting seeds alone, 64 seeds of an
/// eleven-metric backlog leased 704 jobs, a worker's room for 64 calls held eleven times over.
/// (PostgreSQL's lease walks the periods in order and stops at the limit instead, locking
/// what it takes: see `postgres::lease_jobs`.)
fn whole_periods(due_s: &str) -> String {
    format!(
        "periods AS (
             SELECT user_id, site_id, period_key, min(place) AS first FROM seeds
             GROUP BY user_id, site_id, period_key
         ),
         sized AS (
             SELECT p.user_id, p.site_id, p.period_key, p.first,
                    (SELECT count(*) FROM jobs s
                     WHERE s.user_id = p.user_id AND s.site_id = p.site_id AND s.period_key = p.period_key
                       AND {due_s}) AS size
             FROM periods p
         ),
         taken AS (
             SELECT user_id, site_id, period_key FROM (
                 SELECT user_id, site_id, period_key, sum(size) OVER (ORDER BY first) - size AS before FROM sized
             ) t WHERE before < $4
         )"
    )
}

/// Completes a batch of jobs, one fence check each, in one immediate transaction.
pub(crate) async fn complete_jobs(pool: &SqlitePool, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let mut committed = Vec::with_capacity(completions.len());
    for Completion { job, result, duration_ms } in completions {
        // The fence check: a lease since ours has incremented it, and then nothing of ours
        // may be written.
        let updated = sqlx::query(
            "UPDATE jobs SET state = $1, not_before = COALESCE($2, not_before), lease_owner = NULL,
                             lease_expires = NULL, updated_at = $3
             WHERE id = $4 AND fence = $5",
        )
        .bind(result.state().as_str())
        .bind(result.not_before())
        .bind(now)
        .bind(job.id)
        .bind(job.fence)
        .execute(&mut *tx)
        .await?;
        let fenced = updated.rows_affected() == 1;
        if fenced {
            write_result_on((&mut *tx).into(), &job.slot(), result, *duration_ms, now).await?;
        }
        committed.push(fenced);
    }
    tx.commit().await?;
    Ok(committed)
}

#[cfg(test)]
mod tests {
    use super::{MMAP_BYTES, connect};

    /// The budget's row for the embedded file: every connection maps at most 256 MiB of it.
    #[tokio::test]
    async fn every_connection_maps_at_most_the_budgeted_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let pool = connect(&format!("sqlite:{}", dir.path().join("servio.db").display())).await.unwrap();
        for _ in 0..3 {
            let mapped: i64 = sqlx::query_scalar("PRAGMA mmap_size").fetch_one(&pool).await.unwrap();
            assert_eq!(mapped, 268_435_456);
            assert_eq!(u64::try_from(mapped).unwrap(), MMAP_BYTES);
        }
    }
}
