//! Every query both backends run alike, written once: `shared_store!` makes the whole
//! [`Store`] implementation of a backend from these texts (`$N` placeholders, which sqlx's
//! SQLite reads as numbered parameters too), and hands the methods that really differ to the
//! backend's own module (`sqlite.rs`, `postgres.rs`): search, the dashboard's values, and
//! enqueueing, claiming and completing jobs.
//!
//! A macro rather than functions generic over `sqlx::Database`: the bounds those need (an
//! executor for every connection type, `Encode` and `Type` for every bound value) would
//! outweigh the queries, and `sqlx::Any` would lose the backends' fast paths. rustfmt leaves
//! a `macro_rules!` body as it is written: keep its lines within 120 columns by hand (long
//! signatures take two lines: parameters, then the return type).

use crate::text::{clipped, logged_arguments, storable, storable_opt};
use crate::{ApiToken, PgStore, SqliteStore, postgres, sqlite};
use crate::{
    Approval, Attempt, CallPage, Claim, CollectionResult, Completion, FetchedManifest, Found, Heard, Job, JobClaim,
    JobCounts, JobGauges, LAST_USED_PRECISION, LOGGED_ARGUMENTS_BYTES, LOGGED_DETAIL_BYTES, LOGGED_TOOL_NAME_BYTES,
    Listing, McpSession, NewJob, OAuthAttempt, PoolUse, Pruned, Readiness, Retries, SESSION_USE_PRECISION, Sealer,
    Series, Session, SessionInfo, SiteHealth, SiteRecord, Slot, Store, StoreError, StoredValue, ToolCall,
    UnfilledPeriod, User, VaultEntry, Version, VersionSummary, error::conflict,
};

/// A session with the last use the store checks its idle limit against.
#[derive(sqlx::FromRow)]
struct SessionRow {
    #[sqlx(flatten)]
    session: Session,
    last_used_at: i64,
}

