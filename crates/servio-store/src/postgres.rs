//! The PostgreSQL backend: for several `servio serve` processes sharing one database.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};

use crate::{ApiToken, Session, Store, StoreError, User, conflict};

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
        sqlx::query(
            "INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(token_hash)
        .bind(session.user_id)
        .bind(&session.csrf_token)
        .bind(now)
        .bind(session.expires_at)
        .execute(&self.pool)
        .await
        .map_err(|e| conflict(e, "this session"))?;
        Ok(())
    }

    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<Session>, StoreError> {
        let row = sqlx::query(
            "SELECT user_id, csrf_token, expires_at FROM sessions WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| Session {
            user_id: r.get("user_id"),
            csrf_token: r.get("csrf_token"),
            expires_at: r.get("expires_at"),
        }))
    }

    async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1").bind(token_hash).execute(&self.pool).await?;
        Ok(())
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
        let user_id: Option<i64> =
            sqlx::query_scalar("UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2 RETURNING user_id")
                .bind(now)
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await?;
        match user_id {
            Some(id) => self.user(id).await,
            None => Ok(None),
        }
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
}
