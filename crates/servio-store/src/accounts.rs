//! Accounts: users, their browser sessions and their personal API tokens ([`Accounts`]).

use async_trait::async_trait;

use crate::Change;
use crate::Result;
use crate::database::{Conn, Database};
use crate::error::conflict;

/// An account.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct User {
    /// Its id.
    pub id: i64,
    /// The sign-in email, lowercased.
    pub email: String,
    /// The argon2id hash (PHC string).
    pub password_hash: String,
    /// The user's IANA time zone.
    pub time_zone: String,
    /// When it was created.
    pub created_at: i64,
}

/// A browser session, found by the hash of its cookie value.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Session {
    /// Whose.
    pub user_id: i64,
    /// The CSRF token forms and cookie-authenticated API calls must carry.
    pub csrf_token: String,
    /// When it ends, however much it is used (the absolute limit).
    pub expires_at: i64,
    /// How long it may go unused before it ends (the idle limit), in seconds.
    pub idle_seconds: i64,
}

/// A session as its user sees it in a list: when it began and was last used, and whether it
/// is the one asking.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SessionInfo {
    /// When it began (Unix seconds).
    pub created_at: i64,
    /// When it was last used, to the hour ([`SESSION_USE_PRECISION`]).
    pub last_used_at: i64,
    /// When it ends at the latest.
    pub expires_at: i64,
    /// Whether it is the session whose hash was given.
    pub current: bool,
}

/// A personal API token; the token itself is shown once and stored only as a hash.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ApiToken {
    /// Its id.
    pub id: i64,
    /// Whose.
    pub user_id: i64,
    /// A name the user chose.
    pub name: String,
    /// When it was created.
    pub created_at: i64,
    /// When it was last used.
    pub last_used_at: Option<i64>,
    /// Its scope's stored name (see [`ApiToken::grant`]).
    pub scope: String,
    /// The sites it is limited to, as stored (see [`ApiToken::grant`]).
    pub sites: Option<String>,
}

impl ApiToken {
    /// What the token grants.
    pub fn grant(&self) -> Grant {
        Grant::stored(&self.scope, self.sites.as_deref())
    }
}

/// How precisely (seconds) the last use of an API token is kept.
const LAST_USED_PRECISION: i64 = 60;

/// How precisely (seconds) the last use of a session is kept: a session is written at most
/// once an hour however many requests it makes, and its idle limit may be overrun by as much.
pub const SESSION_USE_PRECISION: i64 = 3600;

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
    scope: String,
    sites: Option<String>,
    last_used_at: Option<i64>,
}

/// What an API token may do (interpretation §10), stored as its lowercase name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Scope {
    /// Read the user's figures, nothing else.
    Read,
    /// List and call the approved tools and read the figures: what an AI client is given.
    Ai,
    /// The account API as well: whatever changes what the platform grants or holds.
    Account,
}

impl Scope {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The scope stored as `name`; an unknown name grants the least ([`Scope::Read`]).
    pub fn stored(name: &str) -> Scope {
        match name {
            "account" => Scope::Account,
            "ai" => Scope::Ai,
            _ => Scope::Read,
        }
    }

    /// Whether a token of this scope may do what `needed` asks.
    pub fn covers(self, needed: Scope) -> bool {
        self >= needed
    }
}

impl PartialOrd for Scope {
    fn partial_cmp(&self, other: &Scope) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scope {
    fn cmp(&self, other: &Scope) -> std::cmp::Ordering {
        let rank = |scope: &Scope| match scope {
            Scope::Read => 0,
            Scope::Ai => 1,
            Scope::Account => 2,
        };
        rank(self).cmp(&rank(other))
    }
}

/// What a token grants: its scope, and the vault sites it is limited to (`None`: all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Its scope.
    pub scope: Scope,
    /// The sites it is limited to, by id; `None` for every site of the vault.
    pub sites: Option<Vec<i64>>,
}

impl Grant {
    /// Every site, with `scope`.
    pub fn all_sites(scope: Scope) -> Grant {
        Grant { scope, sites: None }
    }

    /// Whether the token reaches the vault site `site_id`.
    pub fn reaches(&self, site_id: i64) -> bool {
        self.sites.as_ref().is_none_or(|sites| sites.contains(&site_id))
    }

    fn stored(scope: &str, sites: Option<&str>) -> Grant {
        // A list that cannot be read limits the token to no site rather than to all.
        let sites = sites.map(|text| serde_json::from_str::<Vec<i64>>(text).unwrap_or_default());
        Grant { scope: Scope::stored(scope), sites }
    }

