//! MCP sessions, which any process sharing the database may serve ([`McpSessions`]).

use async_trait::async_trait;

use crate::Result;
use crate::database::Database;

/// An MCP session as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct McpSession {
    /// The user who opened it, once known.
    pub user_id: Option<i64>,
    /// The client's `initialize` parameters (JSON), once the handshake is done.
    pub state: Option<String>,
}

/// MCP sessions, kept so that any process may serve them.
#[async_trait]
pub trait McpSessions: Send + Sync {
    /// Keeps what is known of the MCP session `id`: `session.user_id`, who opened it, and
    /// `session.state`, the client's `initialize` parameters (JSON); a `None` keeps what was
    /// kept before (the SDK saves the state, and the platform the owner, each in its own time).
    async fn keep_mcp_session(&self, id: &str, session: &McpSession, now: i64) -> Result<()>;
    /// The owner and state of the MCP session `id`, when it exists.
    async fn mcp_session(&self, id: &str) -> Result<Option<McpSession>>;
    /// Forgets the MCP session `id`.
    async fn delete_mcp_session(&self, id: &str) -> Result<()>;
    /// Records that the MCP session `id` was used at `now_ms` (milliseconds since the epoch,
    /// since a user may open hundreds a second; callers write it a minute apart at most): the
    /// least recently used sessions are the first to go. A session kept is used when kept.
    async fn touch_mcp_session(&self, id: &str, now_ms: i64) -> Result<()>;
    /// Forgets the user's MCP sessions beyond the `keep` most recently used; returns their ids,
    /// so that a process holding one can end it.
    async fn trim_mcp_sessions(&self, user_id: i64, keep: i64) -> Result<Vec<String>>;
}

#[async_trait]
impl McpSessions for Database {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn keep_mcp_session(&self, id: &str, session: &McpSession, now: i64) -> Result<()> {
        let sql =
            "INSERT INTO mcp_sessions (id, user_id, state, created_at, used_at) VALUES ($1, $2, $3, $4, $4 * 1000)
                   ON CONFLICT (id) DO UPDATE SET user_id = COALESCE(excluded.user_id, mcp_sessions.user_id),
                       state = COALESCE(excluded.state, mcp_sessions.state)";
        execute!(&self.pool, sql, id, session.user_id, session.state.as_deref(), now).map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn mcp_session(&self, id: &str) -> Result<Option<McpSession>> {
        fetch!(&self.pool, fetch_optional("SELECT user_id, state FROM mcp_sessions WHERE id = $1", id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete_mcp_session(&self, id: &str) -> Result<()> {
        execute!(&self.pool, "DELETE FROM mcp_sessions WHERE id = $1", id).map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn touch_mcp_session(&self, id: &str, now_ms: i64) -> Result<()> {
        execute!(&self.pool, "UPDATE mcp_sessions SET used_at = $1 WHERE id = $2", now_ms, id).map(drop)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn trim_mcp_sessions(&self, user_id: i64, keep: i64) -> Result<Vec<String>> {
        on!(&self.pool, |pool| {
            // The least recently used go; the id breaks ties, so that every process agrees.
            let ended = bind!(
                sqlx::query_scalar(
                    "DELETE FROM mcp_sessions WHERE id IN (
                         SELECT id FROM mcp_sessions WHERE user_id = $1
                         ORDER BY used_at DESC, id DESC LIMIT $3 OFFSET $2)
                     RETURNING id"
                ),
                user_id,
                keep,
                i64::MAX
            )
            .fetch_all(pool)
            .await?;
            Ok(ended)
        })
    }
}
