//! The platform's storage: one interface ([`Store`]), with SQLite (embedded, the default) and
//! PostgreSQL (several `servio serve` processes on one database) behind it.
//!
//! Only this crate knows SQL. Each query is written once for both backends (`shared.rs`); each
//! backend's module keeps what only it does (`sqlite.rs`, `postgres.rs`). Each migration is one
//! template rendered per backend (`migrations.rs`), applied when the store opens; an applied
//! migration is never edited. Times are seconds since the Unix epoch; secrets are stored only
//! as hashes the caller computed. Collection outcomes and job states are enums
//! ([`AttemptOutcome`], [`JobState`]) stored as the text they always were.
//!
//! ```no_run
//! # async fn demo() -> Result<(), servio_store::StoreError> {
//! let store = servio_store::open("sqlite:///var/lib/servio/servio.db").await?;
//! let user = store.user_by_email("ana@example.com").await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

/// The columns a [`Found`] listing is read from, on a query over `listings l JOIN sites s`:
/// the listing of every search, shared and per dialect.
macro_rules! found_columns {
    () => {
        "l.site_id, l.claim_id, l.listed, l.suspended_reason, l.name, l.description, l.tools, l.verified_at, s.origin"
    };
}

mod collection;
mod error;
mod health;
mod jobs;
mod migrations;
mod ops;
mod postgres;
mod shared;
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;
mod text;

use async_trait::async_trait;

pub use collection::{AttemptOutcome, Attempted, CollectionResult, UnknownName};
pub use error::{ErrorKind, StoreError};
pub use health::{COUNT_STEP, DURATION_STEP_MS, Latency, OutcomeCount, ReasonCount, SiteHealth};
pub use jobs::{Completion, Job, JobClaim, JobCounts, JobKind, JobState, NewJob, last_served};
pub use ops::{Heard, JobGauges, PoolUse, Pruned, Readiness};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;
pub use text::{NUL_STORED_AS, clipped, logged_arguments, storable};

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
}

/// A site the platform knows, with the last valid manifest it fetched.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SiteRecord {
    /// Its id.
    pub id: i64,
    /// The origin, such as `https://example.com`.
    pub origin: String,
    /// Where the manifest was found.
    pub manifest_url: String,
    /// The manifest as served (valid when stored).
    pub manifest: String,
    /// `ETag` of that copy.
    pub etag: Option<String>,
    /// `Last-Modified` of that copy.
    pub last_modified: Option<String>,
    /// When it was fetched.
    pub fetched_at: i64,
    /// Why the last refresh failed, while it keeps failing.
    pub stale_error: Option<String>,
}

/// One site of a user's vault.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct VaultEntry {
    /// The site.
    #[sqlx(flatten)]
    pub site: SiteRecord,
    /// The sealed credential, when the user gave one.
    pub credential: Option<Vec<u8>>,
    /// The manifest the user approved (the one current when they added the site, until they
    /// approve another).
    pub approved_manifest: Option<String>,
    /// The site's version the user chose to keep their approved manifest against ("keep the
    /// approved version"): its changes are not offered again until the site changes again.
    pub kept_version: Option<i64>,
}

/// What an approval (or keeping the approved version) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Done.
    Done,
    /// The site is not in the user's vault.
    NotInVault,
    /// The version named is no longer the site's current one; `current` is.
    NotCurrent {
        /// The site's current version.
        current: Option<Version>,
    },
}

/// One stored version of a site's manifest.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Version {
    /// Its id.
    pub id: i64,
    /// When it was fetched.
    pub fetched_at: i64,
    /// The manifest.
    pub manifest: String,
}

/// A stored version as the versions list shows it: no text, its changes recorded at save.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct VersionSummary {
    /// Its id.
    pub id: i64,
    /// When it was fetched.
    pub fetched_at: i64,
    /// What changed from the version before it, as a JSON array of lines for people; `None`
    /// when nothing was recorded.
    pub changes: Option<String>,
    /// Whether its text is the one the asking user approved.
    pub approved: bool,
}

