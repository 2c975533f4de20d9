//! The SQLite backend, one embedded file (WAL journal, foreign keys on): opening and
//! migrating, and what only SQLite does (the rest is in `shared.rs`): full-text search over
//! FTS5, the dashboard's values packed one JSON row per metric, and job batches as loops in one
//! immediate transaction (SQLite has one writer; its commits are what cost).

use std::str::FromStr;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use crate::jobs::JOB_COLUMNS;
use crate::shared::SiteValues;
use crate::{Completion, Job, JobClaim, NewJob, Pruned, Series, StoreError};

/// The store in SQLite.
pub struct SqliteStore {
    pub(crate) pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating when missing) the database at `url` and migrates it.
    pub async fn open(url: &str) -> Result<SqliteStore, StoreError> {
        let memory = url.contains(":memory:");
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .foreign_keys(true)
            .journal_mode(if memory { SqliteJournalMode::Memory } else { SqliteJournalMode::Wal });
        if !memory {
            private_files(options.get_filename())?;
        }
        // An in-memory database lives in its connection: keep exactly one.
        let pool = SqlitePoolOptions::new().max_connections(if memory { 1 } else { 8 }).connect_with(options).await?;
        crate::migrations::sqlite().run(&pool).await?;
        Ok(SqliteStore { pool })
    }
}

/// Makes the database file (created here when missing) readable by its owner only, and the
/// WAL and shared-memory files beside it too when they exist: they hold users' sealed
/// credentials and password hashes. SQLite gives the WAL and shared-memory files it creates the
/// database file's permissions.
#[cfg(unix)]
fn private_files(database: &std::path::Path) -> Result<(), StoreError> {
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
fn private_files(_database: &std::path::Path) -> Result<(), StoreError> {
    Ok(())
}

/// The dashboard's one query, one row per metric with its values packed.
pub(crate) async fn values_of(pool: &SqlitePool, user_id: i64, metrics: &[(i64, &str)], since: i64) -> SiteValues {
    if metrics.is_empty() {
        return Ok(Vec::new());
    }
    // One row per metric, its values aggregated into a JSON array: sqlx hands SQLite rows
    // over one channel message each, which made 3,100 rows cost most of a dashboard
    // request. Two IN lists over the columns of `metric_values_since` let SQLite seek each
    // (site, key) combination; combinations nobody asked for are dropped below. The newest
    // value's raw text comes with `max(period_start)` (SQLite takes a bare column from the
    // row of the one max()), not with every value.
    //
    // Each number travels exactly, and mostly without being printed: as a count of millionths
    // when that count gives back the very same double (figures with up to six decimals, such
    // as money), otherwise as `quote`'s text, which has as many digits as it takes to read back
    // the same double. Printing every double (`quote`, a round trip of decimal conversions)
    // was a third of the query's time.
    let mut sites: Vec<i64> = metrics.iter().map(|(site, _)| *site).collect();
    let mut keys: Vec<&str> = metrics.iter().map(|(_, key)| *key).collect();
    sites.sort_unstable();
    sites.dedup();
    keys.sort_unstable();
    keys.dedup();
    let marks = |n: usize| vec!["?"; n].join(", ");
    let sql = format!(
        "SELECT site_id, metric_key,
                json_group_array(json_array(period_start, start_date,
                    CASE WHEN micros / {MICROS:.1} = value THEN micros END,
                    CASE WHEN micros / {MICROS:.1} = value THEN NULL ELSE quote(value) END)) AS packed,
                max(period_start), raw
         FROM (SELECT *, CAST(round(value * {MICROS:.1}) AS INTEGER) AS micros FROM metric_values
               WHERE user_id = ? AND site_id IN ({}) AND metric_key IN ({}) AND period_start >= ?)
         GROUP BY site_id, metric_key ORDER BY site_id, metric_key",
        marks(sites.len()),
        marks(keys.len())
    );
    // Only `?` marks and a constant are formatted in; every value is bound.
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(user_id);
    for site in &sites {
        query = query.bind(site);
    }
    for key in &keys {
        query = query.bind(*key);
    }
    let rows: Vec<(i64, String, String, i64, String)> = query.bind(since).fetch_all(pool).await?;
    let wanted: std::collections::HashSet<(i64, &str)> = metrics.iter().copied().collect();
    let mut all = Vec::with_capacity(rows.len());
    for (site_id, metric_key, packed, _, latest_raw) in rows {
        if !wanted.contains(&(site_id, metric_key.as_str())) {
            continue;
        }
        let corrupt = |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("packed values: {e}"));
        let packed: Vec<(i64, &str, Option<i64>, Option<&str>)> =
            serde_json::from_str(&packed).map_err(|e| corrupt(&e))?;
        let mut points = Vec::with_capacity(packed.len());
        for (period_start, start_date, micros, text) in packed {
            let value = match (micros, text) {
                // The same division SQLite checked, so the same double.
                (Some(micros), _) => micros as f64 / MICROS,
                (None, Some(text)) => text.parse().map_err(|e| corrupt(&format_args!("value {text:?}: {e}")))?,
                (None, None) => return Err(corrupt(&"a value without a number")),
            };
            points.push((period_start, start_date.to_owned(), value));
        }
        // Aggregates keep no order of their own.
        points.sort_by_key(|point| point.0);
        all.push(Series { site_id, metric_key, points, latest_raw });
    }
    Ok(all)
}

