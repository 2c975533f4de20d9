//! What operating the platform asks of the store: readiness for probes, job and pool figures
//! for metrics, handing jobs back when a process stops, pruning what grows, and change notices
//! between the processes sharing one database.

use async_trait::async_trait;

use crate::Result;
use crate::database::{Backend, Database};
use crate::postgres;

/// Whether the database is ready for this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// It answers, and has every migration this build knows.
    Ready,
    /// It answers, but lacks migrations this build needs (it was restored from an older
    /// backup, say): `applied` is the last one it has, `known` the last one this build knows.
    Behind {
        /// The highest migration version applied.
        applied: i64,
        /// The highest migration version this build knows.
        known: i64,
    },
}

/// Jobs still to do, right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobGauges {
    /// Pending jobs (due, waiting to be due, or held).
    pub pending: i64,
    /// Pending jobs held under a live lease.
    pub leased: i64,
    /// Pending jobs due for longer than the overdue threshold and held by no one: the workers
    /// are behind.
    pub overdue: i64,
}

/// What grows with use and is deleted once old ([`Operations::prune`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pruned {
    /// The collection attempt log, by when each attempt was made.
    Attempts,
    /// The gateway's call log, by when each call was made.
    ToolCalls,
    /// Jobs done or failed, by when they ended (a pending job is never pruned).
    FinishedJobs,
    /// MCP sessions, by when they were opened (a client whose session is gone opens another).
    McpSessions,
}

impl Pruned {
    /// The statement deleting up to `$2` rows older than `$1`: the oldest first (lowest ids),
    /// in one short statement, so that no batch holds the table long.
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Pruned::Attempts => {
                "DELETE FROM collection_attempts WHERE id IN
                     (SELECT id FROM collection_attempts WHERE attempted_at < $1 ORDER BY id LIMIT $2)"
            }
            Pruned::ToolCalls => {
                "DELETE FROM tool_calls WHERE id IN
                     (SELECT id FROM tool_calls WHERE called_at < $1 ORDER BY id LIMIT $2)"
            }
            Pruned::FinishedJobs => {
                "DELETE FROM jobs WHERE id IN
                     (SELECT id FROM jobs WHERE state <> 'pending' AND updated_at < $1 ORDER BY id LIMIT $2)"
            }
            Pruned::McpSessions => {
                "DELETE FROM mcp_sessions WHERE id IN
                     (SELECT id FROM mcp_sessions WHERE created_at < $1 ORDER BY created_at LIMIT $2)"
            }
        }
    }
}

/// What a process hears of the others sharing its database ([`Operations::changes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A change another process (or this one) announced, as it was announced.
    Change(String),
    /// The connection that listens was lost and is back: changes may have gone unheard, so
    /// whatever is kept from the database should be read again.
    Missed,
}

/// How the store's connection pool is used right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolUse {
    /// Connections open.
    pub open: u32,
    /// Of them, idle.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
}

impl PoolUse {
    /// Of a sqlx pool.
    pub(crate) fn of<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) -> PoolUse {
        let idle = u32::try_from(pool.num_idle()).unwrap_or(u32::MAX);
        PoolUse { open: pool.size(), idle, max: pool.options().get_max_connections() }
    }
}

/// What operating the platform asks of the store.
#[async_trait]
pub trait Operations: Send + Sync {
    /// Whether the database answers and has every migration this build knows.
    async fn readiness(&self) -> Result<Readiness>;
    /// Pending jobs at `now`: all, held under a live lease, and due since before
    /// `overdue_before` and held by no one.
    async fn job_gauges(&self, now: i64, overdue_before: i64) -> Result<JobGauges>;
    /// How the connection pool is used right now.
    fn pool_use(&self) -> PoolUse;
    /// Calls `hook` with what each write of this store changed for its users, once it
    /// committed (see [`Change`](crate::Change)).
    fn on_change(&self, hook: crate::ChangeHook);
    /// Deletes up to `limit` rows of `what` from before `before`, the oldest first; returns
    /// how many (fewer than `limit`: nothing that old is left).
    async fn prune(&self, what: Pruned, before: i64, limit: i64) -> Result<u64>;
    /// Tells every process listening on this database (this one too, when it listens) of
    /// `change`, a short text (PostgreSQL `NOTIFY`). On SQLite, which one process owns, it
    /// does nothing.
    async fn announce(&self, change: &str) -> Result<()>;
    /// What the processes announce, as they do (PostgreSQL `LISTEN` on a connection of its
    /// own); `None` on SQLite, where there are no others to hear.
    async fn changes(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Heard>>>;
    /// The check value the key that seals this database's credentials made, when one is kept.
    async fn key_check(&self) -> Result<Option<Vec<u8>>>;
    /// Keeps `sealed` as the check value unless one is kept already, and returns the one kept:
    /// of two processes that start at once with different keys, both see the first one's.
    async fn keep_key_check(&self, sealed: &[u8], now: i64) -> Result<Vec<u8>>;
    /// The sealed credential of the oldest vault entry that has one, with its user and site
    /// (what the seal binds), to tell whether a key is the one that sealed them.
    async fn oldest_credential(&self) -> Result<Option<(i64, i64, Vec<u8>)>>;
}

#[async_trait]
impl Operations for Database {
    async fn readiness(&self) -> Result<Readiness> {
        on!(&self.pool, |pool| {
            let applied: i64 =
                sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success")
                    .fetch_one(pool)
                    .await?;
            let known = crate::migrations::latest();
            Ok(if applied >= known { Readiness::Ready } else { Readiness::Behind { applied, known } })
        })
    }

