//! The one type that implements the store, [`Database`]: a connection pool of either backend.
//! Each domain module implements its part of [`crate::Store`] for it, running each query on
//! whichever backend it is with [`on!`](crate::sql).

use sqlx::{PgConnection, PgPool, SqliteConnection, SqlitePool};

use crate::Result;
use crate::changes::Hooks;

/// One thing in either backend's kind: a pool, a transaction, a connection.
pub(crate) enum Backend<S, P> {
    /// SQLite's.
    Sqlite(S),
    /// PostgreSQL's.
    Postgres(P),
}

/// A connection pool of either backend.
pub(crate) type Pool = Backend<SqlitePool, PgPool>;

/// A connection of either backend, as a step that is part of a caller's transaction takes it:
/// `(&mut *tx).into()` makes one of a transaction of either.
pub(crate) type Conn<'c> = Backend<&'c mut SqliteConnection, &'c mut PgConnection>;

impl<'c> From<&'c mut SqliteConnection> for Conn<'c> {
    fn from(conn: &'c mut SqliteConnection) -> Self {
        Backend::Sqlite(conn)
    }
}

impl<'c> From<&'c mut PgConnection> for Conn<'c> {
    fn from(conn: &'c mut PgConnection) -> Self {
        Backend::Postgres(conn)
    }
}

/// The store in SQLite (embedded, one process) or PostgreSQL (several processes sharing it):
/// every part of [`crate::Store`] is implemented for it, in the module of its domain.
pub struct Database {
    pub(crate) pool: Pool,
    /// The channel of change notices (PostgreSQL; empty on SQLite): one per schema, since
    /// notices are database-wide and each schema is a platform of its own.
    pub(crate) channel: String,
    /// Told of what each write changed for its users, once it committed.
    pub(crate) hooks: Hooks,
}

impl Database {
    /// Opens (creating when missing) the SQLite database at `url` (`sqlite:PATH` or
    /// `sqlite::memory:`) and migrates it.
    pub async fn open_sqlite(url: &str) -> Result<Database> {
        let pool = crate::sqlite::connect(url).await?;
        Ok(Database { pool: Backend::Sqlite(pool), channel: String::new(), hooks: Hooks::default() })
    }

    /// Connects to the PostgreSQL database at `url` and migrates it.
    pub async fn open_postgres(url: &str) -> Result<Database> {
        Database::from_pg_pool(crate::postgres::connect(url).await?).await
    }

    /// Uses an existing PostgreSQL pool (tests give each its own schema this way) and migrates
    /// it.
    pub async fn from_pg_pool(pool: PgPool) -> Result<Database> {
        let channel = crate::postgres::prepare(&pool).await?;
        Ok(Database { pool: Backend::Postgres(pool), channel, hooks: Hooks::default() })
    }
}
