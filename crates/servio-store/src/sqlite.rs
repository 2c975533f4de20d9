//! The SQLite backend: one embedded file, WAL journal, foreign keys on.

use std::str::FromStr;

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow};

use crate::{
    ApiToken, Attempt, Claim, FetchedManifest, Found, LAST_USED_PRECISION, Listing, Retries, SESSION_USE_PRECISION,
    Session, SiteRecord, Slot, Store, StoreError, StoredValue, ToolCall, User, VaultEntry, Version, conflict,
    search_words, session_sql,
};
use crate::{Attempted, Completion, Job, JobClaim, JobCounts, JobResult, NewJob, OAuthAttempt, Sealer};

/// The store in SQLite.
pub struct SqliteStore {
    pool: SqlitePool,
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
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;
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
        return Err(StoreError::Io(format!("creating {}: {e}", database.display())));
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = database.as_os_str().to_owned();
        name.push(suffix);
        let path = std::path::PathBuf::from(name);
        if path.exists() {
            private(&path).map_err(|e| StoreError::Io(format!("restricting {}: {e}", path.display())))?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn private_files(_database: &std::path::Path) -> Result<(), StoreError> {
    Ok(())
}

fn stored_value(row: &SqliteRow) -> StoredValue {
    StoredValue {
        metric_key: row.get("metric_key"),
        granularity: row.get("granularity"),
        period_start: row.get("period_start"),
        start_date: row.get("start_date"),
        value: row.get("value"),
        raw: row.get("raw"),
        collected_at: row.get("collected_at"),
    }
}

fn user(row: &SqliteRow) -> User {
    User {
        id: row.get("id"),
        email: row.get("email"),
        password_hash: row.get("password_hash"),
        time_zone: row.get("time_zone"),
        created_at: row.get("created_at"),
    }
}

fn api_token(row: &SqliteRow) -> ApiToken {
    ApiToken {
        id: row.get("id"),
        user_id: row.get("user_id"),
        name: row.get("name"),
        created_at: row.get("created_at"),
        last_used_at: row.get("last_used_at"),
    }
}

fn site(row: &SqliteRow) -> SiteRecord {
    SiteRecord {
        id: row.get("id"),
        origin: row.get("origin"),
        manifest_url: row.get("manifest_url"),
        manifest: row.get("manifest"),
        etag: row.get("etag"),
        last_modified: row.get("last_modified"),
        fetched_at: row.get("fetched_at"),
        stale_error: row.get("stale_error"),
    }
}

fn claim(row: &SqliteRow) -> Claim {
    Claim {
        id: row.get("id"),
        user_id: row.get("user_id"),
        origin: row.get("origin"),
        token: row.get("token"),
        created_at: row.get("created_at"),
    }
}

fn listing(row: &SqliteRow) -> Listing {
    Listing {
        site_id: row.get("site_id"),
        claim_id: row.get("claim_id"),
        listed: row.get("listed"),
        suspended_reason: row.get("suspended_reason"),
        name: row.get("name"),
        description: row.get("description"),
        tools: row.get("tools"),
        verified_at: row.get("verified_at"),
    }
}

/// Stores one value, replacing an earlier one of its slot.
const STORE_VALUE: &str = "INSERT INTO metric_values (user_id, site_id, metric_key, granularity, period_start, period_end, start_date, value, raw, collected_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (user_id, site_id, metric_key, period_start) DO UPDATE SET
         value = excluded.value, raw = excluded.raw, collected_at = excluded.collected_at, period_end = excluded.period_end";

/// [`STORE_VALUE`] bound for one slot's value, collected at `now`.
fn store_value_query<'q>(
    slot: &Slot<'q>,
    value: f64,
    raw: &'q str,
    now: i64,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    sqlx::query(STORE_VALUE)
        .bind(slot.user_id)
        .bind(slot.site_id)
        .bind(slot.metric_key)
        .bind(slot.granularity)
        .bind(slot.period_start)
        .bind(slot.period_end)
        .bind(slot.start_date)
        .bind(value)
        .bind(raw)
        .bind(now)
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        time_zone: &str,
        now: i64,
    ) -> Result<User, StoreError> {
        let row = sqlx::query(
            "INSERT INTO users (email, password_hash, time_zone, created_at) VALUES (?, ?, ?, ?)
             RETURNING id, email, password_hash, time_zone, created_at",
        )
        .bind(email)
        .bind(password_hash)
        .bind(time_zone)
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| conflict(e, "this email"))?;
        Ok(user(&row))
    }

    async fn user_by_email(&self, email: &str) -> Result<Option<User>, StoreError> {
        let row = sqlx::query("SELECT id, email, password_hash, time_zone, created_at FROM users WHERE email = ?")
            .bind(email)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(user))
    }

    async fn user(&self, id: i64) -> Result<Option<User>, StoreError> {
        let row = sqlx::query("SELECT id, email, password_hash, time_zone, created_at FROM users WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(user))
    }

    async fn set_time_zone(&self, user_id: i64, time_zone: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET time_zone = ? WHERE id = ?")
            .bind(time_zone)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn create_session(&self, token_hash: &str, session: &Session, now: i64) -> Result<(), StoreError> {
        sqlx::query(session_sql::INSERT)
            .bind(token_hash)
            .bind(session.user_id)
            .bind(&session.csrf_token)
            .bind(now)
            .bind(session.expires_at)
            .bind(now)
            .bind(session.idle_seconds)
            .execute(&self.pool)
            .await
            .map_err(|e| conflict(e, "this session"))?;
        Ok(())
    }

    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<Session>, StoreError> {
        let row =
            sqlx::query(session_sql::FIND).bind(token_hash).bind(now).bind(now).fetch_optional(&self.pool).await?;
        let Some(row) = row else { return Ok(None) };
        let last_used_at: i64 = row.get("last_used_at");
        if now - last_used_at >= SESSION_USE_PRECISION {
            sqlx::query(session_sql::TOUCH).bind(now).bind(token_hash).execute(&self.pool).await?;
        }
        Ok(Some(Session {
            user_id: row.get("user_id"),
            csrf_token: row.get("csrf_token"),
            expires_at: row.get("expires_at"),
            idle_seconds: row.get("idle_seconds"),
        }))
    }

    async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1").bind(token_hash).execute(&self.pool).await?;
        Ok(())
    }

    async fn purge_sessions(&self, now: i64, limit: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(session_sql::PURGE).bind(now).bind(now).bind(limit).execute(&self.pool).await?;
        Ok(done.rows_affected())
    }

    async fn create_api_token(
        &self,
        user_id: i64,
        name: &str,
        token_hash: &str,
        now: i64,
    ) -> Result<ApiToken, StoreError> {
        let row = sqlx::query(
            "INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES (?, ?, ?, ?)
             RETURNING id, user_id, name, created_at, last_used_at",
        )
        .bind(user_id)
        .bind(name)
        .bind(token_hash)
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| conflict(e, "this token"))?;
        Ok(api_token(&row))
    }

    async fn user_by_api_token(&self, token_hash: &str, now: i64) -> Result<Option<User>, StoreError> {
        let row = sqlx::query(
            "SELECT u.id, u.email, u.password_hash, u.time_zone, u.created_at, t.last_used_at
             FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?",
        )
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let last_used_at: Option<i64> = row.get("last_used_at");
        if last_used_at.is_none_or(|at| now - at >= LAST_USED_PRECISION) {
            sqlx::query("UPDATE api_tokens SET last_used_at = ? WHERE token_hash = ?")
                .bind(now)
                .bind(token_hash)
                .execute(&self.pool)
                .await?;
        }
        Ok(Some(user(&row)))
    }

    async fn api_tokens(&self, user_id: i64) -> Result<Vec<ApiToken>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, user_id, name, created_at, last_used_at FROM api_tokens WHERE user_id = ? ORDER BY id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(api_token).collect())
    }

    async fn delete_api_token(&self, user_id: i64, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM api_tokens WHERE id = ? AND user_id = ?")
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
    async fn save_site(&self, fetched: &FetchedManifest<'_>, now: i64) -> Result<SiteRecord, StoreError> {
        let mut tx = self.pool.begin().await?;
        let record = save_site_on(&mut tx, fetched, now).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn add_site(
        &self,
        fetched: &FetchedManifest<'_>,
        user_id: i64,
        seal: Option<Sealer<'_>>,
        now: i64,
    ) -> Result<SiteRecord, StoreError> {
        let mut tx = self.pool.begin().await?;
        let record = save_site_on(&mut tx, fetched, now).await?;
        let credential = seal.map(|seal| seal(record.id));
        sqlx::query(
            "INSERT INTO vault (user_id, site_id, added_at, approved_manifest, credential) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(user_id)
        .bind(record.id)
        .bind(now)
        .bind(&record.manifest)
        .bind(credential)
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict(e, "this site in your vault"))?;
        tx.commit().await?;
        Ok(record)
    }

    async fn add_to_vault(&self, user_id: i64, site_id: i64, now: i64) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO vault (user_id, site_id, added_at, approved_manifest) SELECT ?, ?, ?, manifest FROM sites WHERE id = ?")
            .bind(user_id)
            .bind(site_id)
            .bind(now)
            .bind(site_id)
            .execute(&self.pool)
            .await
            .map_err(|e| conflict(e, "this site in your vault"))?;
        Ok(())
    }

    async fn vault(&self, user_id: i64) -> Result<Vec<SiteRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT s.id, s.origin, s.manifest_url, s.manifest, s.etag, s.last_modified, s.fetched_at, s.stale_error
             FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = ? ORDER BY v.added_at, s.id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(site).collect())
    }

    async fn vault_entry(&self, user_id: i64, site_id: i64) -> Result<Option<VaultEntry>, StoreError> {
        let row = sqlx::query(
            "SELECT s.id, s.origin, s.manifest_url, s.manifest, s.etag, s.last_modified, s.fetched_at, s.stale_error,
                    v.credential, v.approved_manifest
             FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = ? AND v.site_id = ?",
        )
        .bind(user_id)
        .bind(site_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| VaultEntry {
            site: site(&r),
            credential: r.get("credential"),
            approved_manifest: r.get("approved_manifest"),
        }))
    }

    async fn set_credential(&self, user_id: i64, site_id: i64, credential: Option<&[u8]>) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE vault SET credential = ? WHERE user_id = ? AND site_id = ?")
            .bind(credential)
            .bind(user_id)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn remove_from_vault(&self, user_id: i64, site_id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM vault WHERE user_id = ? AND site_id = ?")
            .bind(user_id)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
    async fn approve(&self, user_id: i64, site_id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE vault SET approved_manifest = (SELECT manifest FROM sites WHERE id = ?) WHERE user_id = ? AND site_id = ?",
        )
        .bind(site_id)
        .bind(user_id)
        .bind(site_id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_oauth_attempt(&self, attempt: &OAuthAttempt, keep: i64, now: i64) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM oauth_attempts WHERE expires_at < ?").bind(now).execute(&mut *tx).await?;
        sqlx::query(
            "INSERT INTO oauth_attempts (state_hash, user_id, site_id, sealed, created_at, expires_at)
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&attempt.state_hash)
        .bind(attempt.user_id)
        .bind(attempt.site_id)
        .bind(&attempt.sealed)
        .bind(attempt.created_at)
        .bind(attempt.expires_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "DELETE FROM oauth_attempts WHERE user_id = ? AND state_hash NOT IN
             (SELECT state_hash FROM oauth_attempts WHERE user_id = ? ORDER BY created_at DESC, state_hash LIMIT ?)",
        )
        .bind(attempt.user_id)
        .bind(attempt.user_id)
        .bind(keep)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn take_oauth_attempt(
        &self,
        state_hash: &str,
        user_id: i64,
        now: i64,
    ) -> Result<Option<OAuthAttempt>, StoreError> {
        let row = sqlx::query(
            "DELETE FROM oauth_attempts WHERE state_hash = ? AND user_id = ?
             RETURNING state_hash, user_id, site_id, sealed, created_at, expires_at",
        )
        .bind(state_hash)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row
            .map(|r| OAuthAttempt {
                state_hash: r.get("state_hash"),
                user_id: r.get("user_id"),
                site_id: r.get("site_id"),
                sealed: r.get("sealed"),
                created_at: r.get("created_at"),
                expires_at: r.get("expires_at"),
            })
            .filter(|attempt| attempt.expires_at >= now))
    }

    async fn advance_approvals(&self, site_id: i64, previous: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("UPDATE vault SET approved_manifest = (SELECT manifest FROM sites WHERE id = ?) WHERE site_id = ? AND approved_manifest = ?")
            .bind(site_id)
            .bind(site_id)
            .bind(previous)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn versions(&self, site_id: i64) -> Result<Vec<Version>, StoreError> {
        let rows = sqlx::query("SELECT id, fetched_at, manifest FROM site_versions WHERE site_id = ? ORDER BY id DESC")
            .bind(site_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| Version { id: r.get("id"), fetched_at: r.get("fetched_at"), manifest: r.get("manifest") })
            .collect())
    }

    async fn mark_stale(&self, site_id: i64, error: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE sites SET stale_error = ? WHERE id = ?")
            .bind(error)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn touch_site(&self, site_id: i64, now: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE sites SET fetched_at = ?, stale_error = NULL WHERE id = ?")
            .bind(now)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn sites_due(&self, before: i64, limit: i64) -> Result<Vec<SiteRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, origin, manifest_url, manifest, etag, last_modified, fetched_at, stale_error
             FROM sites WHERE fetched_at < ? ORDER BY fetched_at LIMIT ?",
        )
        .bind(before)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(site).collect())
    }
    async fn create_claim(&self, user_id: i64, origin: &str, token: &str, now: i64) -> Result<Claim, StoreError> {
        let row = sqlx::query(
            "INSERT INTO claims (user_id, origin, token, created_at) VALUES (?, ?, ?, ?)
             RETURNING id, user_id, origin, token, created_at",
        )
        .bind(user_id)
        .bind(origin)
        .bind(token)
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| conflict(e, "a claim on this origin"))?;
        Ok(claim(&row))
    }

    async fn claims(&self, user_id: i64) -> Result<Vec<Claim>, StoreError> {
        let rows =
            sqlx::query("SELECT id, user_id, origin, token, created_at FROM claims WHERE user_id = ? ORDER BY id")
                .bind(user_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().map(claim).collect())
    }

    async fn claims_on(&self, origin: &str) -> Result<Vec<Claim>, StoreError> {
        let rows =
            sqlx::query("SELECT id, user_id, origin, token, created_at FROM claims WHERE origin = ? ORDER BY id")
                .bind(origin)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().map(claim).collect())
    }

    async fn save_listing(&self, l: &Listing) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO listings (site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (site_id) DO UPDATE SET claim_id = excluded.claim_id, listed = excluded.listed,
                 suspended_reason = excluded.suspended_reason, name = excluded.name, description = excluded.description,
                 tools = excluded.tools, verified_at = excluded.verified_at",
        )
        .bind(l.site_id)
        .bind(l.claim_id)
        .bind(l.listed)
        .bind(&l.suspended_reason)
        .bind(&l.name)
        .bind(&l.description)
        .bind(&l.tools)
        .bind(l.verified_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn listing(&self, site_id: i64) -> Result<Option<Listing>, StoreError> {
        let row = sqlx::query(
            "SELECT site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at FROM listings WHERE site_id = ?",
        )
        .bind(site_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.as_ref().map(listing))
    }

    async fn search(&self, query: &str, limit: i64) -> Result<Vec<Found>, StoreError> {
        let words = search_words(query);
        let rows = if words.is_empty() {
            sqlx::query(
                "SELECT l.site_id, l.claim_id, l.listed, l.suspended_reason, l.name, l.description, l.tools, l.verified_at, s.origin
                 FROM listings l JOIN sites s ON s.id = l.site_id WHERE l.listed ORDER BY l.name LIMIT ?",
            )
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
        } else {
            // Every word, each as a prefix: `"rust"* "forum"*`.
            let matching: Vec<String> = words.iter().map(|w| format!("\"{w}\"*")).collect();
            sqlx::query(
                "SELECT l.site_id, l.claim_id, l.listed, l.suspended_reason, l.name, l.description, l.tools, l.verified_at, s.origin
                 FROM listings_fts f JOIN listings l ON l.site_id = f.rowid JOIN sites s ON s.id = l.site_id
                 WHERE listings_fts MATCH ? AND l.listed ORDER BY bm25(listings_fts, 10.0, 4.0, 1.0) LIMIT ?",
            )
            .bind(matching.join(" "))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
        };
        Ok(rows.iter().map(|r| Found { listing: listing(r), origin: r.get("origin") }).collect())
    }
    async fn store_value(&self, slot: &Slot<'_>, value: f64, raw: &str, now: i64) -> Result<(), StoreError> {
        store_value_query(slot, value, raw, now).execute(&self.pool).await?;
        Ok(())
    }

    async fn log_attempt(
        &self,
        slot: &Slot<'_>,
        outcome: &str,
        reason: Option<&str>,
        raw: Option<&str>,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO collection_attempts (user_id, site_id, metric_key, period_start, start_date, attempted_at, outcome, reason, raw)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(slot.user_id)
        .bind(slot.site_id)
        .bind(slot.metric_key)
        .bind(slot.period_start)
        .bind(slot.start_date)
        .bind(now)
        .bind(outcome)
        .bind(reason)
        .bind(raw)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn log_retry(
        &self,
        slot: &Slot<'_>,
        reason: &str,
        retry_at: Option<i64>,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO collection_attempts (user_id, site_id, metric_key, period_start, start_date, attempted_at, outcome, reason, retry_at)
             VALUES (?, ?, ?, ?, ?, ?, 'retry', ?, ?)",
        )
        .bind(slot.user_id)
        .bind(slot.site_id)
        .bind(slot.metric_key)
        .bind(slot.period_start)
        .bind(slot.start_date)
        .bind(now)
        .bind(reason)
        .bind(retry_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn retries(&self, slot: &Slot<'_>) -> Result<Retries, StoreError> {
        let (failures, last_at, retry_at): (i64, Option<i64>, Option<i64>) = sqlx::query_as(
            "SELECT count(*), max(attempted_at), max(retry_at) FROM collection_attempts
             WHERE user_id = ? AND site_id = ? AND metric_key = ? AND period_start = ? AND outcome = 'retry'",
        )
        .bind(slot.user_id)
        .bind(slot.site_id)
        .bind(slot.metric_key)
        .bind(slot.period_start)
        .fetch_one(&self.pool)
        .await?;
        Ok(Retries { failures, last_at, retry_at })
    }

    async fn values(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        since: i64,
    ) -> Result<Vec<StoredValue>, StoreError> {
        let rows = sqlx::query(
            "SELECT metric_key, granularity, period_start, start_date, value, raw, collected_at FROM metric_values
             WHERE user_id = ? AND site_id = ? AND metric_key = ? AND period_start >= ? ORDER BY period_start",
        )
        .bind(user_id)
        .bind(site_id)
        .bind(metric_key)
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(stored_value).collect())
    }

    async fn attempts(&self, user_id: i64, site_id: i64, limit: i64) -> Result<Vec<Attempt>, StoreError> {
        let rows = sqlx::query(
            "SELECT metric_key, start_date, attempted_at, outcome, reason, raw FROM collection_attempts
             WHERE user_id = ? AND site_id = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(user_id)
        .bind(site_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| Attempt {
                metric_key: r.get("metric_key"),
                start_date: r.get("start_date"),
                attempted_at: r.get("attempted_at"),
                outcome: r.get("outcome"),
                reason: r.get("reason"),
                raw: r.get("raw"),
            })
            .collect())
    }
    async fn all_vault_entries(&self) -> Result<Vec<(User, VaultEntry)>, StoreError> {
        let rows = sqlx::query(
            "SELECT u.id AS user_id, u.email, u.password_hash, u.time_zone, u.created_at AS user_created,
                    s.id, s.origin, s.manifest_url, s.manifest, s.etag, s.last_modified, s.fetched_at, s.stale_error,
                    v.credential, v.approved_manifest
             FROM vault v JOIN users u ON u.id = v.user_id JOIN sites s ON s.id = v.site_id ORDER BY u.id, s.id",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let user = User {
                    id: r.get("user_id"),
                    email: r.get("email"),
                    password_hash: r.get("password_hash"),
                    time_zone: r.get("time_zone"),
                    created_at: r.get("user_created"),
                };
                let entry = VaultEntry {
                    site: site(r),
                    credential: r.get("credential"),
                    approved_manifest: r.get("approved_manifest"),
                };
                (user, entry)
            })
            .collect())
    }

    async fn slot_settled(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        period_start: i64,
    ) -> Result<bool, StoreError> {
        let settled: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM metric_values WHERE user_id = ? AND site_id = ? AND metric_key = ? AND period_start = ?)
                  + (SELECT count(*) FROM collection_attempts WHERE user_id = ? AND site_id = ? AND metric_key = ? AND period_start = ?
                     AND (outcome = 'dropped' OR outcome = 'failed'))",
        )
        .bind(user_id)
        .bind(site_id)
        .bind(metric_key)
        .bind(period_start)
        .bind(user_id)
        .bind(site_id)
        .bind(metric_key)
        .bind(period_start)
        .fetch_one(&self.pool)
        .await?;
        Ok(settled > 0)
    }

    async fn vault_entries(&self, user_id: i64) -> Result<Vec<VaultEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT s.id, s.origin, s.manifest_url, s.manifest, s.etag, s.last_modified, s.fetched_at, s.stale_error,
                    v.credential, v.approved_manifest
             FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = ? ORDER BY v.added_at, s.id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| VaultEntry {
                site: site(r),
                credential: r.get("credential"),
                approved_manifest: r.get("approved_manifest"),
            })
            .collect())
    }

    async fn log_arguments(&self, user_id: i64) -> Result<bool, StoreError> {
        let keep: Option<bool> = sqlx::query_scalar("SELECT log_arguments FROM users WHERE id = ?")
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(keep.unwrap_or(false))
    }

    async fn set_log_arguments(&self, user_id: i64, keep: bool) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET log_arguments = ? WHERE id = ?")
            .bind(keep)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn log_tool_calls(&self, calls: &[ToolCall]) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for call in calls {
            sqlx::query(
                "INSERT INTO tool_calls (user_id, site_id, tool, called_at, status, duration_ms, arguments)
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(call.user_id)
            .bind(call.site_id)
            .bind(&call.tool)
            .bind(call.called_at)
            .bind(&call.status)
            .bind(call.duration_ms)
            .bind(&call.arguments)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn tool_calls(&self, user_id: i64, limit: i64) -> Result<Vec<ToolCall>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, user_id, site_id, tool, called_at, status, duration_ms, arguments
             FROM tool_calls WHERE user_id = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(user_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(tool_call).collect())
    }

    async fn store_values(&self, values: &[(Slot<'_>, f64, &str)], now: i64) -> Result<(), StoreError> {
        let mut transaction = self.pool.begin().await?;
        for (slot, value, raw) in values {
            store_value_query(slot, *value, raw, now).execute(&mut *transaction).await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    async fn values_of(
        &self,
        user_id: i64,
        metrics: &[(i64, &str)],
        since: i64,
    ) -> Result<Vec<(i64, StoredValue)>, StoreError> {
        if metrics.is_empty() {
            return Ok(Vec::new());
        }
        // One row per metric, its values aggregated into a JSON array: sqlx hands SQLite rows
        // over one channel message each, which made 3,100 rows cost most of a dashboard
        // request. `quote` renders a REAL with as many digits as it takes to read back the
        // same double. Two IN lists over the primary key's columns let SQLite seek each
        // (site, key) combination; combinations nobody asked for are dropped below.
        let mut sites: Vec<i64> = metrics.iter().map(|(site, _)| *site).collect();
        let mut keys: Vec<&str> = metrics.iter().map(|(_, key)| *key).collect();
        sites.sort_unstable();
        sites.dedup();
        keys.sort_unstable();
        keys.dedup();
        let marks = |n: usize| vec!["?"; n].join(", ");
        let sql = format!(
            "SELECT site_id, metric_key,
                    json_group_array(json_array(period_start, start_date, quote(value), raw, collected_at, granularity)) AS packed
             FROM metric_values WHERE user_id = ? AND site_id IN ({}) AND metric_key IN ({}) AND period_start >= ?
             GROUP BY site_id, metric_key ORDER BY site_id, metric_key",
            marks(sites.len()),
            marks(keys.len())
        );
        // Only `?` marks are formatted in; every value is bound.
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(user_id);
        for site in &sites {
            query = query.bind(site);
        }
        for key in &keys {
            query = query.bind(*key);
        }
        let rows = query.bind(since).fetch_all(&self.pool).await?;
        let wanted: std::collections::HashSet<(i64, &str)> = metrics.iter().copied().collect();
        let mut all = Vec::new();
        for row in &rows {
            let (site_id, metric_key): (i64, String) = (row.get("site_id"), row.get("metric_key"));
            if !wanted.contains(&(site_id, metric_key.as_str())) {
                continue;
            }
            let packed: &str = row.get("packed");
            let mut values: Vec<(i64, String, String, String, i64, String)> =
                serde_json::from_str(packed).map_err(|e| StoreError::Database(sqlx::Error::Decode(Box::new(e))))?;
            // Aggregates keep no order of their own.
            values.sort_unstable_by_key(|v| v.0);
            for (period_start, start_date, value, raw, collected_at, granularity) in values {
                let value = value
                    .parse()
                    .map_err(|e| StoreError::Database(sqlx::Error::Decode(format!("value {value:?}: {e}").into())))?;
                let metric_key = metric_key.clone();
                all.push((
                    site_id,
                    StoredValue { metric_key, granularity, period_start, start_date, value, raw, collected_at },
                ));
            }
        }
        Ok(all)
    }

    async fn enqueue_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64, StoreError> {
        // One write transaction for the whole plan: SQLite commits are what cost.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut inserted = 0;
        for new in jobs {
            let slot = &new.slot;
            inserted += sqlx::query(
                "INSERT INTO jobs (user_id, site_id, metric_key, granularity, period_start, period_end, start_date,
                                   not_before, deadline, created_at, updated_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                 ON CONFLICT (user_id, site_id, metric_key, period_start) DO NOTHING",
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
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        tx.commit().await?;
        Ok(inserted)
    }

    async fn claim_jobs(&self, claim: &JobClaim<'_>) -> Result<Vec<Job>, StoreError> {
        // SQLite has one writer at a time: an immediate transaction takes the write lock before
        // it reads, so two claimers can never pick the same rows. As on PostgreSQL, a claim
        // moves `not_before` to its lease's end, so held jobs sort after the due ones.
        let (user_id, site_id) = claim.only.unwrap_or_default();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET fence = fence + 1, lease_owner = ?, lease_expires = ?, not_before = ?, updated_at = ?
             WHERE id IN (SELECT id FROM jobs
                          WHERE state = 'pending' AND not_before <= ? AND (lease_expires IS NULL OR lease_expires <= ?)
                            AND (? OR (user_id = ? AND site_id = ?))
                          ORDER BY not_before, id LIMIT ?)
             RETURNING {JOB_COLUMNS}"
        )))
        .bind(claim.owner)
        .bind(claim.lease_until)
        .bind(claim.lease_until)
        .bind(claim.now)
        .bind(claim.now)
        .bind(claim.now)
        .bind(claim.only.is_none())
        .bind(user_id)
        .bind(site_id)
        .bind(claim.limit)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(rows.iter().map(job).collect())
    }

    async fn complete_jobs(&self, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut committed = Vec::with_capacity(completions.len());
        for completion in completions {
            let job = completion.job;
            let result = &completion.result;
            // The fence check: a claim since ours has incremented it, and then nothing of ours
            // may be written.
            let updated = sqlx::query(
                "UPDATE jobs SET state = ?, not_before = COALESCE(?, not_before), lease_owner = NULL,
                                 lease_expires = NULL, updated_at = ?
                 WHERE id = ? AND fence = ?",
            )
            .bind(result.state())
            .bind(result.not_before())
            .bind(now)
            .bind(job.id)
            .bind(job.fence)
            .execute(&mut *tx)
            .await?;
            if updated.rows_affected() != 1 {
                committed.push(false);
                continue;
            }
            let slot = job.slot();
            if let JobResult::Stored { value, raw } = result {
                store_value_query(&slot, *value, raw, now).execute(&mut *tx).await?;
            }
            let Some(Attempted { outcome, reason, raw, retry_at }) = result.attempt() else {
                committed.push(true);
                continue;
            };
            sqlx::query(
                "INSERT INTO collection_attempts (user_id, site_id, metric_key, period_start, start_date, attempted_at, outcome, reason, raw, retry_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(slot.user_id)
            .bind(slot.site_id)
            .bind(slot.metric_key)
            .bind(slot.period_start)
            .bind(slot.start_date)
            .bind(now)
            .bind(outcome)
            .bind(reason)
            .bind(raw)
            .bind(retry_at)
            .execute(&mut *tx)
            .await?;
            committed.push(true);
        }
        tx.commit().await?;
        Ok(committed)
    }

    async fn job_counts(&self) -> Result<JobCounts, StoreError> {
        let (pending, done, failed, reclaimed, max_fence): (i64, i64, i64, i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'done'),
                    count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE fence > 1),
                    COALESCE(max(fence), 0)
             FROM jobs",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(JobCounts { pending, done, failed, reclaimed, max_fence })
    }
}

fn tool_call(row: &SqliteRow) -> ToolCall {
    ToolCall {
        id: row.get("id"),
        user_id: row.get("user_id"),
        site_id: row.get("site_id"),
        tool: row.get("tool"),
        called_at: row.get("called_at"),
        status: row.get("status"),
        duration_ms: row.get("duration_ms"),
        arguments: row.get("arguments"),
    }
}

/// The columns [`job`] reads.
const JOB_COLUMNS: &str =
    "id, fence, user_id, site_id, metric_key, granularity, period_start, period_end, start_date, deadline";

fn job(row: &SqliteRow) -> Job {
    Job {
        id: row.get("id"),
        fence: row.get("fence"),
        user_id: row.get("user_id"),
        site_id: row.get("site_id"),
        metric_key: row.get("metric_key"),
        granularity: row.get("granularity"),
        period_start: row.get("period_start"),
        period_end: row.get("period_end"),
        start_date: row.get("start_date"),
        deadline: row.get("deadline"),
    }
}

/// Saves a fetched manifest as its site's current one, and as a new version when it differs
/// from the last; on `conn`, so that it can be part of a larger transaction.
async fn save_site_on(
    conn: &mut sqlx::SqliteConnection,
    fetched: &FetchedManifest<'_>,
    now: i64,
) -> Result<SiteRecord, StoreError> {
    let row = sqlx::query(
        "INSERT INTO sites (origin, manifest_url, manifest, etag, last_modified, fetched_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (origin) DO UPDATE SET manifest_url = excluded.manifest_url, manifest = excluded.manifest,
             etag = excluded.etag, last_modified = excluded.last_modified, fetched_at = excluded.fetched_at,
             stale_error = NULL
         RETURNING id, origin, manifest_url, manifest, etag, last_modified, fetched_at, stale_error",
    )
    .bind(fetched.origin)
    .bind(fetched.manifest_url)
    .bind(fetched.manifest)
    .bind(fetched.etag)
    .bind(fetched.last_modified)
    .bind(now)
    .fetch_one(&mut *conn)
    .await?;
    let record = site(&row);
    let latest: Option<String> =
        sqlx::query_scalar("SELECT manifest FROM site_versions WHERE site_id = ? ORDER BY id DESC LIMIT 1")
            .bind(record.id)
            .fetch_optional(&mut *conn)
            .await?;
    if latest.as_deref() != Some(record.manifest.as_str()) {
        sqlx::query("INSERT INTO site_versions (site_id, manifest, fetched_at) VALUES (?, ?, ?)")
            .bind(record.id)
            .bind(&record.manifest)
            .bind(now)
            .execute(&mut *conn)
            .await?;
    }
    Ok(record)
}