    async fn job_gauges(&self, now: i64, overdue_before: i64) -> Result<JobGauges> {
        on!(&self.pool, |pool| {
            let (pending, leased, overdue) = bind!(
                sqlx::query_as(
                    "SELECT count(*), count(*) FILTER (WHERE lease_expires > $1),
                            count(*) FILTER (WHERE not_before < $2 AND (lease_expires IS NULL OR lease_expires <= $1))
                     FROM jobs WHERE state = 'pending'"
                ),
                now,
                overdue_before
            )
            .fetch_one(pool)
            .await?;
            Ok(JobGauges { pending, leased, overdue })
        })
    }

    fn on_change(&self, hook: crate::ChangeHook) {
        self.hooks.add(hook);
    }

    fn pool_use(&self) -> PoolUse {
        on!(&self.pool, |pool| PoolUse::of(pool))
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn prune(&self, what: Pruned, before: i64, limit: i64) -> Result<u64> {
        let sql = match self.pool {
            Backend::Sqlite(_) => what.sql(),
            Backend::Postgres(_) => postgres::prune_sql(what),
        };
        execute!(&self.pool, sql, before, limit)
    }

    async fn announce(&self, change: &str) -> Result<()> {
        match &self.pool {
            // One process owns an SQLite database: there is nobody else to tell.
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(pool) => postgres::announce(pool, &self.channel, change).await,
        }
    }

    async fn changes(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Heard>>> {
        match &self.pool {
            // One process owns an SQLite database: there is nobody else to hear.
            Backend::Sqlite(_) => Ok(None),
            Backend::Postgres(pool) => postgres::changes(pool, &self.channel).await.map(Some),
        }
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn key_check(&self) -> Result<Option<Vec<u8>>> {
        on!(&self.pool, |pool| {
            let sealed = sqlx::query_scalar("SELECT sealed FROM key_check WHERE id = 1").fetch_optional(pool).await?;
            Ok(sealed)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn keep_key_check(&self, sealed: &[u8], now: i64) -> Result<Vec<u8>> {
        on!(&self.pool, |pool| {
            bind!(
                sqlx::query(
                    "INSERT INTO key_check (id, sealed, created_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING"
                ),
                sealed,
                now
            )
            .execute(pool)
            .await?;
            let kept = sqlx::query_scalar("SELECT sealed FROM key_check WHERE id = 1").fetch_one(pool).await?;
            Ok(kept)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn oldest_credential(&self) -> Result<Option<(i64, i64, Vec<u8>)>> {
        let sql = "SELECT user_id, site_id, credential FROM vault WHERE credential IS NOT NULL
                   ORDER BY added_at, user_id, site_id LIMIT 1";
        fetch!(&self.pool, fetch_optional(sql))
    }
}

#[cfg(test)]
mod tests {
    use super::Readiness;
    use crate::{Database, Operations};

    #[tokio::test]
    async fn a_database_missing_the_last_migration_is_behind() {
        let store = Database::open_sqlite("sqlite::memory:").await.unwrap();
        assert_eq!(store.readiness().await.unwrap(), Readiness::Ready);
        let known = crate::migrations::latest();
        let sql = "DELETE FROM _sqlx_migrations WHERE version = $1";
        on!(&store.pool, |pool| sqlx::query(sql).bind(known).execute(pool).await.map(drop)).unwrap();
        let applied = crate::migrations::second_to_last();
        assert_eq!(store.readiness().await.unwrap(), Readiness::Behind { applied, known });
    }
}
