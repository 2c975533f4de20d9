//! The Directory: claims of ownership of an origin, the listings they verified, and search
//! ([`Directory`]). Search is each backend's own full-text index (`sqlite.rs`, `postgres.rs`).

use async_trait::async_trait;

use crate::Result;
use crate::database::{Backend, Database};
use crate::text::{storable, storable_opt};
use crate::{postgres, sqlite};

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

/// A backend's full-text search of the Directory: the query (binds: the match expression,
/// the limit) and how the words become its match expression.
pub(crate) struct SearchMatching {
    pub(crate) sql: &'static str,
    pub(crate) pattern: fn(&[String]) -> String,
}

/// The words of a search, letters and digits only, so that no query syntax gets through.
fn search_words(query: &str) -> Vec<String> {
    query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).take(16).collect()
}

/// A [`Listing`]'s columns, from `listings`.
macro_rules! listing_of {
    () => {
        "SELECT site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at FROM listings"
    };
}

impl Database {
    /// The listing `sql` finds by `id` (its `$1`).
    async fn listing_where(&self, sql: &'static str, id: i64) -> Result<Option<Listing>> {
        fetch!(&self.pool, fetch_optional(sql, id))
    }
}

/// Every listed site, by name: a search with no words. Binds: limit.
const ALL_LISTED: &str = concat!(
    "SELECT ",
    found_columns!(),
    " FROM listings l JOIN sites s ON s.id = l.site_id WHERE l.listed ORDER BY l.name LIMIT $1"
);

/// Claims, listings and search of the public Directory.
#[async_trait]
pub trait Directory: Send + Sync {
    /// Records a claim; [`StoreError::Conflict`](crate::StoreError::Conflict) when this user claimed this origin already,
    /// [`StoreError::AtLimit`](crate::StoreError::AtLimit) when `limit` of the user's claims are pending (not verified).
    async fn create_claim(&self, user_id: i64, origin: &str, token: &str, now: i64, limit: i64) -> Result<Claim>;
    /// Deletes the user's claim `id` when no listing stands on it (not verified); false when
    /// there is no such claim.
    async fn delete_pending_claim(&self, user_id: i64, id: i64) -> Result<bool>;
    /// A user's claims.
    async fn claims(&self, user_id: i64) -> Result<Vec<Claim>>;
    /// Every claim on an origin (one per claimant).
    async fn claims_on(&self, origin: &str) -> Result<Vec<Claim>>;
    /// Creates or updates the listing of a site.
    async fn save_listing(&self, listing: &Listing) -> Result<()>;
    /// The listing of a site.
    async fn listing(&self, site_id: i64) -> Result<Option<Listing>>;
    /// The listing a claim verified, if any (listed, or suspended with the reason).
    async fn claim_listing(&self, claim_id: i64) -> Result<Option<Listing>>;
    /// Listed sites matching `query` (full-text, every word), best first; all listed sites
    /// when the query has no words.
    async fn search(&self, query: &str, limit: i64) -> Result<Vec<Found>>;
}

#[async_trait]
impl Directory for Database {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_claim(&self, user_id: i64, origin: &str, token: &str, now: i64, limit: i64) -> Result<Claim> {
        on!(&self.pool, |pool| {
            // Pending: not verified, so no listing stands on it.
            let pending = "SELECT count(*) FROM claims c WHERE c.user_id = $1
                           AND NOT EXISTS (SELECT 1 FROM listings l WHERE l.claim_id = c.id)";
            let sql = "INSERT INTO claims (user_id, origin, token, created_at) VALUES ($1, $2, $3, $4)
                       RETURNING id, user_id, origin, token, created_at";
            let limit = (user_id, pending, limit, "pending claims");
            insert_within_limit!(pool, limit, "a claim on this origin", sql, user_id, origin, token, now)
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete_pending_claim(&self, user_id: i64, id: i64) -> Result<bool> {
        let sql = "DELETE FROM claims WHERE id = $1 AND user_id = $2
                   AND NOT EXISTS (SELECT 1 FROM listings l WHERE l.claim_id = claims.id)";
        Ok(execute!(&self.pool, sql, id, user_id)? > 0)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn claims(&self, user_id: i64) -> Result<Vec<Claim>> {
        let sql = "SELECT id, user_id, origin, token, created_at FROM claims WHERE user_id = $1 ORDER BY id";
        fetch!(&self.pool, fetch_all(sql, user_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn claims_on(&self, origin: &str) -> Result<Vec<Claim>> {
        let sql = "SELECT id, user_id, origin, token, created_at FROM claims WHERE origin = $1 ORDER BY id";
        fetch!(&self.pool, fetch_all(sql, origin))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn save_listing(&self, listing: &Listing) -> Result<()> {
        let sql = "INSERT INTO listings
                       (site_id, claim_id, listed, suspended_reason, name, description, tools, verified_at)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                   ON CONFLICT (site_id) DO UPDATE SET claim_id = excluded.claim_id, listed = excluded.listed,
                       suspended_reason = excluded.suspended_reason, name = excluded.name,
                       description = excluded.description, tools = excluded.tools, verified_at = excluded.verified_at";
        execute!(
            &self.pool,
            sql,
            listing.site_id,
            listing.claim_id,
            listing.listed,
            storable_opt(listing.suspended_reason.as_deref()),
            storable(&listing.name),
            storable(&listing.description),
            storable(&listing.tools),
            listing.verified_at
        )
        .map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn listing(&self, site_id: i64) -> Result<Option<Listing>> {
        self.listing_where(concat!(listing_of!(), " WHERE site_id = $1"), site_id).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn claim_listing(&self, claim_id: i64) -> Result<Option<Listing>> {
        self.listing_where(concat!(listing_of!(), " WHERE claim_id = $1"), claim_id).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn search(&self, query: &str, limit: i64) -> Result<Vec<Found>> {
        let words = search_words(query);
        if words.is_empty() {
            return fetch!(&self.pool, fetch_all(ALL_LISTED, limit));
        }
        let matching = match self.pool {
            Backend::Sqlite(_) => sqlite::SEARCH_MATCHING,
            Backend::Postgres(_) => postgres::SEARCH_MATCHING,
        };
        let pattern = (matching.pattern)(&words);
        fetch!(&self.pool, fetch_all(matching.sql, &pattern, limit))
    }
}
