//! The PostgreSQL backend: for several `servio serve` processes sharing one database.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};

use crate::{
    ApiToken, Attempt, Claim, FetchedManifest, Found, LAST_USED_PRECISION, Listing, Retries, SESSION_USE_PRECISION,
    Session, SiteRecord, Slot, Store, StoreError, StoredValue, ToolCall, User, VaultEntry, Version, conflict,
    search_words, session_sql,
};
use crate::{Attempted, Completion, Job, JobClaim, JobCounts, JobResult, NewJob, OAuthAttempt, Sealer};

/// The store in PostgreSQL.
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to `url` and migrates the database.
    pub async fn open(url: &str) -> Result<PgStore, StoreError> {
        let pool = PgPoolOptions::new().max_connections(16).connect(url).await?;
        Self::from_pool(pool).await
    }

    /// Uses an existing pool (tests give each its own schema this way) and migrates it.
    pub async fn from_pool(pool: PgPool) -> Result<PgStore, StoreError> {
        sqlx::migrate!("migrations/postgres").run(&pool).await?;
        Ok(PgStore { pool })
    }
}

fn stored_value(row: &PgRow) -> StoredValue {
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

fn user(row: &PgRow) -> User {
    User {
        id: row.get("id"),
        email: row.get("email"),
        password_hash: row.get("password_hash"),
        time_zone: row.get("time_zone"),
        created_at: row.get("created_at"),
    }
}

fn api_token(row: &PgRow) -> ApiToken {
    ApiToken {
        id: row.get("id"),
        user_id: row.get("user_id"),
        name: row.get("name"),
        created_at: row.get("created_at"),
        last_used_at: row.get("last_used_at"),
    }
}

fn site(row: &PgRow) -> SiteRecord {
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

fn claim(row: &PgRow) -> Claim {
    Claim {
        id: row.get("id"),
        user_id: row.get("user_id"),
        origin: row.get("origin"),
        token: row.get("token"),
        created_at: row.get("created_at"),
    }
}

fn listing(row: &PgRow) -> Listing {
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
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (user_id, site_id, metric_key, period_start) DO UPDATE SET
         value = excluded.value, raw = excluded.raw, collected_at = excluded.collected_at, period_end = excluded.period_end";

#[async_trait]
impl Store for PgStore {
    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        time_zone: &str,
        now: i64,
    ) -> Result<User, StoreError> {
        let row = sqlx::query(
            "INSERT INTO users (email, password_hash, time_zone, created_at) VALUES ($1, $2, $3, $4)
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
        let row = sqlx::query("SELECT id, email, password_hash, time_zone, created_at FROM users WHERE email = $1")
            .bind(email)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(user))
    }

    async fn user(&self, id: i64) -> Result<Option<User>, StoreError> {
        let row = sqlx::query("SELECT id, email, password_hash, time_zone, created_at FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(user))
    }

    async fn set_time_zone(&self, user_id: i64, time_zone: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET time_zone = $1 WHERE id = $2")
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
            "INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4)
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
             FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1",
        )
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let last_used_at: Option<i64> = row.get("last_used_at");
        if last_used_at.is_none_or(|at| now - at >= LAST_USED_PRECISION) {
            sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2")
                .bind(now)
                .bind(token_hash)
                .execute(&self.pool)
                .await?;
        }
        Ok(Some(user(&row)))
    }

    async fn api_tokens(&self, user_id: i64) -> Result<Vec<ApiToken>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, user_id, name, created_at, last_used_at FROM api_tokens WHERE user_id = $1 ORDER BY id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(api_token).collect())
    }

    async fn delete_api_token(&self, user_id: i64, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM api_tokens WHERE id = $1 AND user_id = $2")
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
            "INSERT INTO vault (user_id, site_id, added_at, approved_manifest, credential) VALUES ($1, $2, $3, $4, $5)",
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
        sqlx::query("INSERT INTO vault (user_id, site_id, added_at, approved_manifest) SELECT $1, $2, $3, manifest FROM sites WHERE id = $4")
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
             FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 ORDER BY v.added_at, s.id",
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
             FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 AND v.site_id = $2",
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
        let done = sqlx::query("UPDATE vault SET credential = $1 WHERE user_id = $2 AND site_id = $3")
            .bind(credential)
            .bind(user_id)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn remove_from_vault(&self, user_id: i64, site_id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM vault WHERE user_id = $1 AND site_id = $2")
            .bind(user_id)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
    async fn approve(&self, user_id: i64, site_id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE vault SET approved_manifest = (SELECT manifest FROM sites WHERE id = $1) WHERE user_id = $2 AND site_id = $3",
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
        sqlx::query("DELETE FROM oauth_attempts WHERE expires_at < $1").bind(now).execute(&mut *tx).await?;
        sqlx::query(
            "INSERT INTO oauth_attempts (state_hash, user_id, site_id, sealed, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
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
            "DELETE FROM oauth_attempts WHERE user_id = $1 AND state_hash NOT IN
             (SELECT state_hash FROM oauth_attempts WHERE user_id = $2 ORDER BY created_at DESC, state_hash LIMIT $3)",
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
            "DELETE FROM oauth_attempts WHERE state_hash = $1 AND user_id = $2
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
        let done = sqlx::query("UPDATE vault SET approved_manifest = (SELECT manifest FROM sites WHERE id = $1) WHERE site_id = $1 AND approved_manifest = $2")
            .bind(site_id)
            .bind(previous)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn versions(&self, site_id: i64) -> Result<Vec<Version>, StoreError> {
        let rows =
            sqlx::query("SELECT id, fetched_at, manifest FROM site_versions WHERE site_id = $1 ORDER BY id DESC")
                .bind(site_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows
            .iter()
            .map(|r| Version { id: r.get("id"), fetched_at: r.get("fetched_at"), manifest: r.get("manifest") })
            .collect())
    }

    async fn mark_stale(&self, site_id: i64, error: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE sites SET stale_error = $1 WHERE id = $2")
            .bind(error)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn touch_site(&self, site_id: i64, now: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE sites SET fetched_at = $1, stale_error = NULL WHERE id = $2")
            .bind(now)
            .bind(site_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn sites_due(&self, before: i64, limit: i64) -> Result<Vec<SiteRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, origin, manifest_url, manifest, etag, last_modified, fetched_at, stale_error
             FROM sites WHERE fetched_at < $1 ORDER BY fetched_at LIMIT $2",
        )
        .bind(before)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(site).collect())
    }
    async fn create_claim(&self, user_id: i64, origin: &str, token: &str, now: i64) -> Result<Claim, StoreError> {
        let row = sqlx::query(
            "INSERT INTO claims (user_id, origin, token, created_at) VALUES ($1, $2, $3, $4)
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
            sqlx::query("SELECT id, user_id, origin, token, created_at FROM claims WHERE user_id = $1 ORDER BY id")
                .bind(user_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().map(claim).collect())
    }

    async fn claims_on(&self, origin: &str) -> Result<Vec<Claim>, StoreError> {
        let rows =
            sqlx::query("SELECT id, user_id, origin, token, created_at FROM claims WHERE origin = $1 ORDER BY id")
                .bind(origin)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().map(claim).collect())
    }

    async fn save_listing(&self, l: &Listing) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO listings (site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
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
        let row = sqlx::query("SELECT site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at FROM listings WHERE site_id = $1",
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
                 FROM listings l JOIN sites s ON s.id = l.site_id WHERE l.listed ORDER BY l.name LIMIT $1",
            )
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
        } else {
            // Every word, each as a prefix: `rust:* & forum:*`.
            let matching: Vec<String> = words.iter().map(|w| format!("{w}:*")).collect();
            sqlx::query(
                "SELECT l.site_id, l.claim_id, l.listed, l.suspended_reason, l.name, l.description, l.tools, l.verified_at, s.origin
                 FROM listings l JOIN sites s ON s.id = l.site_id
                 WHERE l.listed AND l.search @@ to_tsquery('simple', $1)
                 ORDER BY ts_rank(l.search, to_tsquery('simple', $1)) DESC, l.name LIMIT $2",
            )
            .bind(matching.join(" & "))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
        };
        Ok(rows.iter().map(|r| Found { listing: listing(r), origin: r.get("origin") }).collect())
    }
    async fn store_value(&self, slot: &Slot<'_>, value: f64, raw: &str, now: i64) -> Result<(), StoreError> {
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
            .execute(&self.pool)
            .await?;
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
        sqlx::query("INSERT INTO collection_attempts (user_id, site_id, metric_key, period_start, start_date, attempted_at, outcome, reason, raw)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
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
             VALUES ($1, $2, $3, $4, $5, $6, 'retry', $7, $8)",
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
             WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND period_start = $4 AND outcome = 'retry'",
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
             WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND period_start >= $4 ORDER BY period_start",
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
             WHERE user_id = $1 AND site_id = $2 ORDER BY id DESC LIMIT $3",
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
        let settled: i64 = sqlx::query_scalar("SELECT (SELECT count(*) FROM metric_values WHERE user_id = $1 AND site_id = $2 AND metric_key = $3 AND period_start = $4)
                  + (SELECT count(*) FROM collection_attempts WHERE user_id = $5 AND site_id = $6 AND metric_key = $7 AND period_start = $8
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
             FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 ORDER BY v.added_at, s.id",
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
        let keep: Option<bool> = sqlx::query_scalar("SELECT log_arguments FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(keep.unwrap_or(false))
    }

    async fn set_log_arguments(&self, user_id: i64, keep: bool) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET log_arguments = $1 WHERE id = $2")
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
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
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
             FROM tool_calls WHERE user_id = $1 ORDER BY id DESC LIMIT $2",
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
                .execute(&mut *transaction)
                .await?;
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
        // Pairs as two parallel arrays, unnested back into pairs: one index range per pair.
        let sites: Vec<i64> = metrics.iter().map(|(site, _)| *site).collect();
        let keys: Vec<String> = metrics.iter().map(|(_, key)| (*key).to_owned()).collect();
        let rows = sqlx::query(
            "SELECT v.site_id, v.metric_key, v.granularity, v.period_start, v.start_date, v.value, v.raw, v.collected_at
             FROM UNNEST($2::BIGINT[], $3::TEXT[]) AS w(site_id, metric_key)
             JOIN metric_values v ON v.user_id = $1 AND v.site_id = w.site_id AND v.metric_key = w.metric_key
             WHERE v.period_start >= $4
             ORDER BY v.site_id, v.metric_key, v.period_start",
        )
        .bind(user_id)
        .bind(&sites)
        .bind(&keys)
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(|r| (r.get("site_id"), stored_value(r))).collect())
    }

    async fn enqueue_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64, StoreError> {
        if jobs.is_empty() {
            return Ok(0);
        }
        // One statement for the whole plan: the slots travel as arrays.
        let column = |f: &dyn Fn(&NewJob<'_>) -> i64| jobs.iter().map(f).collect::<Vec<i64>>();
        let text = |f: &dyn Fn(&NewJob<'_>) -> String| jobs.iter().map(f).collect::<Vec<String>>();
        let inserted = sqlx::query(
            "INSERT INTO jobs (user_id, site_id, metric_key, granularity, period_start, period_end, start_date,
                               not_before, deadline, created_at, updated_at)
             SELECT *, $10::BIGINT, $10::BIGINT FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[],
                                                    $5::BIGINT[], $6::BIGINT[], $7::TEXT[], $8::BIGINT[], $9::BIGINT[])
             ON CONFLICT (user_id, site_id, metric_key, period_start) DO NOTHING",
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
        .execute(&self.pool)
        .await?;
        // Claims must walk the pending index in order and stop after a batch. With statistics
        // from before a large plan, the planner expects a few pending jobs and sorts them all
        // instead, on every claim (measured: 9 ms a claim of 128 among 20,000 pending).
        if inserted.rows_affected() >= REANALYZE_AFTER {
            sqlx::query("ANALYZE jobs").execute(&self.pool).await?;
        }
        Ok(inserted.rows_affected())
    }

    async fn claim_jobs(&self, claim: &JobClaim<'_>) -> Result<Vec<Job>, StoreError> {
        // SKIP LOCKED: rows another claimer is taking right now are passed over, not waited
        // for; the outer UPDATE then re-checks them under the row lock it holds. A claim moves
        // `not_before` to its lease's end: held jobs then sort after every due one, so a claim
        // stops at the first job not due instead of stepping over every job held by others.
        let due = "state = 'pending' AND not_before <= $3 AND (lease_expires IS NULL OR lease_expires <= $3)";
        let sql = match claim.only {
            None => format!(
                "UPDATE jobs SET fence = fence + 1, lease_owner = $1, lease_expires = $2, not_before = $2, updated_at = $3
                 WHERE id IN (SELECT id FROM jobs WHERE {due} ORDER BY not_before, id LIMIT $4 FOR UPDATE SKIP LOCKED)
                 RETURNING {JOB_COLUMNS}"
            ),
            Some(_) => format!(
                "UPDATE jobs SET fence = fence + 1, lease_owner = $1, lease_expires = $2, not_before = $2, updated_at = $3
                 WHERE id IN (SELECT id FROM jobs WHERE {due} AND user_id = $5 AND site_id = $6
                              ORDER BY not_before, id LIMIT $4 FOR UPDATE SKIP LOCKED)
                 RETURNING {JOB_COLUMNS}"
            ),
        };
        let (user_id, site_id) = claim.only.unwrap_or_default();
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(claim.owner)
            .bind(claim.lease_until)
            .bind(claim.now)
            .bind(claim.limit);
        if claim.only.is_some() {
            query = query.bind(user_id).bind(site_id);
        }
        let rows = query.fetch_all(&self.pool).await?;
        Ok(rows.iter().map(job).collect())
    }

    async fn complete_jobs(&self, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>, StoreError> {
        if completions.is_empty() {
            return Ok(Vec::new());
        }
        // One statement for the whole batch, whatever its size, and so one transaction in one
        // round trip: the fence check updates the jobs whose fence is still the one claimed
        // (a claim since has incremented it), and only the jobs it updated get their value
        // and attempt written. The results travel as arrays, in order.
        let attempts: Vec<Option<Attempted>> = completions.iter().map(|c| c.result.attempt()).collect();
        let value = |c: &Completion| match c.result {
            JobResult::Stored { value, .. } => Some(value),
            _ => None,
        };
        let matched: Vec<(i64, i64)> = sqlx::query_as(
            "WITH c AS (
                 SELECT * FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::TEXT[], $4::BIGINT[], $5::DOUBLE PRECISION[],
                                      $6::TEXT[], $7::TEXT[], $8::TEXT[], $9::BIGINT[])
                     WITH ORDINALITY AS c(id, fence, state, not_before, value, outcome, reason, raw, retry_at, n)
             ),
             done AS (
                 UPDATE jobs AS j SET state = c.state, not_before = COALESCE(c.not_before, j.not_before),
                                      lease_owner = NULL, lease_expires = NULL, updated_at = $10
                 FROM c WHERE j.id = c.id AND j.fence = c.fence
                 RETURNING j.id, j.fence, j.user_id, j.site_id, j.metric_key, j.granularity, j.period_start, j.period_end,
                           j.start_date
             ),
             stored AS (
                 INSERT INTO metric_values (user_id, site_id, metric_key, granularity, period_start, period_end,
                                            start_date, value, raw, collected_at)
                 SELECT d.user_id, d.site_id, d.metric_key, d.granularity, d.period_start, d.period_end,
                        d.start_date, c.value, c.raw, $10
                 FROM done d JOIN c ON (c.id, c.fence) = (d.id, d.fence) WHERE c.value IS NOT NULL
                 ON CONFLICT (user_id, site_id, metric_key, period_start) DO UPDATE SET
                     value = excluded.value, raw = excluded.raw, collected_at = excluded.collected_at,
                     period_end = excluded.period_end
             ),
             logged AS (
                 INSERT INTO collection_attempts (user_id, site_id, metric_key, period_start, start_date,
                                                  attempted_at, outcome, reason, raw, retry_at)
                 SELECT d.user_id, d.site_id, d.metric_key, d.period_start, d.start_date, $10, c.outcome,
                        c.reason, c.raw, c.retry_at
                 FROM done d JOIN c ON (c.id, c.fence) = (d.id, d.fence) WHERE c.outcome IS NOT NULL ORDER BY c.n
             )
             SELECT id, fence FROM done",
        )
        .bind(completions.iter().map(|c| c.job.id).collect::<Vec<i64>>())
        .bind(completions.iter().map(|c| c.job.fence).collect::<Vec<i64>>())
        .bind(completions.iter().map(|c| c.result.state()).collect::<Vec<&str>>())
        .bind(completions.iter().map(|c| c.result.not_before()).collect::<Vec<Option<i64>>>())
        .bind(completions.iter().map(value).collect::<Vec<Option<f64>>>())
        .bind(attempts.iter().map(|a| a.map(|a| a.outcome)).collect::<Vec<Option<&str>>>())
        .bind(attempts.iter().map(|a| a.and_then(|a| a.reason)).collect::<Vec<Option<&str>>>())
        .bind(attempts.iter().map(|a| a.and_then(|a| a.raw)).collect::<Vec<Option<&str>>>())
        .bind(attempts.iter().map(|a| a.and_then(|a| a.retry_at)).collect::<Vec<Option<i64>>>())
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        // By job and fence: a job claimed again by the same worker may be in a batch twice.
        let matched: std::collections::HashSet<(i64, i64)> = matched.into_iter().collect();
        Ok(completions.iter().map(|c| matched.contains(&(c.job.id, c.job.fence))).collect())
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

fn tool_call(row: &PgRow) -> ToolCall {
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

/// Jobs enqueued at once past which the jobs table's statistics are renewed at once, rather
/// than by autovacuum up to a minute later.
const REANALYZE_AFTER: u64 = 1_000;

/// The columns [`job`] reads.
const JOB_COLUMNS: &str =
    "id, fence, user_id, site_id, metric_key, granularity, period_start, period_end, start_date, deadline";

fn job(row: &PgRow) -> Job {
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
    conn: &mut sqlx::PgConnection,
    fetched: &FetchedManifest<'_>,
    now: i64,
) -> Result<SiteRecord, StoreError> {
    let row = sqlx::query("INSERT INTO sites (origin, manifest_url, manifest, etag, last_modified, fetched_at) VALUES ($1, $2, $3, $4, $5, $6)
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
        sqlx::query_scalar("SELECT manifest FROM site_versions WHERE site_id = $1 ORDER BY id DESC LIMIT 1")
            .bind(record.id)
            .fetch_optional(&mut *conn)
            .await?;
    if latest.as_deref() != Some(record.manifest.as_str()) {
        sqlx::query("INSERT INTO site_versions (site_id, manifest, fetched_at) VALUES ($1, $2, $3)")
            .bind(record.id)
            .bind(&record.manifest)
            .bind(now)
            .execute(&mut *conn)
            .await?;
    }
    Ok(record)
}
