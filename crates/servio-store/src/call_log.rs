//! The call log: the tool calls made through the AI gateway, each user's own ([`CallLog`]).

use async_trait::async_trait;

use crate::Change;
use crate::Result;
use crate::database::Database;
use crate::text::{clipped, logged_arguments, storable, storable_opt};

/// One tool call made through the AI gateway, for the user's call log.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ToolCall {
    /// Its id (0 for one not stored yet).
    pub id: i64,
    /// Whose.
    pub user_id: i64,
    /// The site called, while it is known.
    pub site_id: Option<i64>,
    /// The prefixed tool name the AI client used.
    pub tool: String,
    /// When the call started.
    pub called_at: i64,
    /// `ok`, or what went wrong (`invalid_arguments`, `site_error`, `unauthorized`, ...).
    pub status: String,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// The arguments as JSON, only when the user keeps them.
    pub arguments: Option<String>,
    /// The API token that made the call (`None`: a browser session, or a call logged before
    /// tokens were).
    pub token_id: Option<i64>,
    /// The token's name, read with the log while the token exists (`None` once revoked).
    #[sqlx(default)]
    pub token_name: Option<String>,
    /// What was asked: `tool` (a site's tool), `metrics` (`servio_metrics`), `resource` (a
    /// metric's resource, its address in `tool`) or `prompt`.
    pub kind: String,
    /// What went wrong, in words, at most [`LOGGED_DETAIL_BYTES`]; `None` when it went well.
    pub detail: Option<String>,
}

/// The most bytes of a call's worded status the log keeps.
pub const LOGGED_DETAIL_BYTES: usize = 1024;

/// The most bytes of a tool name the call log keeps: a longer name (only an unknown tool's can
/// be, §4 names are short) is kept cut, followed by its length ([`clipped`]).
pub const LOGGED_TOOL_NAME_BYTES: usize = 256;

/// The most bytes of a call's arguments the call log keeps (16 KiB); larger arguments are
/// logged as a JSON string saying their size instead.
pub const LOGGED_ARGUMENTS_BYTES: usize = 16 * 1024;

/// Which calls of a user's log to read: the newest `limit` before the call `before` (its id),
/// or the newest of all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPage {
    /// Only calls older than this one (an id from an earlier page).
    pub before: Option<i64>,
    /// How many at most.
    pub limit: i64,
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

/// Each user's log of the tool calls made through the AI gateway, and whether it keeps their arguments.
#[async_trait]
pub trait CallLog: Send + Sync {
    /// Whether the gateway keeps the arguments of this user's tool calls in their log.
    async fn log_arguments(&self, user_id: i64) -> Result<bool>;
    /// Sets whether the gateway keeps the arguments of this user's tool calls.
    /// Tells [`Change::Context`].
    async fn set_log_arguments(&self, user_id: i64, keep: bool) -> Result<()>;
    /// Appends tool calls to their users' logs, in one transaction, each field bounded (the
    /// tool name to [`LOGGED_TOOL_NAME_BYTES`], the arguments to [`LOGGED_ARGUMENTS_BYTES`]).
    async fn log_tool_calls(&self, calls: &[ToolCall]) -> Result<()>;
    /// A page of a user's tool calls, newest first.
    async fn tool_calls(&self, user_id: i64, page: CallPage) -> Result<Vec<ToolCall>>;
}

#[async_trait]
impl CallLog for Database {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn log_arguments(&self, user_id: i64) -> Result<bool> {
        on!(&self.pool, |pool| {
            let keep: Option<bool> = sqlx::query_scalar("SELECT log_arguments FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(pool)
                .await?;
            Ok(keep.unwrap_or(false))
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn set_log_arguments(&self, user_id: i64, keep: bool) -> Result<()> {
        execute!(&self.pool, "UPDATE users SET log_arguments = $1 WHERE id = $2", keep, user_id)?;
        self.hooks.tell(&[Change::Context(user_id)]);
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn log_tool_calls(&self, calls: &[ToolCall]) -> Result<()> {
        on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
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
                    call.user_id,
                    call.site_id,
                    tool.as_str(),
                    call.called_at,
                    &*status,
                    call.duration_ms,
                    arguments.as_deref(),
                    call.token_id,
                    &*kind,
                    detail.as_deref()
                )
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn tool_calls(&self, user_id: i64, page: CallPage) -> Result<Vec<ToolCall>> {
        let before = page.before.unwrap_or(i64::MAX);
        fetch!(&self.pool, fetch_all(TOOL_CALLS_PAGE, user_id, before, page.limit, READ_WHOLE.0, READ_WHOLE.1))
    }
}