/// A claim of ownership of an origin, with the token its manifest must list.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Claim {
    /// Its id.
    pub id: i64,
    /// Who claims.
    pub user_id: i64,
    /// The origin claimed.
    pub origin: String,
    /// `wmcp_verify_` and 32 hex digits.
    pub token: String,
    /// When it was made.
    pub created_at: i64,
}

/// What a Directory listing shows, and whether it is shown.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Listing {
    /// The site.
    pub site_id: i64,
    /// The claim that verified it.
    pub claim_id: i64,
    /// Whether it is public now.
    pub listed: bool,
    /// Why it is not, while suspended.
    pub suspended_reason: Option<String>,
    /// The site's name.
    pub name: String,
    /// The site's description.
    pub description: String,
    /// Its tools' names and descriptions, one per line.
    pub tools: String,
    /// When the token was last found in the manifest.
    pub verified_at: i64,
}

/// A search hit in the Directory.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Found {
    /// The listing.
    #[sqlx(flatten)]
    pub listing: Listing,
    /// The site's origin.
    pub origin: String,
}

/// Where a collected value belongs: user, site, metric and period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot<'a> {
    /// The user.
    pub user_id: i64,
    /// The site.
    pub site_id: i64,
    /// The metric's key.
    pub metric_key: &'a str,
    /// `hour`, `day`, `week` or `month`.
    pub granularity: &'a str,
    /// The period's first instant (seconds since the Unix epoch).
    pub period_start: i64,
    /// The period's end (exclusive).
    pub period_end: i64,
    /// The period's first local date.
    pub start_date: &'a str,
    /// The period's key, its local start as collected (`servio_manifest::period::Period::key`):
    /// the slot holds one value per key, so the same local period collected under another zone
    /// replaces the value (interpretation §8).
    pub period_key: &'a str,
}

impl Slot<'_> {
    /// The key an hour value collected before keys existed has (migration 0014): its start
    /// date and first instant, `2026-11-01@1793512800`. Its zone was not recorded, so its
    /// clock hour is unknown; a new value of the hour starting at that instant replaces it.
    pub(crate) fn legacy_key(&self) -> String {
        format!("{}@{}", self.start_date, self.period_start)
    }
}

/// A stored value.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredValue {
    /// The metric.
    pub metric_key: String,
    /// Its granularity.
    pub granularity: String,
    /// The period's first instant.
    pub period_start: i64,
    /// The period's end (exclusive).
    pub period_end: i64,
    /// The period's first local date.
    pub start_date: String,
    /// The period's key (see [`Slot::period_key`]).
    pub period_key: String,
    /// The number.
    pub value: f64,
    /// The value as the site sent it.
    pub raw: String,
    /// When it was collected.
    pub collected_at: i64,
    /// What it was read from, a JSON object (see [`CollectionResult::Stored`]); `None` for
    /// values collected before it was recorded.
    pub source: Option<String>,
}

/// One metric's values from some time on, as the dashboard reads them: what it shows of each
/// value, and the newest one's text as the site sent it (the one it shows). The other fields of
/// a [`StoredValue`], read for each of a dashboard's 3,100 values, were a fifth of its query.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The site.
    pub site_id: i64,
    /// The metric.
    pub metric_key: String,
    /// Each value as (the period's first instant, its first local date, the number), oldest
    /// first; never empty.
    pub points: Vec<(i64, String, f64)>,
    /// The newest value as the site sent it.
    pub latest_raw: String,
}

/// One collection attempt, kept whatever happened.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Attempt {
    /// The metric.
    pub metric_key: String,
    /// The period's first local date.
    pub start_date: String,
    /// When.
    pub attempted_at: i64,
    /// How it ended.
    #[sqlx(try_from = "String")]
    pub outcome: AttemptOutcome,
    /// Why, when not stored.
    pub reason: Option<String>,
    /// The raw value found, when there was one.
    pub raw: Option<String>,
    /// When a transient failure is tried again (Unix seconds), if it is.
    pub retry_at: Option<i64>,
}