    fn sites_text(&self) -> Option<String> {
        self.sites.as_ref().map(|sites| serde_json::Value::from(sites.clone()).to_string())
    }
}

/// An API token's id and what it grants: who holds it asks with these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    /// The token's id.
    pub id: i64,
    /// What it grants.
    pub grant: Grant,
}

/// The columns a [`User`] is read from, on a query over `users`.
macro_rules! user_columns {
    () => {
        "id, email, password_hash, time_zone, created_at"
    };
}

/// Counts with `count_sql` (`$1` the user) after locking the user's row (a write that changes
/// nothing), on the caller's transaction: concurrent inserts for one user are counted one after
/// the other on both backends, and a per-user limit is never passed.
pub(crate) async fn count_locked(conn: Conn<'_>, user_id: i64, count_sql: &'static str) -> Result<i64> {
    on!(conn, |conn| {
        sqlx::query("UPDATE users SET time_zone = time_zone WHERE id = $1").bind(user_id).execute(&mut *conn).await?;
        Ok(sqlx::query_scalar(count_sql).bind(user_id).fetch_one(&mut *conn).await?)
    })
}

impl Database {
    /// Sets one text column of a user: `sql` binds the text as `$1` and the user as `$2`.
    async fn set_user_text(&self, sql: &'static str, text: &str, user_id: i64) -> Result<()> {
        execute!(&self.pool, sql, text, user_id).map(drop)
    }
}

/// Users, their browser sessions and their personal API tokens.
#[async_trait]
pub trait Accounts: Send + Sync {
    /// Creates a user; [`StoreError::Conflict`](crate::StoreError::Conflict) when the email is taken.
    async fn create_user(&self, email: &str, password_hash: &str, time_zone: &str, now: i64) -> Result<User>;
    /// The user with this (lowercased) email.
    async fn user_by_email(&self, email: &str) -> Result<Option<User>>;
    /// The user with this id.
    async fn user(&self, id: i64) -> Result<Option<User>>;
    /// Changes a user's time zone.
    /// Tells [`Change::Context`].
    async fn set_time_zone(&self, user_id: i64, time_zone: &str) -> Result<()>;

    /// Records a session.
    async fn create_session(&self, token_hash: &str, session: &Session, now: i64) -> Result<()>;
    /// The session with this token hash, unless it has expired or gone unused for longer than
    /// its idle limit; records the use to the hour ([`SESSION_USE_PRECISION`]), so that a page
    /// view is not a write each time.
    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<Session>>;
    /// Ends a session.
    async fn delete_session(&self, token_hash: &str) -> Result<()>;
    /// The user's live sessions, newest first; `current` marks the one hashed as `current`.
    async fn sessions(&self, user_id: i64, current: &str, now: i64) -> Result<Vec<SessionInfo>>;
    /// Ends every session of the user but the one hashed as `keep` (none with `""`): "sign out
    /// everywhere". Returns how many ended.
    async fn delete_sessions(&self, user_id: i64, keep: &str) -> Result<u64>;
    /// Deletes the user's sessions beyond the `keep` most recently used (a sign-in that would
    /// pass the limit signs out the session least recently used); returns how many.
    async fn trim_sessions(&self, user_id: i64, keep: i64) -> Result<u64>;
    /// Replaces the user's password hash.
    /// Tells [`Change::Context`].
    async fn set_password_hash(&self, user_id: i64, password_hash: &str) -> Result<()>;
    /// Deletes the user and, by cascade, everything that is theirs: sessions, API tokens, vault
    /// entries with their credentials, values, attempts, jobs, calls, claims and listings.
    /// False when there was no such user.
    /// Tells [`Change::Access`] and [`Change::Catalogue`] when there was one.
    async fn delete_user(&self, user_id: i64) -> Result<bool>;
    /// Deletes up to `limit` sessions that have expired or idled out; returns how many. Small
    /// batches keep each statement short next to the requests using the table.
    async fn purge_sessions(&self, now: i64, limit: i64) -> Result<u64>;

