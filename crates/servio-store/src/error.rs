//! Why a store operation failed: one error type for the crate, its sources kept.

use std::path::PathBuf;

/// The result of a store operation: [`StoreError`] unless another error is named, as
/// `std::io::Result` is for I/O.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique value is taken already (an email, a token).
    #[error("{0} is already taken")]
    Conflict(&'static str),
    /// A user has as many of `what` as they may (`limit`): one must go before another is made.
    #[error("at most {limit} {what} per user")]
    AtLimit {
        /// What is counted (`API tokens`, `pending claims`).
        what: &'static str,
        /// How many a user may have.
        limit: i64,
    },
    /// The database URL is not one we open.
    #[error("unsupported database URL {0:?}: expected sqlite:PATH or postgres://...")]
    BadUrl(String),
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// A file of the embedded database could not be created or made private.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done (`creating`, `restricting`).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A stored value could not be read back (a packed row, an unknown outcome or state).
    #[error("unreadable stored data: {0}")]
    Corrupt(String),
}

/// What kind of failure a [`StoreError`] is, for callers that answer each kind differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A unique value is taken already: the caller's input, not the store, is at fault.
    Conflict,
    /// The store was not configured right (its URL).
    Config,
    /// The database, its migrations or its files failed, or it holds data we cannot read.
    Unavailable,
}

impl StoreError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreError::Conflict(_) | StoreError::AtLimit { .. } => ErrorKind::Conflict,
            StoreError::BadUrl(_) => ErrorKind::Config,
            StoreError::Database(_) | StoreError::Migration(_) | StoreError::Io { .. } | StoreError::Corrupt(_) => {
                ErrorKind::Unavailable
            }
        }
    }

    /// True for [`StoreError::Conflict`].
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::Conflict
    }
}

/// Maps a unique-constraint violation to [`StoreError::Conflict`].
pub(crate) fn conflict(error: sqlx::Error, what: &'static str) -> StoreError {
    match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict(what),
        _ => StoreError::Database(error),
    }
}