/// The owner of an API token, and when the token was last used.
#[derive(sqlx::FromRow)]
struct TokenOwner {
    #[sqlx(flatten)]
    user: User,
    token_id: i64,
    last_used_at: Option<i64>,
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

/// The most (user, site) pairs [`Store::entries_of`] asks for in one query: twice as many
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

/// What a backend's `values_of` returns.
pub(crate) type SiteValues = Result<Vec<Series>, StoreError>;

/// Values as (site, metric key, period start, start date, value, raw), ordered by site, key
/// and period start, as series: one per (site, key), with the newest value's raw text.
pub(crate) fn series(rows: Vec<(i64, String, i64, String, f64, String)>) -> Vec<Series> {
    let mut all: Vec<Series> = Vec::new();
    for (site_id, metric_key, period_start, start_date, value, raw) in rows {
        let point = (period_start, start_date, value);
        match all.last_mut() {
            Some(last) if last.site_id == site_id && last.metric_key == metric_key => {
                last.points.push(point);
                last.latest_raw = raw;
            }
            _ => all.push(Series { site_id, metric_key, points: vec![point], latest_raw: raw }),
        }
    }
    all
}

/// Stores one value, replacing the value of its period key (the same local period, whatever
/// zone it was collected in: its instants become the new ones).
/// Binds: user, site, metric key, granularity, period start, period end, start date, value,
/// raw, collected at, period key, source.
const STORE_VALUE: &str = "INSERT INTO metric_values
         (user_id, site_id, metric_key, granularity, period_start, period_end, start_date, value, raw, collected_at,
          period_key, source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (user_id, site_id, metric_key, period_key) DO UPDATE SET
         value = excluded.value, raw = excluded.raw, collected_at = excluded.collected_at,
         granularity = excluded.granularity, period_start = excluded.period_start, period_end = excluded.period_end,
         start_date = excluded.start_date, source = excluded.source";

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

/// A page of a user's call log, newest first. Binds: user, before (an id), limit, and the
/// longest tool name and arguments read whole: rows logged before fields were bounded are read
/// cut (a name) or without (arguments), so that no page holds more than its rows' bounds.
const TOOL_CALLS_PAGE: &str = "SELECT c.id, c.user_id, c.site_id,
         CASE WHEN length(c.tool) > $4 THEN substr(c.tool, 1, $4) || '…' ELSE c.tool END AS tool,
         c.called_at, c.status, c.duration_ms,
         CASE WHEN length(c.arguments) > $5 THEN NULL ELSE c.arguments END AS arguments,
         c.token_id, t.name AS token_name, c.kind, c.detail
     FROM tool_calls c LEFT JOIN api_tokens t ON t.id = c.token_id AND t.user_id = c.user_id
     WHERE c.user_id = $1 AND c.id < $2 ORDER BY c.id DESC LIMIT $3";

/// The longest tool name and arguments [`TOOL_CALLS_PAGE`] reads whole, in characters (`INT`,
/// as `substr` takes): the bounds the log writes, with room for the note on a cut name.
const READ_WHOLE: (i32, i32) = (LOGGED_TOOL_NAME_BYTES as i32 + 64, LOGGED_ARGUMENTS_BYTES as i32 + 128);

/// Whether an attempt row is of a user who has collected from the site (`$1`) on at least
/// `$4` distinct days: accounts made to make up a health figure's threshold count only once
/// they have collected that long (a backfill's many attempts are all of one day).
macro_rules! established_users {
    () => {
        "user_id IN (SELECT user_id FROM collection_attempts WHERE site_id = $1
                     GROUP BY user_id HAVING count(DISTINCT attempted_at / 86400) >= $4)"
    };
}

/// Every listed site, by name: a search with no words. Binds: limit.
const ALL_LISTED: &str = concat!(
    "SELECT ",
    found_columns!(),
    " FROM listings l JOIN sites s ON s.id = l.site_id WHERE l.listed ORDER BY l.name LIMIT $1"
);

/// `$query` with each value bound in turn: the values read in the order of their `$N`.
macro_rules! bind {
    ($query:expr, $($value:expr),+ $(,)?) => {
        $query$(.bind($value))+
    };
}

/// Runs the `INSERT … RETURNING` `$sql` of one row with `$value`s bound, read as the caller's
/// return type; a unique violation is a [`StoreError::Conflict`] over `$what`.
macro_rules! insert_one {
    ($pool:expr, $what:expr, $sql:expr, $($value:expr),+ $(,)?) => {
        bind!(sqlx::query_as($sql), $($value),+).fetch_one($pool).await.map_err(|e| conflict(e, $what))
    };
}

/// The columns a [`User`] is read from, on a query over `users`.
macro_rules! user_columns {
    () => {
        "id, email, password_hash, time_zone, created_at"
    };
}

/// The columns a [`SiteRecord`] is read from, on a query over `sites s`.
macro_rules! site_columns {
    () => {
        "s.id, s.origin, s.manifest_url, s.manifest, s.etag, s.last_modified, s.fetched_at, s.stale_error"
    };
}

/// Every vault entry with its user's and its site's columns, as [`EntryOfUser`] reads them.
macro_rules! entries_of_users {
    () => {
        concat!(
            "SELECT u.id AS user_id, u.email, u.password_hash, u.time_zone, u.created_at AS user_created, ",
            site_columns!(),
            ", v.credential, v.approved_manifest, v.kept_version
             FROM vault v JOIN users u ON u.id = v.user_id JOIN sites s ON s.id = v.site_id"
        )
    };
}

/// The whole `Store` implementation of the store type `$store` over the sqlx database `$db`,
/// with its dialect's methods from the module `$dialect` (each takes the pool first).
macro_rules! shared_store {
    ($store:ty, $db:ty, $dialect:ident) => {
        impl $store {
            /// Saves a fetched manifest as its site's current one, and as a new version when
            /// it differs from the last; on `conn`, so that it can be part of a larger
            /// transaction.
            async fn save_site_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                fetched: &FetchedManifest<'_>,
                now: i64,
            ) -> Result<SiteRecord, StoreError> {
                let record: SiteRecord = bind!(
                    sqlx::query_as(
                        "INSERT INTO sites (origin, manifest_url, manifest, etag, last_modified, fetched_at)
                         VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT (origin) DO UPDATE SET manifest_url = excluded.manifest_url,
                             manifest = excluded.manifest, etag = excluded.etag, last_modified = excluded.last_modified,
                             fetched_at = excluded.fetched_at, stale_error = NULL
                         RETURNING id, origin, manifest_url, manifest, etag, last_modified, fetched_at, stale_error",
                    ),
                    fetched.origin, fetched.manifest_url, fetched.manifest, fetched.etag, fetched.last_modified, now
                )
                .fetch_one(&mut *conn)
                .await?;
                let latest: Option<String> =
                    sqlx::query_scalar("SELECT manifest FROM site_versions WHERE site_id = $1 ORDER BY id DESC LIMIT 1")
                        .bind(record.id)
                        .fetch_optional(&mut *conn)
                        .await?;
                if latest.as_deref() != Some(record.manifest.as_str()) {
                    // A site's first version says so; a later one's changes are recorded by
                    // whoever compared it with the one before (`describe_version`).
                    let changes = latest.is_none().then_some(r#"["first version"]"#);
                    bind!(
                        sqlx::query(
                            "INSERT INTO site_versions (site_id, manifest, fetched_at, changes) VALUES ($1, $2, $3, $4)"
                        ),
                        record.id, &record.manifest, now, changes
                    )
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(record)
            }

            /// Runs an approval's `sql` (binds: user, site, version), guarded by the version
            /// being the site's current one, and says what it came to.
            async fn decide(&self, sql: &'static str, user_id: i64, site_id: i64, version_id: i64)
                -> Result<Approval, StoreError> {
                let done = bind!(sqlx::query(sql), user_id, site_id, version_id).execute(&self.pool).await?;
                if done.rows_affected() > 0 {
                    return Ok(Approval::Done);
                }
                let sql = "SELECT site_id FROM vault WHERE user_id = $1 AND site_id = $2";
                let in_vault: Option<i64> =
                    bind!(sqlx::query_scalar(sql), user_id, site_id).fetch_optional(&self.pool).await?;
                if in_vault.is_none() {
                    return Ok(Approval::NotInVault);
                }
                let current = self.current_version(site_id).await?;
                Ok(Approval::NotCurrent { current })
            }

            /// Stores one value of `slot` on `conn`, replacing the one of its period key (and,
            /// for an hour, one stored before keys at the same instant).
            async fn store_value_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                slot: &Slot<'_>,
                (value, raw, source): (f64, &str, Option<&str>),
                now: i64,
            ) -> Result<(), StoreError> {
                if slot.granularity == "hour" {
                    bind!(sqlx::query(DELETE_LEGACY_VALUE), slot.user_id, slot.site_id, slot.metric_key, slot.legacy_key())
                        .execute(&mut *conn)
                        .await?;
                }
                let (raw, source) = (crate::storable(raw), storable_opt(source));
                bind!(
                    sqlx::query(STORE_VALUE),
                    slot.user_id, slot.site_id, slot.metric_key, slot.granularity, slot.period_start, slot.period_end,
                    slot.start_date, value, &*raw, now, slot.period_key, source.as_deref()
                )
                .execute(&mut *conn)
                .await?;
                Ok(())
            }

            /// Sets one text column of a user: `sql` binds the text as `$1` and the user as `$2`.
            /// Counts with `count_sql` (`$1` the user) in `tx` after locking the user's row (a
            /// write that changes nothing), so that concurrent inserts for one user are counted
            /// one after the other on both backends and a per-user limit is never passed.
            async fn count_locked(
                tx: &mut sqlx::Transaction<'_, $db>,
                user_id: i64,
                count_sql: &'static str,
            ) -> Result<i64, StoreError> {
                sqlx::query("UPDATE users SET time_zone = time_zone WHERE id = $1").bind(user_id).execute(&mut **tx).await?;
                Ok(sqlx::query_scalar(count_sql).bind(user_id).fetch_one(&mut **tx).await?)
            }

            async fn set_user_text(&self, sql: &'static str, text: &str, user_id: i64) -> Result<(), StoreError> {
                bind!(sqlx::query(sql), text, user_id).execute(&self.pool).await?;
                Ok(())
            }

            /// The one write of a collection result, on `conn`: its value when there is one,
            /// its attempt unless abandoned. Backfills and (on SQLite) fenced job completions
            /// both come through here.
            pub(crate) async fn write_result_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                slot: &Slot<'_>,
                result: &CollectionResult<'_>,
                duration_ms: Option<f64>,
                now: i64,
            ) -> Result<(), StoreError> {
                if let Some((value, raw)) = result.value() {
                    Self::store_value_on(&mut *conn, slot, (value, raw, result.source()), now).await?;
                }
                let Some(attempt) = result.attempt() else { return Ok(()) };
                let (reason, raw) = (storable_opt(attempt.reason), storable_opt(attempt.raw));
                bind!(
                    sqlx::query(LOG_ATTEMPT),
                    slot.user_id, slot.site_id, slot.metric_key, slot.period_start, slot.start_date, now,
                    attempt.outcome.as_str(), reason.as_deref(), raw.as_deref(), attempt.retry_at, duration_ms,
                    slot.period_key
                )
                .execute(&mut *conn)
                .await?;
                Ok(())
            }
        }

        #[async_trait::async_trait]
        impl Store for $store {
            #[tracing::instrument(level = "debug", skip_all)]
            async fn create_user(&self, email: &str, password_hash: &str, time_zone: &str, now: i64)
                -> Result<User, StoreError> {
                let sql = concat!(
                    "INSERT INTO users (email, password_hash, time_zone, created_at) VALUES ($1, $2, $3, $4) RETURNING ",
                    user_columns!()
                );
                insert_one!(&self.pool, "this email", sql, email, password_hash, time_zone, now)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn user_by_email(&self, email: &str) -> Result<Option<User>, StoreError> {
                let sql = concat!("SELECT ", user_columns!(), " FROM users WHERE email = $1");
                Ok(sqlx::query_as(sql).bind(email).fetch_optional(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn user(&self, id: i64) -> Result<Option<User>, StoreError> {
                let sql = concat!("SELECT ", user_columns!(), " FROM users WHERE id = $1");
                Ok(sqlx::query_as(sql).bind(id).fetch_optional(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn set_time_zone(&self, user_id: i64, time_zone: &str) -> Result<(), StoreError> {
                self.set_user_text("UPDATE users SET time_zone = $1 WHERE id = $2", time_zone, user_id).await
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn create_session(&self, token_hash: &str, session: &Session, now: i64) -> Result<(), StoreError> {
                bind!(
                    sqlx::query(
                        "INSERT INTO sessions
                             (token_hash, user_id, csrf_token, created_at, expires_at, last_used_at, idle_seconds)
                         VALUES ($1, $2, $3, $4, $5, $4, $6)",
                    ),
                    token_hash, session.user_id, &session.csrf_token, now, session.expires_at, session.idle_seconds
                )
                .execute(&self.pool)
                .await
                .map_err(|e| conflict(e, "this session"))?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn session(&self, token_hash: &str, now: i64) -> Result<Option<Session>, StoreError> {
                let found: Option<SessionRow> = bind!(
                    sqlx::query_as(
                        "SELECT user_id, csrf_token, expires_at, idle_seconds, last_used_at FROM sessions
                         WHERE token_hash = $1 AND expires_at > $2 AND last_used_at + idle_seconds > $2",
                    ),
                    token_hash, now
                )
                .fetch_optional(&self.pool)
                .await?;
                let Some(SessionRow { session, last_used_at }) = found else { return Ok(None) };
                if now - last_used_at >= SESSION_USE_PRECISION {
                    bind!(sqlx::query("UPDATE sessions SET last_used_at = $1 WHERE token_hash = $2"), now, token_hash)
                        .execute(&self.pool)
                        .await?;
                }
                Ok(Some(session))
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
                sqlx::query("DELETE FROM sessions WHERE token_hash = $1").bind(token_hash).execute(&self.pool).await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn sessions(&self, user_id: i64, current: &str, now: i64) -> Result<Vec<SessionInfo>, StoreError> {
                let sessions = bind!(
                    sqlx::query_as(
                        "SELECT created_at, last_used_at, expires_at, token_hash = $2 AS current FROM sessions
                         WHERE user_id = $1 AND expires_at > $3 AND last_used_at + idle_seconds > $3
                         ORDER BY created_at DESC",
                    ),
                    user_id, current, now
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(sessions)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn delete_sessions(&self, user_id: i64, keep: &str) -> Result<u64, StoreError> {
                let done = bind!(
                    sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2"),
                    user_id, keep
                )
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn trim_sessions(&self, user_id: i64, keep: i64) -> Result<u64, StoreError> {
                // The least recently used go (the token hash breaks ties).
                let done = bind!(
                    sqlx::query(
                        "DELETE FROM sessions WHERE token_hash IN (
                             SELECT token_hash FROM sessions WHERE user_id = $1
                             ORDER BY last_used_at DESC, created_at DESC, token_hash LIMIT $3 OFFSET $2)"
                    ),
                    user_id, keep, i64::MAX
                )
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn set_password_hash(&self, user_id: i64, password_hash: &str) -> Result<(), StoreError> {
                self.set_user_text("UPDATE users SET password_hash = $1 WHERE id = $2", password_hash, user_id).await
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn delete_user(&self, user_id: i64) -> Result<bool, StoreError> {
                let mut tx = self.pool.begin().await?;
                // The account first: its cascade deletes the jobs, waiting for any completion
                // holding one, so that the values and attempts deleted next include what it
                // wrote (on PostgreSQL they have no foreign keys to cascade through).
                let done = sqlx::query("DELETE FROM users WHERE id = $1").bind(user_id).execute(&mut *tx).await?;
                for sql in ["DELETE FROM collection_attempts WHERE user_id = $1", "DELETE FROM metric_values WHERE user_id = $1"] {
                    sqlx::query(sql).bind(user_id).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(done.rows_affected() > 0)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn purge_sessions(&self, now: i64, limit: i64) -> Result<u64, StoreError> {
                let done = bind!(
                    sqlx::query(
                        "DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions
                             WHERE expires_at <= $1 OR last_used_at + idle_seconds <= $1 LIMIT $2)",
                    ),
                    now, limit
                )
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn create_api_token(&self, user_id: i64, name: &str, token_hash: &str, now: i64, limit: i64)
                -> Result<ApiToken, StoreError> {
                let mut tx = self.pool.begin().await?;
                let count_sql = "SELECT count(*) FROM api_tokens WHERE user_id = $1";
                if Self::count_locked(&mut tx, user_id, count_sql).await? >= limit {
                    return Err(StoreError::AtLimit { what: "API tokens", limit });
                }
                let sql = "INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4)
                           RETURNING id, user_id, name, created_at, last_used_at";
                let token = insert_one!(&mut *tx, "this token", sql, user_id, name, token_hash, now)?;
                tx.commit().await?;
                Ok(token)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn user_by_api_token(&self, token_hash: &str, now: i64) -> Result<Option<(User, i64)>, StoreError> {
                let found: Option<TokenOwner> = sqlx::query_as(
                    "SELECT u.id, u.email, u.password_hash, u.time_zone, u.created_at, t.id AS token_id, t.last_used_at
                     FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1",
                )
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await?;
                let Some(TokenOwner { user, token_id, last_used_at }) = found else { return Ok(None) };
                if last_used_at.is_none_or(|at| now - at >= LAST_USED_PRECISION) {
                    bind!(sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2"), now, token_hash)
                        .execute(&self.pool)
                        .await?;
                }
                Ok(Some((user, token_id)))
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn api_tokens(&self, user_id: i64) -> Result<Vec<ApiToken>, StoreError> {
                let sql =
                    "SELECT id, user_id, name, created_at, last_used_at FROM api_tokens WHERE user_id = $1 ORDER BY id";
                Ok(sqlx::query_as(sql).bind(user_id).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn delete_api_token(&self, user_id: i64, id: i64) -> Result<bool, StoreError> {
                let done = bind!(sqlx::query("DELETE FROM api_tokens WHERE id = $1 AND user_id = $2"), id, user_id)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn delete_api_tokens(&self, user_id: i64) -> Result<u64, StoreError> {
                let done = sqlx::query("DELETE FROM api_tokens WHERE user_id = $1").bind(user_id).execute(&self.pool).await?;
                Ok(done.rows_affected())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn save_site(&self, fetched: &FetchedManifest<'_>, now: i64) -> Result<SiteRecord, StoreError> {
                let mut tx = self.pool.begin().await?;
                let record = Self::save_site_on(&mut tx, fetched, now).await?;
                tx.commit().await?;
                Ok(record)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn add_to_vault(&self, user_id: i64, site_id: i64, now: i64) -> Result<(), StoreError> {
                bind!(
                    sqlx::query(
                        "INSERT INTO vault (user_id, site_id, added_at, approved_manifest)
                         SELECT $1, $2, $3, manifest FROM sites WHERE id = $2",
                    ),
                    user_id, site_id, now
                )
                .execute(&self.pool)
                .await
                .map_err(|e| conflict(e, "this site in your vault"))?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn add_site(&self, fetched: &FetchedManifest<'_>, user_id: i64, seal: Option<Sealer<'_>>, now: i64)
                -> Result<SiteRecord, StoreError> {
                let mut tx = self.pool.begin().await?;
                let record = Self::save_site_on(&mut tx, fetched, now).await?;
                let credential = seal.map(|seal| seal(record.id));
                bind!(
                    sqlx::query(
                        "INSERT INTO vault (user_id, site_id, added_at, approved_manifest, credential)
                         VALUES ($1, $2, $3, $4, $5)",
                    ),
                    user_id, record.id, now, &record.manifest, credential
                )
                .execute(&mut *tx)
                .await
                .map_err(|e| conflict(e, "this site in your vault"))?;
                tx.commit().await?;
                Ok(record)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn vault(&self, user_id: i64) -> Result<Vec<SiteRecord>, StoreError> {
                let sql = concat!(
                    "SELECT ",
                    site_columns!(),
                    " FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 ORDER BY v.added_at, s.id"
                );
                Ok(sqlx::query_as(sql).bind(user_id).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn vault_entry(&self, user_id: i64, site_id: i64) -> Result<Option<VaultEntry>, StoreError> {
                let sql = concat!(
                    "SELECT ",
                    site_columns!(),
                    ", v.credential, v.approved_manifest, v.kept_version
                     FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 AND v.site_id = $2"
                );
                Ok(bind!(sqlx::query_as(sql), user_id, site_id).fetch_optional(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn set_credential(&self, user_id: i64, site_id: i64, credential: Option<&[u8]>)
                -> Result<bool, StoreError> {
                let done = bind!(
                    sqlx::query("UPDATE vault SET credential = $1 WHERE user_id = $2 AND site_id = $3"),
                    credential, user_id, site_id
                )
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected() > 0)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn remove_from_vault(&self, user_id: i64, site_id: i64) -> Result<bool, StoreError> {
                let mut tx = self.pool.begin().await?;
                let done = bind!(sqlx::query("DELETE FROM vault WHERE user_id = $1 AND site_id = $2"), user_id, site_id)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 0 {
                    // Ended here rather than by dropping it: a dropped transaction's rollback is
                    // queued behind the connection's return, and the next writer on a busy
                    // machine found the in-memory SQLite database still locked.
                    tx.rollback().await?;
                    return Ok(false);
                }
                // What was collected for the user from the site goes with it (the call log
                // stays: it is the user's record of what their AI clients did).
                for sql in [
                    "DELETE FROM jobs WHERE user_id = $1 AND site_id = $2",
                    "DELETE FROM collection_attempts WHERE user_id = $1 AND site_id = $2",
                    "DELETE FROM metric_values WHERE user_id = $1 AND site_id = $2",
                ] {
                    bind!(sqlx::query(sql), user_id, site_id).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(true)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn approve(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval, StoreError> {
                // The version must still be the site's current one in the same statement: a
                // user approves the text they were shown, never one saved since.
                let sql = "UPDATE vault SET approved_manifest =
                               (SELECT manifest FROM site_versions WHERE id = $3 AND site_id = $2),
                           kept_version = NULL
                           WHERE user_id = $1 AND site_id = $2
                             AND $3 = (SELECT max(id) FROM site_versions WHERE site_id = $2)";
                self.decide(sql, user_id, site_id, version_id).await
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn keep_approved(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval, StoreError> {
                let sql = "UPDATE vault SET kept_version = $3
                           WHERE user_id = $1 AND site_id = $2
                             AND $3 = (SELECT max(id) FROM site_versions WHERE site_id = $2)";
                self.decide(sql, user_id, site_id, version_id).await
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn current_version(&self, site_id: i64) -> Result<Option<Version>, StoreError> {
                let sql =
                    "SELECT id, fetched_at, manifest FROM site_versions WHERE site_id = $1 ORDER BY id DESC LIMIT 1";
                Ok(sqlx::query_as(sql).bind(site_id).fetch_optional(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn current_versions(&self, user_id: i64) -> Result<Vec<(i64, i64)>, StoreError> {
                let sql = "SELECT v.site_id, max(sv.id) FROM vault v JOIN site_versions sv ON sv.site_id = v.site_id
                           WHERE v.user_id = $1 GROUP BY v.site_id";
                Ok(sqlx::query_as(sql).bind(user_id).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn site_users(&self, site_id: i64) -> Result<Vec<i64>, StoreError> {
                let sql = "SELECT user_id FROM vault WHERE site_id = $1 ORDER BY user_id";
                Ok(sqlx::query_scalar(sql).bind(site_id).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn create_oauth_attempt(&self, attempt: &OAuthAttempt, keep: i64, now: i64)
                -> Result<(), StoreError> {
                let mut tx = self.pool.begin().await?;
                sqlx::query("DELETE FROM oauth_attempts WHERE expires_at < $1").bind(now).execute(&mut *tx).await?;
                bind!(
                    sqlx::query(
                        "INSERT INTO oauth_attempts (state_hash, user_id, site_id, sealed, created_at, expires_at)
                         VALUES ($1, $2, $3, $4, $5, $6)",
                    ),
                    &attempt.state_hash, attempt.user_id, attempt.site_id, &attempt.sealed, attempt.created_at,
                    attempt.expires_at
                )
                .execute(&mut *tx)
                .await?;
                bind!(
                    sqlx::query(
                        "DELETE FROM oauth_attempts WHERE user_id = $1 AND state_hash NOT IN
                         (SELECT state_hash FROM oauth_attempts WHERE user_id = $1
                          ORDER BY created_at DESC, state_hash LIMIT $2)",
                    ),
                    attempt.user_id, keep
                )
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn take_oauth_attempt(&self, state_hash: &str, user_id: i64, now: i64)
                -> Result<Option<OAuthAttempt>, StoreError> {
                let taken: Option<OAuthAttempt> = bind!(
                    sqlx::query_as(
                        "DELETE FROM oauth_attempts WHERE state_hash = $1 AND user_id = $2
                         RETURNING state_hash, user_id, site_id, sealed, created_at, expires_at",
                    ),
                    state_hash, user_id
                )
                .fetch_optional(&self.pool)
                .await?;
                Ok(taken.filter(|attempt| attempt.expires_at >= now))
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn advance_approvals(&self, site_id: i64, previous: &str, judged: &str)
                -> Result<Vec<i64>, StoreError> {
                // `judged` itself, not whatever the site's row holds by now: another process may
                // have saved a newer text, which nobody has judged for these users.
                let sql = "UPDATE vault SET approved_manifest = $3
                           WHERE site_id = $1 AND approved_manifest = $2 RETURNING user_id";
                Ok(bind!(sqlx::query_scalar(sql), site_id, previous, judged).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn versions(&self, site_id: i64) -> Result<Vec<Version>, StoreError> {
                let sql = "SELECT id, fetched_at, manifest FROM site_versions WHERE site_id = $1 ORDER BY id DESC";
                Ok(sqlx::query_as(sql).bind(site_id).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn version_summaries(&self, site_id: i64, approved: &str)
                -> Result<Vec<VersionSummary>, StoreError> {
                let sql = "SELECT id, fetched_at, changes, manifest = $2 AS approved FROM site_versions
                           WHERE site_id = $1 ORDER BY id DESC";
                Ok(bind!(sqlx::query_as(sql), site_id, approved).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn describe_version(&self, site_id: i64, manifest: &str, changes: &str) -> Result<(), StoreError> {
                let sql = "UPDATE site_versions SET changes = $3
                           WHERE site_id = $1 AND manifest = $2 AND changes IS NULL";
                bind!(sqlx::query(sql), site_id, manifest, changes).execute(&self.pool).await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn prune_versions(&self, site_id: Option<i64>, keep: i64) -> Result<u64, StoreError> {
                // The newest `keep` of each site by rank; an approved text is compared with the
                // approvals of the same site only (through the vault's site index).
                let sql = "DELETE FROM site_versions WHERE id IN (
                               SELECT id FROM (
                                   SELECT sv.id, sv.site_id, sv.manifest,
                                          row_number() OVER (PARTITION BY sv.site_id ORDER BY sv.id DESC) AS newer
                                   FROM site_versions sv WHERE $1 IS NULL OR sv.site_id = $1
                               ) ranked
                               WHERE ranked.newer > $2
                                 AND NOT EXISTS (SELECT 1 FROM vault v WHERE v.site_id = ranked.site_id
                                                 AND (v.kept_version = ranked.id OR v.approved_manifest = ranked.manifest)))";
                let done = bind!(sqlx::query(sql), site_id, keep).execute(&self.pool).await?;
                Ok(done.rows_affected())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn mark_stale(&self, site_id: i64, error: &str) -> Result<(), StoreError> {
                bind!(sqlx::query("UPDATE sites SET stale_error = $1 WHERE id = $2"), &*storable(error), site_id)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn touch_site(&self, site_id: i64, now: i64) -> Result<(), StoreError> {
                bind!(sqlx::query("UPDATE sites SET fetched_at = $1, stale_error = NULL WHERE id = $2"), now, site_id)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn site(&self, id: i64) -> Result<Option<SiteRecord>, StoreError> {
                let sql = concat!("SELECT ", site_columns!(), " FROM sites s WHERE s.id = $1");
                Ok(sqlx::query_as(sql).bind(id).fetch_optional(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn sites_due(&self, before: i64, limit: i64) -> Result<Vec<SiteRecord>, StoreError> {
                let sql = concat!(
                    "SELECT ",
                    site_columns!(),
                    " FROM sites s WHERE s.fetched_at < $1 ORDER BY s.fetched_at LIMIT $2"
                );
                Ok(bind!(sqlx::query_as(sql), before, limit).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn create_claim(&self, user_id: i64, origin: &str, token: &str, now: i64, limit: i64)
                -> Result<Claim, StoreError> {
                let mut tx = self.pool.begin().await?;
                // Pending: not verified, so no listing stands on it.
                let count_sql = "SELECT count(*) FROM claims c WHERE c.user_id = $1
                                 AND NOT EXISTS (SELECT 1 FROM listings l WHERE l.claim_id = c.id)";
                if Self::count_locked(&mut tx, user_id, count_sql).await? >= limit {
                    return Err(StoreError::AtLimit { what: "pending claims", limit });
                }
                let sql = "INSERT INTO claims (user_id, origin, token, created_at) VALUES ($1, $2, $3, $4)
                           RETURNING id, user_id, origin, token, created_at";
                let claim = insert_one!(&mut *tx, "a claim on this origin", sql, user_id, origin, token, now)?;
                tx.commit().await?;
                Ok(claim)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn delete_pending_claim(&self, user_id: i64, id: i64) -> Result<bool, StoreError> {
                let done = bind!(
                    sqlx::query(
                        "DELETE FROM claims WHERE id = $1 AND user_id = $2
                         AND NOT EXISTS (SELECT 1 FROM listings l WHERE l.claim_id = claims.id)"
                    ),
                    id, user_id
                )
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected() > 0)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn claims(&self, user_id: i64) -> Result<Vec<Claim>, StoreError> {
                let sql = "SELECT id, user_id, origin, token, created_at FROM claims WHERE user_id = $1 ORDER BY id";
                Ok(sqlx::query_as(sql).bind(user_id).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn claims_on(&self, origin: &str) -> Result<Vec<Claim>, StoreError> {
                let sql = "SELECT id, user_id, origin, token, created_at FROM claims WHERE origin = $1 ORDER BY id";
                Ok(sqlx::query_as(sql).bind(origin).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn save_listing(&self, listing: &Listing) -> Result<(), StoreError> {
                bind!(
                    sqlx::query(
                        "INSERT INTO listings
                             (site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT (site_id) DO UPDATE SET claim_id = excluded.claim_id, listed = excluded.listed,
                             suspended_reason = excluded.suspended_reason, name = excluded.name,
                             description = excluded.description, tools = excluded.tools, verified_at = excluded.verified_at",
                    ),
                    listing.site_id, listing.claim_id, listing.listed,
                    storable_opt(listing.suspended_reason.as_deref()), storable(&listing.name),
                    storable(&listing.description), storable(&listing.tools), listing.verified_at
                )
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn listing(&self, site_id: i64) -> Result<Option<Listing>, StoreError> {
                let sql = "SELECT site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at
                           FROM listings WHERE site_id = $1";
                Ok(sqlx::query_as(sql).bind(site_id).fetch_optional(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn claim_listing(&self, claim_id: i64) -> Result<Option<Listing>, StoreError> {
                let sql = "SELECT site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at
                           FROM listings WHERE claim_id = $1";
                Ok(sqlx::query_as(sql).bind(claim_id).fetch_optional(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn search(&self, query: &str, limit: i64) -> Result<Vec<Found>, StoreError> {
                let words = crate::search_words(query);
                let found = if words.is_empty() {
                    sqlx::query_as(ALL_LISTED).bind(limit).fetch_all(&self.pool).await?
                } else {
                    let matching = $dialect::SEARCH_MATCHING;
                    bind!(sqlx::query_as(matching.sql), (matching.pattern)(&words), limit).fetch_all(&self.pool).await?
                };
                Ok(found)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn record_result(&self, slot: &Slot<'_>, result: &CollectionResult<'_>, now: i64)
                -> Result<(), StoreError> {
                let mut tx = self.pool.begin().await?;
                Self::write_result_on(&mut tx, slot, result, None, now).await?;
                tx.commit().await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn retries(&self, slot: &Slot<'_>) -> Result<Retries, StoreError> {
                let (failures, last_at, retry_at) = bind!(
                    sqlx::query_as(concat!(
                        "SELECT count(*), max(attempted_at), max(retry_at) FROM collection_attempts
                         WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND outcome = 'retry' AND ",
                        attempt_of_slot!()
                    )),
                    slot.user_id, slot.site_id, slot.metric_key, slot.period_key, slot.period_start
                )
                .fetch_one(&self.pool)
                .await?;
                Ok(Retries { failures, last_at, retry_at })
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn values(&self, user_id: i64, site_id: i64, metric_key: &str, starts: std::ops::Range<i64>)
                -> Result<Vec<StoredValue>, StoreError> {
                let values = bind!(
                    sqlx::query_as(
                        "SELECT metric_key, granularity, period_start, period_end, start_date, period_key, value, raw, collected_at,
                                source
                         FROM metric_values
                         WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND period_start >= $4 AND period_start < $5
                         ORDER BY period_start",
                    ),
                    user_id, site_id, metric_key, starts.start, starts.end
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(values)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn attempts(&self, user_id: i64, site_id: i64, limit: i64) -> Result<Vec<Attempt>, StoreError> {
                let attempts = bind!(
                    sqlx::query_as(
                        "SELECT metric_key, start_date, attempted_at, outcome, reason, raw, retry_at FROM collection_attempts
                         WHERE user_id = $1 AND site_id = $2 ORDER BY id DESC LIMIT $3",
                    ),
                    user_id, site_id, limit
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(attempts)
            }

            #[tracing::instrument(level = "debug", skip(self))]
            async fn unfilled_periods(&self, user_id: i64, site_id: i64, metric_key: &str, starts: std::ops::Range<i64>)
                -> Result<Vec<UnfilledPeriod>, StoreError> {
                // Each period's latest attempt, unless the period has a value (of its key, or,
                // for an attempt logged before keys, of its start).
                let unfilled = bind!(
                    sqlx::query_as(
                        "SELECT period_start, start_date, period_key, attempted_at, outcome, reason, retry_at
                         FROM (
                             SELECT a.*, row_number() OVER (PARTITION BY COALESCE(a.period_key, a.start_date || '@' || a.period_start)
                                                            ORDER BY a.id DESC) AS newest
                             FROM collection_attempts a
                             WHERE a.user_id = $1 AND a.site_id = $2 AND a.metric_key = $3 AND a.period_start >= $4
                               AND a.period_start < $5
                         ) latest
                         WHERE newest = 1 AND outcome <> 'stored' AND NOT EXISTS (
                             SELECT 1 FROM metric_values v
                             WHERE v.user_id = $1 AND v.site_id = $2 AND v.metric_key = $3
                               AND (v.period_key = latest.period_key
                                    OR (latest.period_key IS NULL AND v.period_start = latest.period_start))
                         )
                         ORDER BY period_start LIMIT $6",
                    ),
                    user_id, site_id, metric_key, starts.start, starts.end, crate::UNFILLED_LIMIT
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(unfilled)
            }

            #[tracing::instrument(level = "debug", skip(self))]
            async fn site_health(&self, site_id: i64, since: i64, min_users: i64, min_days: i64)
                -> Result<SiteHealth, StoreError> {
                let outcomes = bind!(
                    sqlx::query_as(
                        concat!(
                            "SELECT metric_key, outcome, count(*) AS attempts, count(DISTINCT user_id) AS users
                             FROM collection_attempts WHERE site_id = $1 AND attempted_at >= $2 AND ",
                            established_users!(),
                            " GROUP BY metric_key, outcome HAVING count(DISTINCT user_id) >= $3
                             ORDER BY metric_key, outcome"
                        ),
                    ),
                    site_id, since, min_users, min_days
                )
                .fetch_all(&self.pool)
                .await?;
                let reasons = bind!(
                    sqlx::query_as(
                        concat!(
                            "SELECT metric_key, reason, count(*) AS attempts, count(DISTINCT user_id) AS users
                             FROM collection_attempts WHERE site_id = $1 AND attempted_at >= $2 AND reason IS NOT NULL
                               AND ",
                            established_users!(),
                            " GROUP BY metric_key, reason HAVING count(DISTINCT user_id) >= $3
                             ORDER BY metric_key, attempts DESC, reason LIMIT 200"
                        ),
                    ),
                    site_id, since, min_users, min_days
                )
                .fetch_all(&self.pool)
                .await?;
                // Nearest-rank percentiles with window functions, which both backends have: the
                // smallest duration whose rank reaches the share of the calls.
                let latencies = bind!(
                    sqlx::query_as(concat!(
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
                    )),
                    site_id, since, min_users, min_days
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(SiteHealth { outcomes, reasons, latencies }.coarsened())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn all_vault_entries(&self) -> Result<Vec<(User, VaultEntry)>, StoreError> {
                let sql = concat!(entries_of_users!(), " ORDER BY u.id, s.id");
                let rows: Vec<EntryOfUser> = sqlx::query_as(sql).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(EntryOfUser::into_pair).collect())
            }

            #[tracing::instrument(level = "debug", skip_all, fields(pairs = pairs.len()))]
            async fn entries_of(&self, pairs: &[(i64, i64)]) -> Result<Vec<(User, VaultEntry)>, StoreError> {
                let mut found = Vec::new();
                for chunk in pairs.chunks(ENTRIES_AT_ONCE) {
                    let asked: std::collections::HashSet<&(i64, i64)> = chunk.iter().collect();
                    let (users, sites) = distinct_ids(chunk);
                    // Numbered marks, which both backends read: the users' ids, then the sites'.
                    let marks = |from: usize, n: usize| (from..from + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
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
                    let rows = query.fetch_all(&self.pool).await?;
                    // The lists match every user with every site: keep the pairs asked for.
                    found.extend(
                        rows.into_iter()
                            .map(EntryOfUser::into_pair)
                            .filter(|(user, entry)| asked.contains(&(user.id, entry.site.id))),
                    );
                }
                Ok(found)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn slot_settled(&self, slot: &Slot<'_>) -> Result<bool, StoreError> {
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
                    slot.user_id, slot.site_id, slot.metric_key, slot.period_key, slot.period_start, slot.legacy_key()
                )
                .fetch_one(&self.pool)
                .await?;
                Ok(settled > 0)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn vault_entries(&self, user_id: i64) -> Result<Vec<VaultEntry>, StoreError> {
                let sql = concat!(
                    "SELECT ",
                    site_columns!(),
                    ", v.credential, v.approved_manifest, v.kept_version
                     FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 ORDER BY v.added_at, s.id"
                );
                Ok(sqlx::query_as(sql).bind(user_id).fetch_all(&self.pool).await?)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn log_arguments(&self, user_id: i64) -> Result<bool, StoreError> {
                let keep: Option<bool> = sqlx::query_scalar("SELECT log_arguments FROM users WHERE id = $1")
                    .bind(user_id)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(keep.unwrap_or(false))
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn set_log_arguments(&self, user_id: i64, keep: bool) -> Result<(), StoreError> {
                bind!(sqlx::query("UPDATE users SET log_arguments = $1 WHERE id = $2"), keep, user_id)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn log_tool_calls(&self, calls: &[ToolCall]) -> Result<(), StoreError> {
                let mut tx = self.pool.begin().await?;
                for call in calls {
                    let tool = clipped(&call.tool, LOGGED_TOOL_NAME_BYTES);
                    let (tool, status) = (storable(&tool).into_owned(), storable(&call.status));
                    let arguments = call.arguments.as_deref().map(logged_arguments);
                    let arguments = storable_opt(arguments.as_deref());
                    let detail = call.detail.as_deref().map(|detail| clipped(detail, LOGGED_DETAIL_BYTES));
                    let (kind, detail) = (storable(&call.kind), storable_opt(detail.as_deref()));
                    bind!(
                        sqlx::query(
                            "INSERT INTO tool_calls (user_id, site_id, tool, called_at, status, duration_ms, arguments,
                                                     token_id, kind, detail)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                        ),
                        call.user_id, call.site_id, tool.as_str(), call.called_at, &*status, call.duration_ms,
                        arguments.as_deref(), call.token_id, &*kind, detail.as_deref()
                    )
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn tool_calls(&self, user_id: i64, page: CallPage) -> Result<Vec<ToolCall>, StoreError> {
                let calls = bind!(
                    sqlx::query_as(TOOL_CALLS_PAGE),
                    user_id, page.before.unwrap_or(i64::MAX), page.limit, READ_WHOLE.0, READ_WHOLE.1
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(calls)
            }

            #[tracing::instrument(level = "debug", skip_all, fields(values = values.len()))]
            async fn store_values(&self, values: &[(Slot<'_>, f64, &str)], now: i64) -> Result<(), StoreError> {
                let mut tx = self.pool.begin().await?;
                for (slot, value, raw) in values {
                    Self::store_value_on(&mut tx, slot, (*value, raw, None), now).await?;
                }
                tx.commit().await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all, fields(metrics = metrics.len()))]
            async fn values_of(&self, user_id: i64, metrics: &[(i64, &str)], since: i64)
                -> Result<Vec<Series>, StoreError> {
                $dialect::values_of(&self.pool, user_id, metrics, since).await
            }

            #[tracing::instrument(level = "debug", skip_all, fields(jobs = jobs.len()))]
            async fn enqueue_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64, StoreError> {
                $dialect::enqueue_jobs(&self.pool, jobs, now).await
            }

            #[tracing::instrument(level = "debug", skip_all, fields(limit = claim.limit))]
            async fn claim_jobs(&self, claim: &JobClaim<'_>) -> Result<Vec<Job>, StoreError> {
                $dialect::claim_jobs(&self.pool, claim).await
            }

            #[tracing::instrument(level = "debug", skip_all, fields(completions = completions.len()))]
            async fn complete_jobs(&self, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>, StoreError> {
                $dialect::complete_jobs(&self.pool, completions, now).await
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn job_counts(&self) -> Result<JobCounts, StoreError> {
                let (pending, done, failed, reclaimed, max_fence) = sqlx::query_as(
                    "SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'done'),
                            count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE fence > 1),
                            COALESCE(max(fence), 0)
                     FROM jobs",
                )
                .fetch_one(&self.pool)
                .await?;
                Ok(JobCounts { pending, done, failed, reclaimed, max_fence })
            }

            #[tracing::instrument(level = "debug", skip(self))]
            async fn pending_jobs(&self, user_id: i64, site_id: i64) -> Result<i64, StoreError> {
                let pending = bind!(
                    sqlx::query_scalar(
                        "SELECT count(*) FROM jobs WHERE user_id = $1 AND site_id = $2 AND state = 'pending'"
                    ),
                    user_id, site_id
                )
                .fetch_one(&self.pool)
                .await?;
                Ok(pending)
            }

            #[tracing::instrument(level = "debug", skip(self))]
            async fn pending_backfills(&self, user_id: i64) -> Result<i64, StoreError> {
                let pending = bind!(
                    sqlx::query_scalar("SELECT count(*) FROM jobs WHERE user_id = $1 AND state = 'pending' AND kind = $2"),
                    user_id, crate::JobKind::Backfill.as_i64()
                )
                .fetch_one(&self.pool)
                .await?;
                Ok(pending)
            }

            #[tracing::instrument(level = "debug", skip(self))]
            async fn release_jobs(&self, owner: &str, now: i64) -> Result<u64, StoreError> {
                let released = bind!(
                    sqlx::query(
                        "UPDATE jobs SET lease_owner = NULL, lease_expires = NULL, fence = fence + 1,
                             not_before = $2, updated_at = $2
                         WHERE state = 'pending' AND lease_owner = $1"
                    ),
                    owner, now
                )
                .execute(&self.pool)
                .await?;
                Ok(released.rows_affected())
            }

            async fn readiness(&self) -> Result<Readiness, StoreError> {
                let applied: i64 =
                    sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success")
                        .fetch_one(&self.pool)
                        .await?;
                let known = crate::migrations::latest();
                Ok(if applied >= known { Readiness::Ready } else { Readiness::Behind { applied, known } })
            }

            async fn job_gauges(&self, now: i64, overdue_before: i64) -> Result<JobGauges, StoreError> {
                let (pending, claimed, overdue) = bind!(
                    sqlx::query_as(
                        "SELECT count(*), count(*) FILTER (WHERE lease_expires > $1),
                                count(*) FILTER (WHERE not_before < $2 AND (lease_expires IS NULL OR lease_expires <= $1))
                         FROM jobs WHERE state = 'pending'"
                    ),
                    now, overdue_before
                )
                .fetch_one(&self.pool)
                .await?;
                Ok(JobGauges { pending, claimed, overdue })
            }

            fn pool_use(&self) -> PoolUse {
                PoolUse::of(&self.pool)
            }

            #[tracing::instrument(level = "debug", skip(self))]
            async fn prune(&self, what: Pruned, before: i64, limit: i64) -> Result<u64, StoreError> {
                let done = bind!(sqlx::query($dialect::prune_sql(what)), before, limit).execute(&self.pool).await?;
                Ok(done.rows_affected())
            }

            async fn announce(&self, change: &str) -> Result<(), StoreError> {
                $dialect::announce(self, change).await
            }

            async fn changes(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Heard>>, StoreError> {
                $dialect::changes(self).await
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn keep_mcp_session(&self, id: &str, session: &McpSession, now: i64) -> Result<(), StoreError> {
                bind!(
                    sqlx::query(
                        "INSERT INTO mcp_sessions (id, user_id, state, created_at, used_at) VALUES ($1, $2, $3, $4, $4 * 1000)
                         ON CONFLICT (id) DO UPDATE SET user_id = COALESCE(excluded.user_id, mcp_sessions.user_id),
                             state = COALESCE(excluded.state, mcp_sessions.state)"
                    ),
                    id, session.user_id, session.state.as_deref(), now
                )
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn mcp_session(&self, id: &str) -> Result<Option<McpSession>, StoreError> {
                let found = sqlx::query_as("SELECT user_id, state FROM mcp_sessions WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(found)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn delete_mcp_session(&self, id: &str) -> Result<(), StoreError> {
                sqlx::query("DELETE FROM mcp_sessions WHERE id = $1").bind(id).execute(&self.pool).await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn touch_mcp_session(&self, id: &str, now_ms: i64) -> Result<(), StoreError> {
                bind!(sqlx::query("UPDATE mcp_sessions SET used_at = $1 WHERE id = $2"), now_ms, id)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            #[tracing::instrument(level = "debug", skip(self))]
            async fn trim_mcp_sessions(&self, user_id: i64, keep: i64) -> Result<Vec<String>, StoreError> {
                // The least recently used go; the id breaks ties, so that every process agrees.
                let ended = bind!(
                    sqlx::query_scalar(
                        "DELETE FROM mcp_sessions WHERE id IN (
                             SELECT id FROM mcp_sessions WHERE user_id = $1
                             ORDER BY used_at DESC, id DESC LIMIT $3 OFFSET $2)
                         RETURNING id"
                    ),
                    user_id, keep, i64::MAX
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(ended)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn key_check(&self) -> Result<Option<Vec<u8>>, StoreError> {
                let sealed = sqlx::query_scalar("SELECT sealed FROM key_check WHERE id = 1")
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(sealed)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn keep_key_check(&self, sealed: &[u8], now: i64) -> Result<Vec<u8>, StoreError> {
                bind!(
                    sqlx::query(
                        "INSERT INTO key_check (id, sealed, created_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING"
                    ),
                    sealed, now
                )
                .execute(&self.pool)
                .await?;
                let kept = sqlx::query_scalar("SELECT sealed FROM key_check WHERE id = 1").fetch_one(&self.pool).await?;
                Ok(kept)
            }

            #[tracing::instrument(level = "debug", skip_all)]
            async fn oldest_credential(&self) -> Result<Option<(i64, i64, Vec<u8>)>, StoreError> {
                let found = sqlx::query_as(
                    "SELECT user_id, site_id, credential FROM vault WHERE credential IS NOT NULL
                     ORDER BY added_at, user_id, site_id LIMIT 1",
                )
                .fetch_optional(&self.pool)
                .await?;
                Ok(found)
            }
        }
    };
}

shared_store!(SqliteStore, sqlx::Sqlite, sqlite);
shared_store!(PgStore, sqlx::Postgres, postgres);