/// The most periods [`Store::unfilled_periods`] returns: a range's worth for any granularity
/// (400 days of hours is 9,600).
pub const UNFILLED_LIMIT: i64 = 10_000;

/// A period of a metric with no value, and the latest attempt at it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UnfilledPeriod {
    /// The period's first instant.
    pub period_start: i64,
    /// The period's first local date.
    pub start_date: String,
    /// The period's key (`None` for attempts logged before keys).
    pub period_key: Option<String>,
    /// When the latest attempt was made.
    pub attempted_at: i64,
    /// How it ended: dropped, failed or retry.
    #[sqlx(try_from = "String")]
    pub outcome: AttemptOutcome,
    /// Why.
    pub reason: Option<String>,
    /// When a transient failure is tried again, if it is.
    pub retry_at: Option<i64>,
}

/// The transient failures of one slot so far, for backoff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retries {
    /// How many attempts failed transiently.
    pub failures: i64,
    /// When the latest of them was.
    pub last_at: Option<i64>,
    /// The latest time a site asked to be tried again at (`Retry-After`).
    pub retry_at: Option<i64>,
}

/// A fetched manifest to remember for a site.
#[derive(Debug, Clone)]
pub struct FetchedManifest<'a> {
    /// The origin.
    pub origin: &'a str,
    /// Where it was found.
    pub manifest_url: &'a str,
    /// Its text.
    pub manifest: &'a str,
    /// `ETag`.
    pub etag: Option<&'a str>,
    /// `Last-Modified`.
    pub last_modified: Option<&'a str>,
}

/// Makes the sealed credential of a site from its id (the id is part of what the seal binds).
pub type Sealer<'a> = &'a (dyn Fn(i64) -> Vec<u8> + Send + Sync);

/// An OAuth "Connect" attempt in progress, found again by the hash of its `state` when the
/// browser comes back.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OAuthAttempt {
    /// SHA-256 of the attempt's `state`, in hex.
    pub state_hash: String,
    /// Who started it.
    pub user_id: i64,
    /// For which vault site.
    pub site_id: i64,
    /// What the platform needs to finish it (endpoints, client, PKCE verifier), sealed.
    pub sealed: Vec<u8>,
    /// When it was started.
    pub created_at: i64,
    /// When it is no longer good.
    pub expires_at: i64,
}

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

