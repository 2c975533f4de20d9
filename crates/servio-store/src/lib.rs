//! The platform's storage: one interface ([`Store`]) made of a part per domain, with SQLite
//! (embedded, the default) and PostgreSQL (several `servio serve` processes on one database)
//! behind it.
//!
//! Only this crate knows SQL. Each domain is a module with its types, its trait and its
//! queries: [`Accounts`] (`accounts.rs`), [`Sites`], [`Vault`], [`Directory`], [`Collection`]
//! (values and attempts), [`Jobs`], [`CallLog`], [`McpSessions`] and [`Operations`] (`ops.rs`).
//! A consumer takes the part it needs (`&dyn Jobs`), or [`Store`], all of them. Each query is
//! written once for both backends and run on whichever the [`Database`] is (`sql.rs`'s `on!`, or
//! `fetch!` and `execute!` for a method of one query);
//! what only one backend does lives in its module (`sqlite.rs`, `postgres.rs`), called by name.
//! Each migration is one template rendered per backend (`migrations.rs`), applied when the
//! store opens; an applied migration is never edited. Times are seconds since the Unix epoch;
//! secrets are stored only as hashes the caller computed. Collection outcomes and job states
//! are enums ([`AttemptOutcome`], [`JobState`]) stored as the text they always were.
//!
//! ```no_run
//! # async fn demo() -> Result<(), servio_store::StoreError> {
//! let store = servio_store::open("sqlite:///var/lib/servio/servio.db").await?;
//! let user = store.user_by_email("ana@example.com").await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

// The macros every module's queries use: declared first, so that the modules after see them.
#[macro_use]
mod sql;

mod accounts;
mod call_log;
mod changes;
mod collection;
mod database;
mod directory;
mod error;
mod health;
mod jobs;
mod mcp_sessions;
mod migrations;
mod ops;
mod postgres;
mod sites;
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;
mod text;
mod vault;

pub use accounts::{Accounts, ApiToken, Grant, SESSION_USE_PRECISION, Scope, Session, SessionInfo, TokenGrant, User};
pub use call_log::{CallLog, CallPage, LOGGED_ARGUMENTS_BYTES, LOGGED_DETAIL_BYTES, LOGGED_TOOL_NAME_BYTES, ToolCall};
pub use changes::{Change, ChangeHook};
pub use collection::{
    Attempt, AttemptOutcome, Collection, CollectionResult, PeriodKeys, PeriodNumber, Retries, SiteNumbers,
    SiteUnfilled, SiteValue, Slot, StoredPeriod, StoredValue, UNFILLED_LIMIT, UnfilledPeriod, UnknownName,
};
pub use database::Database;
pub use directory::{Claim, Directory, Found, Listing};
pub use error::{ErrorKind, Result, StoreError};
pub use health::{COUNT_STEP, DURATION_STEP_MS, Latency, OutcomeCount, ReasonCount, SiteHealth};
pub use jobs::{
    BackfillJobs, BackfillProgress, Completion, Job, JobCounts, JobKind, JobLease, JobState, Jobs, NewJob, last_served,
};
pub use mcp_sessions::{McpSession, McpSessions};
pub use ops::{Heard, JobGauges, Operations, PoolUse, Pruned, Readiness};
pub use sites::{FetchedManifest, SiteRecord, Sites, Version, VersionSummary};
pub use text::{NUL_STORED_AS, clipped, logged_arguments, storable};
pub use vault::{Approval, CurrentEntry, ListedEntry, Sealer, StartedConnect, Vault, VaultEntry};

/// Everything the platform stores: every domain's part. A consumer that needs only some takes
/// those (`&dyn Jobs`, `Arc<dyn CallLog>`); a `&dyn Store` gives any of them.
pub trait Store:
    Accounts + Sites + Vault + Directory + Collection + Jobs + CallLog + McpSessions + Operations + CollectorStore
{
}

/// What collecting needs of the store, and no more: jobs, collection and the vault (not
/// accounts, the Directory, the call log or MCP sessions). `servio worker` and the platform's
/// collector hold only this; every [`Store`] is one.
pub trait CollectorStore: Vault + Collection + Jobs {}

impl<T> CollectorStore for T where T: Vault + Collection + Jobs {}

impl<T> Store for T where
    T: Accounts + Sites + Vault + Directory + Collection + Jobs + CallLog + McpSessions + Operations
{
}

/// Opens the store at `url` (`sqlite:PATH`, `sqlite::memory:` or `postgres://...`) and applies
/// its migrations.
pub async fn open(url: &str) -> Result<Box<dyn Store>> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Box::new(Database::open_postgres(url).await?))
    } else if url.starts_with("sqlite:") {
        Ok(Box::new(Database::open_sqlite(url).await?))
    } else {
        Err(StoreError::BadUrl(url.to_owned()))
    }
}