    /// Records an API token granting `grant`; [`StoreError::AtLimit`](crate::StoreError::AtLimit)
    /// when the user has `limit` already.
    async fn create_api_token(
        &self,
        user_id: i64,
        name: &str,
        token_hash: &str,
        grant: &Grant,
        (now, limit): (i64, i64),
    ) -> Result<ApiToken>;
    /// The owner of the API token with this hash, and the token's id and grant; records the use to the
    /// minute (a token used again within a minute of its recorded use is not written again, so
    /// that a program polling with it does not turn every read into a write).
    async fn user_by_api_token(&self, token_hash: &str, now: i64) -> Result<Option<(User, TokenGrant)>>;
    /// A user's API tokens.
    async fn api_tokens(&self, user_id: i64) -> Result<Vec<ApiToken>>;
    /// Deletes one of a user's API tokens; false when there was none.
    /// Tells [`Change::Access`] when there was one.
    async fn delete_api_token(&self, user_id: i64, id: i64) -> Result<bool>;
    /// Deletes every API token of a user; how many there were.
    /// Tells [`Change::Access`] when there were any.
    async fn delete_api_tokens(&self, user_id: i64) -> Result<u64>;
}

#[async_trait]
impl Accounts for Database {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_user(&self, email: &str, password_hash: &str, time_zone: &str, now: i64) -> Result<User> {
        on!(&self.pool, |pool| {
            let sql = concat!(
                "INSERT INTO users (email, password_hash, time_zone, created_at) VALUES ($1, $2, $3, $4) RETURNING ",
                user_columns!()
            );
            insert_one!(pool, "this email", sql, email, password_hash, time_zone, now)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn user_by_email(&self, email: &str) -> Result<Option<User>> {
        fetch!(&self.pool, fetch_optional(concat!("SELECT ", user_columns!(), " FROM users WHERE email = $1"), email))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn user(&self, id: i64) -> Result<Option<User>> {
        fetch!(&self.pool, fetch_optional(concat!("SELECT ", user_columns!(), " FROM users WHERE id = $1"), id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn set_time_zone(&self, user_id: i64, time_zone: &str) -> Result<()> {
        self.set_user_text("UPDATE users SET time_zone = $1 WHERE id = $2", time_zone, user_id).await?;
        // Periods are the user's days: what is kept of them is of the old zone.
        self.hooks.tell(&[Change::Context(user_id)]);
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_session(&self, token_hash: &str, session: &Session, now: i64) -> Result<()> {
        on!(&self.pool, |pool| {
            bind!(
                sqlx::query(
                    "INSERT INTO sessions
                         (token_hash, user_id, csrf_token, created_at, expires_at, last_used_at, idle_seconds)
                     VALUES ($1, $2, $3, $4, $5, $4, $6)",
                ),
                token_hash,
                session.user_id,
                &session.csrf_token,
                now,
                session.expires_at,
                session.idle_seconds
            )
            .execute(pool)
            .await
            .map_err(|e| conflict(e, "this session"))?;
            Ok(())
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<Session>> {
        on!(&self.pool, |pool| {
            let found: Option<SessionRow> = bind!(
                sqlx::query_as(
                    "SELECT user_id, csrf_token, expires_at, idle_seconds, last_used_at FROM sessions
                     WHERE token_hash = $1 AND expires_at > $2 AND last_used_at + idle_seconds > $2",
                ),
                token_hash,
                now
            )
            .fetch_optional(pool)
            .await?;
            let Some(SessionRow { session, last_used_at }) = found else { return Ok(None) };
            if now - last_used_at >= SESSION_USE_PRECISION {
                bind!(sqlx::query("UPDATE sessions SET last_used_at = $1 WHERE token_hash = $2"), now, token_hash)
                    .execute(pool)
                    .await?;
            }
            Ok(Some(session))
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete_session(&self, token_hash: &str) -> Result<()> {
        execute!(&self.pool, "DELETE FROM sessions WHERE token_hash = $1", token_hash).map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn sessions(&self, user_id: i64, current: &str, now: i64) -> Result<Vec<SessionInfo>> {
        let sql = "SELECT created_at, last_used_at, expires_at, token_hash = $2 AS current FROM sessions
                   WHERE user_id = $1 AND expires_at > $3 AND last_used_at + idle_seconds > $3
                   ORDER BY created_at DESC";
        fetch!(&self.pool, fetch_all(sql, user_id, current, now))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete_sessions(&self, user_id: i64, keep: &str) -> Result<u64> {
        execute!(&self.pool, "DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2", user_id, keep)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn trim_sessions(&self, user_id: i64, keep: i64) -> Result<u64> {
        // The least recently used go (the token hash breaks ties).
        let sql = "DELETE FROM sessions WHERE token_hash IN (
                       SELECT token_hash FROM sessions WHERE user_id = $1
                       ORDER BY last_used_at DESC, created_at DESC, token_hash LIMIT $3 OFFSET $2)";
        execute!(&self.pool, sql, user_id, keep, i64::MAX)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn set_password_hash(&self, user_id: i64, password_hash: &str) -> Result<()> {
        self.set_user_text("UPDATE users SET password_hash = $1 WHERE id = $2", password_hash, user_id).await?;
        // What is kept of the user (with each API token) holds their row.
        self.hooks.tell(&[Change::Context(user_id)]);
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete_user(&self, user_id: i64) -> Result<bool> {
        let result: Result<bool> = on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            // The account first: its cascade deletes the jobs, waiting for any completion
            // holding one, so that the values and attempts deleted next include what it
            // wrote (on PostgreSQL they have no foreign keys to cascade through).
            let done = sqlx::query("DELETE FROM users WHERE id = $1").bind(user_id).execute(&mut *tx).await?;
            for sql in
                ["DELETE FROM collection_attempts WHERE user_id = $1", "DELETE FROM metric_values WHERE user_id = $1"]
            {
                sqlx::query(sql).bind(user_id).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(done.rows_affected() > 0)
        });
        let deleted = result?;
        self.hooks.tell_if(deleted, &[Change::Access(user_id), Change::Catalogue(user_id)]);
        Ok(deleted)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn purge_sessions(&self, now: i64, limit: i64) -> Result<u64> {
        let sql = "DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions
                       WHERE expires_at <= $1 OR last_used_at + idle_seconds <= $1 LIMIT $2)";
        execute!(&self.pool, sql, now, limit)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_api_token(
        &self,
        user_id: i64,
        name: &str,
        token_hash: &str,
        grant: &Grant,
        (now, limit): (i64, i64),
    ) -> Result<ApiToken> {
        let (scope, sites) = (grant.scope.as_str(), grant.sites_text());
        on!(&self.pool, |pool| {
            let tokens = "SELECT count(*) FROM api_tokens WHERE user_id = $1";
            let sql = "INSERT INTO api_tokens (user_id, name, token_hash, created_at, scope, sites)
                       VALUES ($1, $2, $3, $4, $5, $6)
                       RETURNING id, user_id, name, created_at, last_used_at, scope, sites";
            let limit = (user_id, tokens, limit, "API tokens");
            insert_within_limit!(pool, limit, "this token", sql, user_id, name, token_hash, now, scope, &sites)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn user_by_api_token(&self, token_hash: &str, now: i64) -> Result<Option<(User, TokenGrant)>> {
        on!(&self.pool, |pool| {
            let found: Option<TokenOwner> = sqlx::query_as(
                "SELECT u.id, u.email, u.password_hash, u.time_zone, u.created_at, t.id AS token_id, t.scope, t.sites,
                        t.last_used_at
                 FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1",
            )
            .bind(token_hash)
            .fetch_optional(pool)
            .await?;
            let Some(TokenOwner { user, token_id, scope, sites, last_used_at }) = found else { return Ok(None) };
            if last_used_at.is_none_or(|at| now - at >= LAST_USED_PRECISION) {
                bind!(sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2"), now, token_hash)
                    .execute(pool)
                    .await?;
            }
            Ok(Some((user, TokenGrant { id: token_id, grant: Grant::stored(&scope, sites.as_deref()) })))
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn api_tokens(&self, user_id: i64) -> Result<Vec<ApiToken>> {
        let sql = "SELECT id, user_id, name, created_at, last_used_at, scope, sites FROM api_tokens
                   WHERE user_id = $1 ORDER BY id";
        fetch!(&self.pool, fetch_all(sql, user_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete_api_token(&self, user_id: i64, id: i64) -> Result<bool> {
        let deleted = execute!(&self.pool, "DELETE FROM api_tokens WHERE id = $1 AND user_id = $2", id, user_id)? > 0;
        self.hooks.tell_if(deleted, &[Change::Access(user_id)]);
        Ok(deleted)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete_api_tokens(&self, user_id: i64) -> Result<u64> {
        let deleted = execute!(&self.pool, "DELETE FROM api_tokens WHERE user_id = $1", user_id)?;
        self.hooks.tell_if(deleted > 0, &[Change::Access(user_id)]);
        Ok(deleted)
    }
}