/// Everything the platform stores.
#[async_trait]
pub trait Store: Send + Sync {
    /// Creates a user; [`StoreError::Conflict`] when the email is taken.
    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        time_zone: &str,
        now: i64,
    ) -> Result<User, StoreError>;
    /// The user with this (lowercased) email.
    async fn user_by_email(&self, email: &str) -> Result<Option<User>, StoreError>;
    /// The user with this id.
    async fn user(&self, id: i64) -> Result<Option<User>, StoreError>;
    /// Changes a user's time zone.
    async fn set_time_zone(&self, user_id: i64, time_zone: &str) -> Result<(), StoreError>;

    /// Records a session.
    async fn create_session(&self, token_hash: &str, session: &Session, now: i64) -> Result<(), StoreError>;
    /// The session with this token hash, unless it has expired or gone unused for longer than
    /// its idle limit; records the use to the hour ([`SESSION_USE_PRECISION`]), so that a page
    /// view is not a write each time.
    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<Session>, StoreError>;
    /// Ends a session.
    async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError>;
    /// The user's live sessions, newest first; `current` marks the one hashed as `current`.
    async fn sessions(&self, user_id: i64, current: &str, now: i64) -> Result<Vec<SessionInfo>, StoreError>;
    /// Ends every session of the user but the one hashed as `keep` (none with `""`): "sign out
    /// everywhere". Returns how many ended.
    async fn delete_sessions(&self, user_id: i64, keep: &str) -> Result<u64, StoreError>;
    /// Deletes the user's sessions beyond the `keep` most recently used (a sign-in that would
    /// pass the limit signs out the session least recently used); returns how many.
    async fn trim_sessions(&self, user_id: i64, keep: i64) -> Result<u64, StoreError>;
    /// Replaces the user's password hash.
    async fn set_password_hash(&self, user_id: i64, password_hash: &str) -> Result<(), StoreError>;
    /// Deletes the user and, by cascade, everything that is theirs: sessions, API tokens, vault
    /// entries with their credentials, values, attempts, jobs, calls, claims and listings.
    /// False when there was no such user.
    async fn delete_user(&self, user_id: i64) -> Result<bool, StoreError>;
    /// Deletes up to `limit` sessions that have expired or idled out; returns how many. Small
    /// batches keep each statement short next to the requests using the table.
    async fn purge_sessions(&self, now: i64, limit: i64) -> Result<u64, StoreError>;

    /// Records an API token; [`StoreError::AtLimit`] when the user has `limit` already.
    async fn create_api_token(
        &self,
        user_id: i64,
        name: &str,
        token_hash: &str,
        now: i64,
        limit: i64,
    ) -> Result<ApiToken, StoreError>;
    /// The owner of the API token with this hash, and the token's id; records the use to the
    /// minute (a token used again within a minute of its recorded use is not written again, so
    /// that a program polling with it does not turn every read into a write).
    async fn user_by_api_token(&self, token_hash: &str, now: i64) -> Result<Option<(User, i64)>, StoreError>;
    /// A user's API tokens.
    async fn api_tokens(&self, user_id: i64) -> Result<Vec<ApiToken>, StoreError>;
    /// Deletes one of a user's API tokens; false when there was none.
    async fn delete_api_token(&self, user_id: i64, id: i64) -> Result<bool, StoreError>;
    /// Deletes every API token of a user; how many there were.
    async fn delete_api_tokens(&self, user_id: i64) -> Result<u64, StoreError>;

    /// Records a site's manifest (creating the site, or replacing its manifest), clearing any
    /// stale mark.
    async fn save_site(&self, fetched: &FetchedManifest<'_>, now: i64) -> Result<SiteRecord, StoreError>;
    /// Puts a site in a user's vault; [`StoreError::Conflict`] when it is there already.
    async fn add_to_vault(&self, user_id: i64, site_id: i64, now: i64) -> Result<(), StoreError>;
    /// Saves the fetched manifest as its site's current one and adds the site to the user's
    /// vault with the credential `seal` makes for the site's id, all in one transaction: a
    /// failure leaves no vault entry without its credential, nor a credential without it.
    async fn add_site(
        &self,
        fetched: &FetchedManifest<'_>,
        user_id: i64,
        seal: Option<Sealer<'_>>,
        now: i64,
    ) -> Result<SiteRecord, StoreError>;
    /// The sites in a user's vault, oldest first.
    async fn vault(&self, user_id: i64) -> Result<Vec<SiteRecord>, StoreError>;
    /// One site of a user's vault; `None` when it is not theirs.
    async fn vault_entry(&self, user_id: i64, site_id: i64) -> Result<Option<VaultEntry>, StoreError>;
    /// Sets (or clears) the encrypted credential of a vault entry; false when there is none.
    async fn set_credential(&self, user_id: i64, site_id: i64, credential: Option<&[u8]>) -> Result<bool, StoreError>;
    /// Takes a site out of a user's vault, with what was collected for them from it (values,
    /// attempts, jobs); false when it was not there.
    async fn remove_from_vault(&self, user_id: i64, site_id: i64) -> Result<bool, StoreError>;
    /// Approves, for this user, the version `version_id` of the site's manifest, only while it
    /// is the site's current one (checked in the same statement): a user approves the text they
    /// were shown, never one saved since.
    async fn approve(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval, StoreError>;
    /// Keeps the user's approved manifest and stops offering the changes up to `version_id`,
    /// the site's current version (guarded as [`Store::approve`]), until the site changes again.
    async fn keep_approved(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval, StoreError>;
    /// The site's current version: the newest, whose text is the site's manifest.
    async fn current_version(&self, site_id: i64) -> Result<Option<Version>, StoreError>;
    /// The users who have the site in their vault.
    async fn site_users(&self, site_id: i64) -> Result<Vec<i64>, StoreError>;
    /// The current version of every site in the user's vault, as (site id, version id).
    async fn current_versions(&self, user_id: i64) -> Result<Vec<(i64, i64)>, StoreError>;
    /// Keeps a "Connect" attempt; expired attempts go, and the user's oldest beyond `keep`.
    async fn create_oauth_attempt(&self, attempt: &OAuthAttempt, keep: i64, now: i64) -> Result<(), StoreError>;
    /// Takes (and so ends) the attempt of `user_id` with this state hash, unless expired.
    async fn take_oauth_attempt(
        &self,
        state_hash: &str,
        user_id: i64,
        now: i64,
    ) -> Result<Option<OAuthAttempt>, StoreError>;
    /// Approves `judged`, a text of the site's manifest whose change from `previous` needs no
    /// approval, for every user whose approved manifest is `previous` (exactly these texts,
    /// whatever the site's row holds by now); returns those users.
    async fn advance_approvals(&self, site_id: i64, previous: &str, judged: &str) -> Result<Vec<i64>, StoreError>;
    /// The versions of a site's manifest, newest first.
    async fn versions(&self, site_id: i64) -> Result<Vec<Version>, StoreError>;
    /// What the versions list shows of a site's versions, newest first, without their texts:
    /// each with its stored changes and whether its text is `approved`.
    async fn version_summaries(&self, site_id: i64, approved: &str) -> Result<Vec<VersionSummary>, StoreError>;
    /// Records what changed in the site's version whose text is `manifest` (JSON lines), where
    /// nothing is recorded yet.
    async fn describe_version(&self, site_id: i64, manifest: &str, changes: &str) -> Result<(), StoreError>;
    /// Deletes the versions of a site (of every site, for `None`) beyond its newest `keep`,
    /// except those a user still has approved (`vault.approved_manifest`) or kept against
    /// (`vault.kept_version`); returns how many went.
    async fn prune_versions(&self, site_id: Option<i64>, keep: i64) -> Result<u64, StoreError>;
    /// Records that a refresh failed; the last valid manifest stays in use.
    async fn mark_stale(&self, site_id: i64, error: &str) -> Result<(), StoreError>;
    /// Records that a refresh found the manifest unchanged.
    async fn touch_site(&self, site_id: i64, now: i64) -> Result<(), StoreError>;
    /// A site by its id, whoever has it (the Directory's owner pages).
    async fn site(&self, id: i64) -> Result<Option<SiteRecord>, StoreError>;
    /// Sites last fetched before `before`, oldest first, at most `limit`.
    async fn sites_due(&self, before: i64, limit: i64) -> Result<Vec<SiteRecord>, StoreError>;

    /// Records a claim; [`StoreError::Conflict`] when this user claimed this origin already,
    /// [`StoreError::AtLimit`] when `limit` of the user's claims are pending (not verified).
    async fn create_claim(
        &self,
        user_id: i64,
        origin: &str,
        token: &str,
        now: i64,
        limit: i64,
    ) -> Result<Claim, StoreError>;
    /// Deletes the user's claim `id` when no listing stands on it (not verified); false when
    /// there is no such claim.
    async fn delete_pending_claim(&self, user_id: i64, id: i64) -> Result<bool, StoreError>;
    /// A user's claims.
    async fn claims(&self, user_id: i64) -> Result<Vec<Claim>, StoreError>;
    /// Every claim on an origin (one per claimant).
    async fn claims_on(&self, origin: &str) -> Result<Vec<Claim>, StoreError>;
    /// Creates or updates the listing of a site.
    async fn save_listing(&self, listing: &Listing) -> Result<(), StoreError>;
    /// The listing of a site.
    async fn listing(&self, site_id: i64) -> Result<Option<Listing>, StoreError>;
    /// The listing a claim verified, if any (listed, or suspended with the reason).
    async fn claim_listing(&self, claim_id: i64) -> Result<Option<Listing>, StoreError>;
    /// Listed sites matching `query` (full-text, every word), best first; all listed sites
    /// when the query has no words.
    async fn search(&self, query: &str, limit: i64) -> Result<Vec<Found>, StoreError>;

    /// Writes what one collection of `slot` made at `now` came to, in one transaction: its
    /// value when there is one (replacing an earlier value of the slot; the attempt log keeps
    /// both) and its attempt (none for [`CollectionResult::Abandoned`]). Backfills write
    /// through this; jobs through [`Store::complete_jobs`], which writes the same under the
    /// job's fence.
    async fn record_result(&self, slot: &Slot<'_>, result: &CollectionResult<'_>, now: i64) -> Result<(), StoreError>;
    /// The transient failures of a slot (its period key) so far.
    async fn retries(&self, slot: &Slot<'_>) -> Result<Retries, StoreError>;
    /// A user's values of one metric of one site whose period starts within `starts` (Unix
    /// seconds), oldest first.
    async fn values(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<StoredValue>, StoreError>;
    /// How collections from `site_id` ended since `since`, across its users (see the `health`
    /// module): only the figures at least `min_users` distinct users stand behind, counting
    /// only users who have collected from the site on at least `min_days` distinct days,
    /// rounded (`COUNT_STEP`, `DURATION_STEP_MS`).
    async fn site_health(
        &self,
        site_id: i64,
        since: i64,
        min_users: i64,
        min_days: i64,
    ) -> Result<SiteHealth, StoreError>;
    /// The latest attempts for a user's site, newest first.
    async fn attempts(&self, user_id: i64, site_id: i64, limit: i64) -> Result<Vec<Attempt>, StoreError>;
    /// The periods of one metric starting within `starts` that have no value, each with its
    /// latest attempt (why it has none), oldest period first; at most [`UNFILLED_LIMIT`].
    async fn unfilled_periods(
        &self,
        user_id: i64,
        site_id: i64,
        metric_key: &str,
        starts: std::ops::Range<i64>,
    ) -> Result<Vec<UnfilledPeriod>, StoreError>;
    /// Every vault entry of every user, as (user, entry), for the collector.
    async fn all_vault_entries(&self) -> Result<Vec<(User, VaultEntry)>, StoreError>;
    /// The vault entries of `pairs` (user id, site id) with their users, in one query for up
    /// to a thousand pairs: a worker loads those of a claimed batch at once. A pair no longer
    /// in a vault (or whose user is gone) is left out; the order is the database's.
    async fn entries_of(&self, pairs: &[(i64, i64)]) -> Result<Vec<(User, VaultEntry)>, StoreError>;
    /// Whether a slot needs no more work: a value is stored for its period key, or an attempt
    /// for that key ended for good (`dropped` or `failed`; transient failures are logged as
    /// `retry` and do not count). The same local period under another zone is the same slot.
    async fn slot_settled(&self, slot: &Slot<'_>) -> Result<bool, StoreError>;

    /// Every site of a user's vault with its credential and approved manifest, oldest first.
    async fn vault_entries(&self, user_id: i64) -> Result<Vec<VaultEntry>, StoreError>;
    /// Whether the gateway keeps the arguments of this user's tool calls in their log.
    async fn log_arguments(&self, user_id: i64) -> Result<bool, StoreError>;
    /// Sets whether the gateway keeps the arguments of this user's tool calls.
    async fn set_log_arguments(&self, user_id: i64, keep: bool) -> Result<(), StoreError>;
    /// Appends tool calls to their users' logs, in one transaction, each field bounded (the
    /// tool name to [`LOGGED_TOOL_NAME_BYTES`], the arguments to [`LOGGED_ARGUMENTS_BYTES`]).
    async fn log_tool_calls(&self, calls: &[ToolCall]) -> Result<(), StoreError>;
    /// A page of a user's tool calls, newest first.
    async fn tool_calls(&self, user_id: i64, page: CallPage) -> Result<Vec<ToolCall>, StoreError>;
    /// Stores many values in one transaction, each replacing an earlier one of its slot as
    /// [`Store::record_result`] does, and logs no attempts: for seeding (benchmarks, imports),
    /// where one durable commit per value would take minutes.
    async fn store_values(&self, values: &[(Slot<'_>, f64, &str)], now: i64) -> Result<(), StoreError>;
    /// A user's values of several (site, metric key) pairs whose period starts at or after
    /// `since`, one [`Series`] per pair that has any, ordered by site and key: the dashboard's
    /// one query, where one query per metric cost more than the rest of a request.
    async fn values_of(&self, user_id: i64, metrics: &[(i64, &str)], since: i64) -> Result<Vec<Series>, StoreError>;
    // Jobs: scheduled collections shared by many workers (see the `jobs` module).
    /// Enqueues a job per slot; a slot that has a job already keeps it as it is (so planning
    /// from several processes is idempotent). Returns how many jobs are new.
    async fn enqueue_jobs(&self, jobs: &[NewJob<'_>], now: i64) -> Result<u64, StoreError>;
    /// Claims up to `claim.limit` pending jobs due at `claim.now` and not leased (or whose
    /// lease has expired), fairly: every user's scheduled jobs before any backfill, and within
    /// each kind the users in turns (each one's soonest due job, then each one's next), so one
    /// user's backlog delays nobody else's due jobs by more than a turn; the cost of a claim
    /// grows with the users who have pending jobs, not with their number (at most a batch of
    /// each user's is read). It leases them to `claim.owner`, incrementing each
    /// one's fence, and with them every other such job of the same (user, site, period key):
    /// the metrics of a period that share a call are claimed together. Periods are taken whole
    /// while the jobs before them number under `claim.limit`, so a batch passes it by at most
    /// the last period's other jobs. Jobs another claimer holds are skipped, never waited for.
    async fn claim_jobs(&self, claim: &JobClaim<'_>) -> Result<Vec<Job>, StoreError>;
    /// Completes claimed jobs in one transaction: for each, only while its fence is still the
    /// job's, sets the job's new state and writes its result (value and attempt); one whose
    /// fence is stale writes nothing. Returns, in order, whether each was committed (`false`:
    /// fenced out, another claim holds the job).
    async fn complete_jobs(&self, completions: &[Completion<'_>], now: i64) -> Result<Vec<bool>, StoreError>;
    /// How many jobs are in each state.
    async fn job_counts(&self) -> Result<JobCounts, StoreError>;
    /// How many jobs of one vault entry are still to do (due, leased, or waiting to retry):
    /// the progress of a backfill or of the first collection of a new site.
    async fn pending_jobs(&self, user_id: i64, site_id: i64) -> Result<i64, StoreError>;
    /// How many backfill jobs of the user, over all their sites, are still to do (the cap on a
    /// user's backfills in flight is checked against it).
    async fn pending_backfills(&self, user_id: i64) -> Result<i64, StoreError>;
    /// Hands back the pending jobs leased to `owner` (a process that stops): their leases end
    /// and they are due at `now`, so another worker claims them at once, and their fences move
    /// on, so a late result of `owner`'s is fenced out. Returns how many.
    async fn release_jobs(&self, owner: &str, now: i64) -> Result<u64, StoreError>;
    // Operations (see the `ops` module).
    /// Whether the database answers and has every migration this build knows.
    async fn readiness(&self) -> Result<Readiness, StoreError>;
    /// Pending jobs at `now`: all, held under a live lease, and due since before
    /// `overdue_before` and held by no one.
    async fn job_gauges(&self, now: i64, overdue_before: i64) -> Result<JobGauges, StoreError>;
    /// How the connection pool is used right now.
    fn pool_use(&self) -> PoolUse;
    /// Deletes up to `limit` rows of `what` from before `before`, the oldest first; returns
    /// how many (fewer than `limit`: nothing that old is left).
    async fn prune(&self, what: Pruned, before: i64, limit: i64) -> Result<u64, StoreError>;
    // Processes sharing the database.
    /// Tells every process listening on this database (this one too, when it listens) of
    /// `change`, a short text (PostgreSQL `NOTIFY`). On SQLite, which one process owns, it
    /// does nothing.
    async fn announce(&self, change: &str) -> Result<(), StoreError>;
    /// What the processes announce, as they do (PostgreSQL `LISTEN` on a connection of its
    /// own); `None` on SQLite, where there are no others to hear.
    async fn changes(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Heard>>, StoreError>;
    // MCP sessions, which any process may serve.
    /// Keeps what is known of the MCP session `id`: `session.user_id`, who opened it, and
    /// `session.state`, the client's `initialize` parameters (JSON); a `None` keeps what was
    /// kept before (the SDK saves the state, and the platform the owner, each in its own time).
    async fn keep_mcp_session(&self, id: &str, session: &McpSession, now: i64) -> Result<(), StoreError>;
    /// The owner and state of the MCP session `id`, when it exists.
    async fn mcp_session(&self, id: &str) -> Result<Option<McpSession>, StoreError>;
    /// Forgets the MCP session `id`.
    async fn delete_mcp_session(&self, id: &str) -> Result<(), StoreError>;
    /// Records that the MCP session `id` was used at `now_ms` (milliseconds since the epoch,
    /// since a user may open hundreds a second; callers write it a minute apart at most): the
    /// least recently used sessions are the first to go. A session kept is used when kept.
    async fn touch_mcp_session(&self, id: &str, now_ms: i64) -> Result<(), StoreError>;
    /// Forgets the user's MCP sessions beyond the `keep` most recently used; returns their ids,
    /// so that a process holding one can end it.
    async fn trim_mcp_sessions(&self, user_id: i64, keep: i64) -> Result<Vec<String>, StoreError>;
    // The check value of the sealing key (`servio_collector::key_check`).
    /// The check value the key that seals this database's credentials made, when one is kept.
    async fn key_check(&self) -> Result<Option<Vec<u8>>, StoreError>;
    /// Keeps `sealed` as the check value unless one is kept already, and returns the one kept:
    /// of two processes that start at once with different keys, both see the first one's.
    async fn keep_key_check(&self, sealed: &[u8], now: i64) -> Result<Vec<u8>, StoreError>;
    /// The sealed credential of the oldest vault entry that has one, with its user and site
    /// (what the seal binds), to tell whether a key is the one that sealed them.
    async fn oldest_credential(&self) -> Result<Option<(i64, i64, Vec<u8>)>, StoreError>;
}

/// An MCP session as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct McpSession {
    /// The user who opened it, once known.
    pub user_id: Option<i64>,
    /// The client's `initialize` parameters (JSON), once the handshake is done.
    pub state: Option<String>,
}

/// How precisely (seconds) the last use of an API token is kept.
const LAST_USED_PRECISION: i64 = 60;

/// How precisely (seconds) the last use of a session is kept: a session is written at most
/// once an hour however many requests it makes, and its idle limit may be overrun by as much.
pub const SESSION_USE_PRECISION: i64 = 3600;

/// Opens the store at `url` (`sqlite:PATH`, `sqlite::memory:` or `postgres://...`) and applies
/// its migrations.
pub async fn open(url: &str) -> Result<Box<dyn Store>, StoreError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Box::new(PgStore::open(url).await?))
    } else if url.starts_with("sqlite:") {
        Ok(Box::new(SqliteStore::open(url).await?))
    } else {
        Err(StoreError::BadUrl(url.to_owned()))
    }
}

/// A backend's full-text search of the Directory: the query (binds: the match expression,
/// the limit) and how the words become its match expression.
struct SearchMatching {
    sql: &'static str,
    pattern: fn(&[String]) -> String,
}

/// The words of a search, letters and digits only, so that no query syntax gets through.
fn search_words(query: &str) -> Vec<String> {
    query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).take(16).collect()
}
