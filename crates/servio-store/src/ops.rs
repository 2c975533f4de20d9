//! What operating the platform asks of the store: readiness for probes, job and pool figures
//! for metrics, handing jobs back when a process stops, pruning what grows, and change notices
//! between the processes sharing one database.

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
    pub claimed: i64,
    /// Pending jobs due for longer than the overdue threshold and held by no one: the workers
    /// are behind.
    pub overdue: i64,
}

/// What grows with use and is deleted once old ([`crate::Store::prune`]).
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

/// What a process hears of the others sharing its database ([`crate::Store::changes`]).
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

#[cfg(test)]
mod tests {
    use super::Readiness;
    use crate::{SqliteStore, Store};

    #[tokio::test]
    async fn a_database_missing_the_last_migration_is_behind() {
        let store = SqliteStore::open("sqlite::memory:").await.unwrap();
        assert_eq!(store.readiness().await.unwrap(), Readiness::Ready);
        let known = crate::migrations::latest();
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1").bind(known).execute(&store.pool).await.unwrap();
        let applied = crate::migrations::second_to_last();
        assert_eq!(store.readiness().await.unwrap(), Readiness::Behind { applied, known });
    }
}
