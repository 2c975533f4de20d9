//! Sites: the platform's copy of each site's manifest, its stored versions, and the refresh's
//! marks and schedule ([`Sites`]). Whose vault a site is in is the `vault` module's.
//!
//! The periodic refresh asks for the sites due ([`Sites::sites_due`]): a site that answered is
//! due a refresh interval after its last good fetch, one whose refreshes fail is due at its
//! `retry_at` (backing off, chosen by the caller), and the earliest due come first, so that no
//! set of failing sites keeps the others waiting. Only sites that someone holds (a vault entry,
//! a Directory listing) are due; the others are deleted ([`Sites::drop_unheld_sites`]).

use async_trait::async_trait;

use crate::Change;
use crate::Result;
use crate::database::{Conn, Database};
use crate::text::storable;

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
    /// How many refreshes in a row failed since the last good one (0 while the site answers).
    pub refresh_failures: i64,
    /// When the periodic refresh may ask again after a failed or put-off refresh; `None` while
    /// the site answers (it is due a refresh interval after `fetched_at`).
    pub retry_at: Option<i64>,
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

/// The users who have a site in their vault. Binds: the site.
const SITE_USERS: &str = "SELECT user_id FROM vault WHERE site_id = $1 ORDER BY user_id";

/// Saves a fetched manifest as its site's current one, and as a new version when it differs
/// from the last, on the caller's transaction; says whether it was a new version.
pub(crate) async fn save_site_on(
    conn: Conn<'_>,
    fetched: &FetchedManifest<'_>,
    now: i64,
) -> Result<(SiteRecord, bool)> {
    on!(conn, |conn| {
        // The text is stored once, as a version (the site's row has no copy): the returned
        // record's manifest is the text just fetched, which is the site's newest version's.
        let mut record: SiteRecord = bind!(
            sqlx::query_as(
                "INSERT INTO sites (origin, manifest_url, etag, last_modified, fetched_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (origin) DO UPDATE SET manifest_url = excluded.manifest_url,
                     etag = excluded.etag, last_modified = excluded.last_modified,
                     fetched_at = excluded.fetched_at, stale_error = NULL, refresh_failures = 0, retry_at = NULL
                 RETURNING id, origin, manifest_url, '' AS manifest, etag, last_modified, fetched_at, stale_error,
                     refresh_failures, retry_at",
            ),
            fetched.origin,
            fetched.manifest_url,
            fetched.etag,
            fetched.last_modified,
            now
        )
        .fetch_one(&mut *conn)
        .await?;
        record.manifest = fetched.manifest.to_owned();
        // Compared where it is stored: the newest text does not travel back.
        let same: Option<bool> =
            sqlx::query_scalar("SELECT manifest = $2 FROM site_versions WHERE site_id = $1 ORDER BY id DESC LIMIT 1")
                .bind(record.id)
                .bind(fetched.manifest)
                .fetch_optional(&mut *conn)
                .await?;
        let new_version = same != Some(true);
        if new_version {
            // A site's first version says so; a later one's changes are recorded by whoever
            // compared it with the one before (`describe_version`).
            let changes = same.is_none().then_some(r#"["first version"]"#);
            bind!(
                sqlx::query(
                    "INSERT INTO site_versions (site_id, manifest, fetched_at, changes) VALUES ($1, $2, $3, $4)"
                ),
                record.id,
                fetched.manifest,
                now,
                changes
            )
            .execute(&mut *conn)
            .await?;
        }
        Ok((record, new_version))
    })
}

/// The platform's copy of each site's manifest and its versions, whoever has the site.
#[async_trait]
pub trait Sites: Send + Sync {
    /// Records a site's manifest (creating the site, or replacing its manifest), clearing any
    /// stale mark and backoff: a refresh interval from `now` is its next refresh.
    /// A new version tells [`Change::Catalogue`] of everyone who has the site.
    async fn save_site(&self, fetched: &FetchedManifest<'_>, now: i64) -> Result<SiteRecord>;
    /// The site's current version: the newest, whose text is the site's manifest.
    async fn current_version(&self, site_id: i64) -> Result<Option<Version>>;
    /// The current version of every site in the user's vault, as (site id, version id).
    async fn current_versions(&self, user_id: i64) -> Result<Vec<(i64, i64)>>;
    /// The versions of a site's manifest, newest first.
    async fn versions(&self, site_id: i64) -> Result<Vec<Version>>;
    /// What the versions list shows of a site's versions, newest first, without their texts:
    /// each with its stored changes and whether it is the `approved` one.
    async fn version_summaries(&self, site_id: i64, approved: Option<i64>) -> Result<Vec<VersionSummary>>;
    /// The text of the site's version `version_id`; `None` when the site has no such version.
    async fn version_text(&self, site_id: i64, version_id: i64) -> Result<Option<String>>;
    /// Records what changed in the site's version whose text is `manifest` (JSON lines), where
    /// nothing is recorded yet.
    async fn describe_version(&self, site_id: i64, manifest: &str, changes: &str) -> Result<()>;
    /// Deletes the versions of a site (of every site, for `None`) beyond its newest `keep`,
    /// except those a user still has approved (`vault.approved_version`) or kept against
    /// (`vault.kept_version`); returns how many went.
    async fn prune_versions(&self, site_id: Option<i64>, keep: i64) -> Result<u64>;
    /// Records that a refresh failed, one more in a row: the last valid manifest stays in use,
    /// and the periodic refresh asks again at `retry_at` (the caller's backoff).
    async fn mark_stale(&self, site_id: i64, error: &str, retry_at: i64) -> Result<()>;
    /// Puts off the site's next periodic refresh until `until`, counting no failure (its
    /// manifest could not be fetched yet, such as when its fetches are spent for now).
    async fn put_off_refresh(&self, site_id: i64, until: i64) -> Result<()>;
    /// Records that a refresh found the manifest unchanged, clearing any stale mark and
    /// backoff: a refresh interval from `now` is its next refresh.
    async fn touch_site(&self, site_id: i64, now: i64) -> Result<()>;
    /// A site by its id, whoever has it (the Directory's owner pages).
    async fn site(&self, id: i64) -> Result<Option<SiteRecord>>;
    /// At most `limit` sites due for a refresh at `now`, the earliest due first: a site that
    /// answered is due `interval` seconds after its last good fetch, one that failed or was put
    /// off at its `retry_at`. Only sites held by a vault entry or a Directory listing are due.
    async fn sites_due(&self, now: i64, interval: i64, limit: i64) -> Result<Vec<SiteRecord>>;
    /// Deletes at most `limit` sites that no vault entry and no Directory listing holds, last
    /// fetched before `fetched_before`; returns how many went. Everything that hangs on a site
    /// goes with it (its versions, jobs, started Connects; values and attempts went with the
    /// vault entries), and the call log keeps its calls without their site. A site being added
    /// or verified right now was fetched since, so it is never taken from under the write that
    /// will hold it: the fetch time is checked again on the row the deletion locks.
    async fn drop_unheld_sites(&self, fetched_before: i64, limit: i64) -> Result<u64>;
}

#[async_trait]
impl Sites for Database {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn save_site(&self, fetched: &FetchedManifest<'_>, now: i64) -> Result<SiteRecord> {
        let result: Result<(SiteRecord, Vec<i64>)> = on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            let (record, new_version) = save_site_on((&mut *tx).into(), fetched, now).await?;
            // A new version changes the catalogue of everyone who has the site: a removed tool
            // leaves at once, and a change that waits for approval changes what they are shown.
            let users = match new_version {
                true => sqlx::query_scalar(SITE_USERS).bind(record.id).fetch_all(&mut *tx).await?,
                false => Vec::new(),
            };
            tx.commit().await?;
            Ok((record, users))
        });
        let (record, users) = result?;
        self.hooks.tell_each(Change::Catalogue, users);
        Ok(record)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn current_version(&self, site_id: i64) -> Result<Option<Version>> {
        let sql = "SELECT id, fetched_at, manifest FROM site_versions WHERE site_id = $1 ORDER BY id DESC LIMIT 1";
        fetch!(&self.pool, fetch_optional(sql, site_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn current_versions(&self, user_id: i64) -> Result<Vec<(i64, i64)>> {
        let sql = "SELECT v.site_id, max(sv.id) FROM vault v JOIN site_versions sv ON sv.site_id = v.site_id
                   WHERE v.user_id = $1 GROUP BY v.site_id";
        fetch!(&self.pool, fetch_all(sql, user_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn versions(&self, site_id: i64) -> Result<Vec<Version>> {
        let sql = "SELECT id, fetched_at, manifest FROM site_versions WHERE site_id = $1 ORDER BY id DESC";
        fetch!(&self.pool, fetch_all(sql, site_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn version_summaries(&self, site_id: i64, approved: Option<i64>) -> Result<Vec<VersionSummary>> {
        let sql = "SELECT id, fetched_at, changes, COALESCE(id = $2, FALSE) AS approved FROM site_versions
                   WHERE site_id = $1 ORDER BY id DESC";
        fetch!(&self.pool, fetch_all(sql, site_id, approved))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn version_text(&self, site_id: i64, version_id: i64) -> Result<Option<String>> {
        let sql = "SELECT manifest FROM site_versions WHERE site_id = $1 AND id = $2";
        let text: Option<(String,)> = fetch!(&self.pool, fetch_optional(sql, site_id, version_id))?;
        Ok(text.map(|(text,)| text))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn describe_version(&self, site_id: i64, manifest: &str, changes: &str) -> Result<()> {
        let sql = "UPDATE site_versions SET changes = $3 WHERE site_id = $1 AND manifest = $2 AND changes IS NULL";
        execute!(&self.pool, sql, site_id, manifest, changes).map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn prune_versions(&self, site_id: Option<i64>, keep: i64) -> Result<u64> {
        // The newest `keep` of each site by rank; an approved text is compared with the
        // approvals of the same site only (through the vault's site index).
        let sql = "DELETE FROM site_versions WHERE id IN (
                       SELECT id FROM (
                           SELECT sv.id, sv.site_id,
                                  row_number() OVER (PARTITION BY sv.site_id ORDER BY sv.id DESC) AS newer
                           FROM site_versions sv WHERE $1 IS NULL OR sv.site_id = $1
                       ) ranked
                       WHERE ranked.newer > $2
                         AND NOT EXISTS (SELECT 1 FROM vault v WHERE v.site_id = ranked.site_id
                                         AND (v.kept_version = ranked.id OR v.approved_version = ranked.id)))";
        execute!(&self.pool, sql, site_id, keep)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn mark_stale(&self, site_id: i64, error: &str, retry_at: i64) -> Result<()> {
        let sql = "UPDATE sites SET stale_error = $1, refresh_failures = refresh_failures + 1, retry_at = $3
                   WHERE id = $2";
        execute!(&self.pool, sql, &*storable(error), site_id, retry_at).map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn put_off_refresh(&self, site_id: i64, until: i64) -> Result<()> {
        execute!(&self.pool, "UPDATE sites SET retry_at = $2 WHERE id = $1", site_id, until).map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn touch_site(&self, site_id: i64, now: i64) -> Result<()> {
        let sql = "UPDATE sites SET fetched_at = $1, stale_error = NULL, refresh_failures = 0, retry_at = NULL
                   WHERE id = $2";
        execute!(&self.pool, sql, now, site_id).map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn site(&self, id: i64) -> Result<Option<SiteRecord>> {
        fetch!(&self.pool, fetch_optional(concat!("SELECT ", site_columns!(), " FROM sites s WHERE s.id = $1"), id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn sites_due(&self, now: i64, interval: i64, limit: i64) -> Result<Vec<SiteRecord>> {
        // One scan of the sites a round (every few minutes), each held site's due time worked
        // out as it is read: the order is by due time, never by the last good fetch, which a
        // failing site keeps for ever.
        let sql = concat!(
            "SELECT ",
            site_columns!(),
            " FROM sites s
              WHERE COALESCE(s.retry_at, s.fetched_at + $2) <= $1
                AND (EXISTS (SELECT 1 FROM vault v WHERE v.site_id = s.id)
                     OR EXISTS (SELECT 1 FROM listings l WHERE l.site_id = s.id))
              ORDER BY COALESCE(s.retry_at, s.fetched_at + $2), s.id
              LIMIT $3"
        );
        fetch!(&self.pool, fetch_all(sql, now, interval, limit))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn drop_unheld_sites(&self, fetched_before: i64, limit: i64) -> Result<u64> {
        // The outer `fetched_at` is the guard: on PostgreSQL a row that an add or a claim's
        // verification saved meanwhile (its fetch time now) is checked again once its lock is
        // free and left alone, whatever the subquery saw; SQLite runs one writer at a time.
        let sql = "DELETE FROM sites WHERE fetched_at < $1 AND id IN (
                       SELECT s.id FROM sites s
                       WHERE s.fetched_at < $1
                         AND NOT EXISTS (SELECT 1 FROM vault v WHERE v.site_id = s.id)
                         AND NOT EXISTS (SELECT 1 FROM listings l WHERE l.site_id = s.id)
                       ORDER BY s.id LIMIT $2)";
        execute!(&self.pool, sql, fetched_before, limit)
    }
}