/// The unit values travel in from `values_of` when they can: millionths.
const MICROS: f64 = 1e6;

/// Listed sites matching every word as a prefix (`"rust"* "forum"*`), best first.
pub(crate) const SEARCH_MATCHING: crate::SearchMatching = crate::SearchMatching {
    sql: concat!(
        "SELECT ",
        found_columns!(),
        " FROM listings_fts f JOIN listings l ON l.site_id = f.rowid JOIN sites s ON s.id = l.site_id
         WHERE listings_fts MATCH $1 AND l.listed ORDER BY bm25(listings_fts, 10.0, 4.0, 1.0) LIMIT $2"
    ),
    pattern: |words| words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(" "),
};

/// Enqueues a whole plan in one immediate transaction.
pub(crate) async fn enqueue_jobs(pool: &SqlitePool, jobs: &[NewJob<'_>], now: i64) -> Result<u64, StoreError> {
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

/// Claims due jobs fairly (see `Store::claim_jobs`) in one immediate transaction.
pub(crate) async fn claim_jobs(pool: &SqlitePool, claim: &JobClaim<'_>) -> Result<Vec<Job>, StoreError> {
    // SQLite has one writer at a time: an immediate transaction takes the write lock before
    // it reads, so two claimers can never pick the same rows. A claim moves `not_before` to
    // its lease's end, so held jobs sort after the due ones (SQLite has no HOT updates to
    // keep, unlike PostgreSQL's claims). The due jobs of the periods of the seeds come with
    // them, so that metrics sharing a call are in one batch (see `Store::claim_jobs`).
    //
    // Fair turns, as on PostgreSQL: `users` steps through the users with pending jobs (one
    // index seek each), `candidates` reads at most a batch of each one's due jobs (SQLite has
    // no LATERAL: a correlated `IN` with its own LIMIT), numbered per user; `seeds` takes
    // scheduled jobs before backfills, turn by turn, each turn's users from the one after
    // `after_user` round (see `JobClaim::after_user`); of their periods, `taken` keeps whole
    // periods in the seeds' order while the jobs before stay under the limit
    // (`jobs::whole_periods`). The periods taken are joined on the
    // unique index whole (a row-value `IN` searched it by user and site only: 0.15 s of CPU a
    // claim with 200,000 jobs of one site).
    let due = |t: &str| {
        format!(
            "{t}.state = 'pending' AND {t}.not_before <= $3 AND ({t}.lease_expires IS NULL OR {t}.lease_expires <= $3)"
        )
    };
    let (users, only) = match claim.only {
        Some(_) => ("SELECT $6 AS user_id", "AND j.site_id = $7"),
        None => ("SELECT user_id FROM walk WHERE user_id IS NOT NULL", ""),
    };
    let (due_j, due_s) = (due("j"), due("s"));
    let whole_periods = crate::jobs::whole_periods(&due_s);
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    // Only constant texts are formatted in; every value is bound.
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(format!(
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
    )))
    .bind(claim.owner)
    .bind(claim.lease_until)
    .bind(claim.now)
    .bind(claim.limit)
    .bind(claim.after_user);
    if let Some((user_id, site_id)) = claim.only {
        query = query.bind(user_id).bind(site_id);
    }
    let jobs = query.fetch_all(&mut *tx).await?;
    tx.commit().await?;
    Ok(jobs)
}

/// Completes a batch of jobs, one fence check each, in one immediate transaction.
pub(crate) async fn complete_jobs(
    pool: &SqlitePool,
    completions: &[Completion<'_>],
    now: i64,
) -> Result<Vec<bool>, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let mut committed = Vec::with_capacity(completions.len());
    for Completion { job, result, duration_ms } in completions {
        // The fence check: a claim since ours has incremented it, and then nothing of ours
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
            SqliteStore::write_result_on(&mut tx, &job.slot(), result, *duration_ms, now).await?;
        }
        committed.push(fenced);
    }
    tx.commit().await?;
    Ok(committed)
}

/// One process owns an SQLite database: there is nobody else to tell.
pub(crate) async fn announce(_: &SqliteStore, _: &str) -> Result<(), StoreError> {
    Ok(())
}

/// One process owns an SQLite database: there is nobody else to hear.
pub(crate) async fn changes(_: &SqliteStore) -> Result<Option<tokio::sync::mpsc::Receiver<crate::Heard>>, StoreError> {
    Ok(None)
}

/// The statement pruning `what`: the shared one.
pub(crate) fn prune_sql(what: Pruned) -> &'static str {
    what.sql()
}
