//! Vaults: the sites each user added, with their sealed credentials, the manifest each user
//! approved, and the OAuth "Connect"s started and not yet finished ([`Vault`]).

use async_trait::async_trait;

use crate::Result;
use crate::database::Database;
use crate::error::conflict;
use crate::sites::save_site_on;
use crate::{Change, FetchedManifest, SiteRecord, Sites, Version};

/// One site of a user's vault.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct VaultEntry {
    /// The site.
    #[sqlx(flatten)]
    pub site: SiteRecord,
    /// The sealed credential, when the user gave one.
    pub credential: Option<Vec<u8>>,
    /// The manifest the user approved (the one current when they added the site, until they
    /// approve another): the text of `approved_version`.
    pub approved_manifest: Option<String>,
    /// The version of the site's manifest the user approved; `None` acts on the current one.
    pub approved_version: Option<i64>,
    /// The site's version the user chose to keep their approved manifest against ("keep the
    /// approved version"): its changes are not offered again until the site changes again.
    pub kept_version: Option<i64>,
}

/// One site of a user's vault with the id of its site's current version, read in one statement
/// from the row whose text is `entry.site.manifest`: a view that diffs that text names the
/// version it diffs, never one saved since.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CurrentEntry {
    /// The entry.
    #[sqlx(flatten)]
    pub entry: VaultEntry,
    /// The id of the version whose text is `entry.site.manifest`; `None` when the site has no
    /// stored version.
    pub version: Option<i64>,
}

/// One site of a user's vault as a listing shows it: its versions by id, no text (a manifest may
/// be megabytes, and a listing is asked for on every page).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ListedEntry {
    /// The site's id.
    pub site_id: i64,
    /// Its origin.
    pub origin: String,
    /// Why the site's last refresh failed, while it keeps failing.
    pub stale_error: Option<String>,
    /// The site's current version.
    pub version: i64,
    /// The version the user approved; `None` acts on the current one.
    pub approved_version: Option<i64>,
    /// The version the user kept their approved manifest against.
    pub kept_version: Option<i64>,
}

impl ListedEntry {
    /// The version that acts for the user: the approved one, or the current one.
    pub fn acting_version(&self) -> i64 {
        self.approved_version.unwrap_or(self.version)
    }
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

/// Makes the sealed credential of a site from its id (the id is part of what the seal binds).
pub type Sealer<'a> = &'a (dyn Fn(i64) -> Vec<u8> + Send + Sync);

/// An OAuth "Connect" started and not yet finished (kept in the table `started_connects`), found
/// again by the hash of its `state` when the browser comes back.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StartedConnect {
    /// SHA-256 of the connect's `state`, in hex.
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

/// A user's vault entries with their sites' columns, as [`VaultEntry`] reads them. Binds: the user.
macro_rules! entries_of_user {
    () => {
        concat!(
            "SELECT ",
            vault_entry_columns!(),
            " FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1"
        )
    };
}

impl Database {
    /// Runs an approval's `sql` (binds: user, site, version), guarded by the version being the
    /// site's current one, and says what it came to.
    async fn decide(&self, sql: &'static str, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval> {
        if execute!(&self.pool, sql, user_id, site_id, version_id)? > 0 {
            return Ok(Approval::Done);
        }
        let sql = "SELECT site_id FROM vault WHERE user_id = $1 AND site_id = $2";
        let in_vault: Option<i64> =
            on!(&self.pool, |pool| bind!(sqlx::query_scalar(sql), user_id, site_id).fetch_optional(pool).await)?;
        if in_vault.is_none() {
            return Ok(Approval::NotInVault);
        }
        let current = self.current_version(site_id).await?;
        Ok(Approval::NotCurrent { current })
    }
}

/// The sites of each user's vault, their credentials and approvals.
#[async_trait]
pub trait Vault: Send + Sync {
    /// Puts a site in a user's vault; [`StoreError::Conflict`](crate::StoreError::Conflict) when it is there already.
    /// For seeding and tests: no route reaches it, and it keeps no quota ([`Vault::add_site`]
    /// is the users' way in).
    /// Tells [`Change::Catalogue`].
    async fn add_to_vault(&self, user_id: i64, site_id: i64, now: i64) -> Result<()>;
    /// Saves the fetched manifest as its site's current one and adds the site to the user's
    /// vault with the credential `seal` makes for the site's id, all in one transaction: a
    /// failure leaves no vault entry without its credential, nor a credential without it.
    /// [`StoreError::AtLimit`](crate::StoreError::AtLimit) when the user holds `limit` sites
    /// already (counted under the user's lock, so concurrent adds never pass it).
    /// Tells [`Change::Context`] (with a credential) and [`Change::Catalogue`].
    async fn add_site(
        &self,
        fetched: &FetchedManifest<'_>,
        user_id: i64,
        seal: Option<Sealer<'_>>,
        now: i64,
        limit: i64,
    ) -> Result<SiteRecord>;
    /// The sites in a user's vault, oldest first.
    async fn vault(&self, user_id: i64) -> Result<Vec<SiteRecord>>;
    /// One site of a user's vault; `None` when it is not theirs.
    async fn vault_entry(&self, user_id: i64, site_id: i64) -> Result<Option<VaultEntry>>;
    /// [`Vault::vault_entry`] with the id of the site's current version, the text and the id
    /// read from one row of `site_versions`, so they always belong together.
    async fn current_entry(&self, user_id: i64, site_id: i64) -> Result<Option<CurrentEntry>>;
    /// The id of the site at `origin` (as stored: `https://host[:port]`) when it is in the
    /// user's vault, so that adding it again is refused before its manifest is fetched.
    async fn vault_site_at(&self, user_id: i64, origin: &str) -> Result<Option<i64>>;

    /// Every site of a user's vault by its versions' ids, with no text, oldest first.
    async fn vault_listing(&self, user_id: i64) -> Result<Vec<ListedEntry>>;
    /// Every site of a user's vault with its credential and approved manifest, oldest first.
    async fn vault_entries(&self, user_id: i64) -> Result<Vec<VaultEntry>>;
    /// Sets (or clears) the encrypted credential of a vault entry; false when there is none.
    /// Tells [`Change::Context`] when stored.
    async fn set_credential(&self, user_id: i64, site_id: i64, credential: Option<&[u8]>) -> Result<bool>;
    /// Takes a site out of a user's vault, with what was collected for them from it (values,
    /// attempts, jobs); false when it was not there.
    /// Tells [`Change::Catalogue`] when it was there.
    async fn remove_from_vault(&self, user_id: i64, site_id: i64) -> Result<bool>;
    /// Approves, for this user, the version `version_id` of the site's manifest, only while it
    /// is the site's current one (checked in the same statement): a user approves the text they
    /// were shown, never one saved since.
    /// Tells [`Change::Catalogue`] when done.
    async fn approve(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval>;
    /// Keeps the user's approved manifest and stops offering the changes up to `version_id`,
    /// the site's current version (guarded as [`Vault::approve`]), until the site changes again.
    /// Tells [`Change::Context`] when kept.
    async fn keep_approved(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval>;
    /// Approves `judged`, a text of the site's manifest whose change from `previous` needs no
    /// approval, for every user whose approved manifest is `previous` (exactly these texts,
    /// whatever the site's row holds by now); returns those users.
    /// Tells [`Change::Catalogue`] of each of those users.
    async fn advance_approvals(&self, site_id: i64, previous: &str, judged: &str) -> Result<Vec<i64>>;
    /// Keeps a started Connect; expired ones go, and the user's oldest beyond `keep`.
    async fn keep_started_connect(&self, connect: &StartedConnect, keep: i64, now: i64) -> Result<()>;
    /// Takes (and so ends) the started Connect of `user_id` with this state hash, unless expired.
    async fn take_started_connect(&self, state_hash: &str, user_id: i64, now: i64) -> Result<Option<StartedConnect>>;
}

#[async_trait]
impl Vault for Database {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn add_to_vault(&self, user_id: i64, site_id: i64, now: i64) -> Result<()> {
        let result: Result<()> = on!(&self.pool, |pool| {
            bind!(
                sqlx::query(
                    "INSERT INTO vault (user_id, site_id, added_at, approved_version)
                     SELECT $1, $2, $3, (SELECT max(sv.id) FROM site_versions sv WHERE sv.site_id = $2)
                     FROM sites WHERE id = $2",
                ),
                user_id,
                site_id,
                now
            )
            .execute(pool)
            .await
            .map_err(|e| conflict(e, "this site in your vault"))?;
            Ok(())
        });
        result?;
        self.hooks.tell(&[Change::Catalogue(user_id)]);
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn add_site(
        &self,
        fetched: &FetchedManifest<'_>,
        user_id: i64,
        seal: Option<Sealer<'_>>,
        now: i64,
        limit: i64,
    ) -> Result<SiteRecord> {
        let result: Result<SiteRecord> = on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            let held = "SELECT count(*) FROM vault WHERE user_id = $1";
            if crate::accounts::count_locked((&mut *tx).into(), user_id, held).await? >= limit {
                tx.rollback().await?;
                return Err(crate::StoreError::AtLimit { what: "sites", limit });
            }
            let (record, _) = save_site_on((&mut *tx).into(), fetched, now).await?;
            let credential = seal.map(|seal| seal(record.id));
            bind!(
                sqlx::query(
                    "INSERT INTO vault (user_id, site_id, added_at, approved_version, credential)
                     VALUES ($1, $2, $3, (SELECT max(sv.id) FROM site_versions sv WHERE sv.site_id = $2), $4)",
                ),
                user_id,
                record.id,
                now,
                credential
            )
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "this site in your vault"))?;
            tx.commit().await?;
            Ok(record)
        });
        let record = result?;
        // What the user's calls are made with, when a credential came with it, and the catalogue.
        let context = seal.is_some().then_some(Change::Context(user_id));
        self.hooks.tell(&[context, Some(Change::Catalogue(user_id))].into_iter().flatten().collect::<Vec<_>>());
        Ok(record)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn vault(&self, user_id: i64) -> Result<Vec<SiteRecord>> {
        let sql = concat!(
            "SELECT ",
            site_columns!(),
            " FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 ORDER BY v.added_at, s.id"
        );
        fetch!(&self.pool, fetch_all(sql, user_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn vault_entry(&self, user_id: i64, site_id: i64) -> Result<Option<VaultEntry>> {
        fetch!(&self.pool, fetch_optional(concat!(entries_of_user!(), " AND v.site_id = $2"), user_id, site_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn current_entry(&self, user_id: i64, site_id: i64) -> Result<Option<CurrentEntry>> {
        // The current version's row is joined once, and both its text and its id come from it.
        let sql = "SELECT s.id, s.origin, s.manifest_url, COALESCE(cur.manifest, '') AS manifest, s.etag,
                          s.last_modified, s.fetched_at, s.stale_error, s.refresh_failures, s.retry_at,
                          v.credential,
                          (SELECT sv.manifest FROM site_versions sv WHERE sv.id = v.approved_version) AS approved_manifest,
                          v.approved_version, v.kept_version, cur.id AS version
                   FROM vault v JOIN sites s ON s.id = v.site_id
                   LEFT JOIN site_versions cur
                          ON cur.id = (SELECT max(sv.id) FROM site_versions sv WHERE sv.site_id = s.id)
                   WHERE v.user_id = $1 AND v.site_id = $2";
        fetch!(&self.pool, fetch_optional(sql, user_id, site_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn vault_site_at(&self, user_id: i64, origin: &str) -> Result<Option<i64>> {
        let sql =
            "SELECT v.site_id FROM sites s JOIN vault v ON v.site_id = s.id WHERE s.origin = $2 AND v.user_id = $1";
        let found: Option<(i64,)> = fetch!(&self.pool, fetch_optional(sql, user_id, origin))?;
        Ok(found.map(|(site_id,)| site_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn vault_listing(&self, user_id: i64) -> Result<Vec<ListedEntry>> {
        // A site's versions are never all pruned (its newest stays), so it always has one.
        let sql = "SELECT s.id AS site_id, s.origin, s.stale_error,
                          COALESCE((SELECT max(sv.id) FROM site_versions sv WHERE sv.site_id = s.id), 0) AS version,
                          v.approved_version, v.kept_version
                   FROM vault v JOIN sites s ON s.id = v.site_id WHERE v.user_id = $1 ORDER BY v.added_at, s.id";
        fetch!(&self.pool, fetch_all(sql, user_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn vault_entries(&self, user_id: i64) -> Result<Vec<VaultEntry>> {
        fetch!(&self.pool, fetch_all(concat!(entries_of_user!(), " ORDER BY v.added_at, s.id"), user_id))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn set_credential(&self, user_id: i64, site_id: i64, credential: Option<&[u8]>) -> Result<bool> {
        let sql = "UPDATE vault SET credential = $1 WHERE user_id = $2 AND site_id = $3";
        let stored = execute!(&self.pool, sql, credential, user_id, site_id)? > 0;
        self.hooks.tell_if(stored, &[Change::Context(user_id)]);
        Ok(stored)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn remove_from_vault(&self, user_id: i64, site_id: i64) -> Result<bool> {
        let result: Result<bool> = on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            let done = bind!(sqlx::query("DELETE FROM vault WHERE user_id = $1 AND site_id = $2"), user_id, site_id)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                // Ended here rather than by dropping it: a dropped transaction's rollback is
                // queued behind the connection's return, and the next writer on a busy
                // machine found the in-memory SQLite database still locked.
                tx.rollback().await?;
                return Ok(false);
            }
            // What was collected for the user from the site goes with it (the call log
            // stays: it is the user's record of what their AI clients did).
            for sql in [
                "DELETE FROM jobs WHERE user_id = $1 AND site_id = $2",
                "DELETE FROM collection_attempts WHERE user_id = $1 AND site_id = $2",
                "DELETE FROM metric_values WHERE user_id = $1 AND site_id = $2",
            ] {
                bind!(sqlx::query(sql), user_id, site_id).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(true)
        });
        let removed = result?;
        self.hooks.tell_if(removed, &[Change::Catalogue(user_id)]);
        Ok(removed)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn approve(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval> {
        // The version must still be the site's current one in the same statement: a
        // user approves the text they were shown, never one saved since.
        let sql = "UPDATE vault SET approved_version = $3, kept_version = NULL
                   WHERE user_id = $1 AND site_id = $2
                     AND $3 = (SELECT max(id) FROM site_versions WHERE site_id = $2)";
        let decided = self.decide(sql, user_id, site_id, version_id).await?;
        self.hooks.tell_if(decided == Approval::Done, &[Change::Catalogue(user_id)]);
        Ok(decided)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn keep_approved(&self, user_id: i64, site_id: i64, version_id: i64) -> Result<Approval> {
        let sql = "UPDATE vault SET kept_version = $3
                   WHERE user_id = $1 AND site_id = $2
                     AND $3 = (SELECT max(id) FROM site_versions WHERE site_id = $2)";
        let decided = self.decide(sql, user_id, site_id, version_id).await?;
        // What acts for the user is the same, but what they are shown of it (the vault list,
        // the dashboard's attention) is not.
        self.hooks.tell_if(decided == Approval::Done, &[Change::Context(user_id)]);
        Ok(decided)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn advance_approvals(&self, site_id: i64, previous: &str, judged: &str) -> Result<Vec<i64>> {
        let result: Result<Vec<i64>> = on!(&self.pool, |pool| {
            // `judged` itself, not whatever the site's row holds by now: another process may
            // have saved a newer text, which nobody has judged for these users.
            // The texts are compared where they are stored: neither travels back.
            let sql = "UPDATE vault SET approved_version =
                           (SELECT max(sv.id) FROM site_versions sv WHERE sv.site_id = $1 AND sv.manifest = $3)
                       WHERE site_id = $1
                         AND approved_version IN (SELECT sv.id FROM site_versions sv
                                                  WHERE sv.site_id = $1 AND sv.manifest = $2)
                         AND EXISTS (SELECT 1 FROM site_versions sv WHERE sv.site_id = $1 AND sv.manifest = $3)
                       RETURNING user_id";
            Ok(bind!(sqlx::query_scalar(sql), site_id, previous, judged).fetch_all(pool).await?)
        });
        let users = result?;
        self.hooks.tell_each(Change::Catalogue, users.iter().copied());
        Ok(users)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn keep_started_connect(&self, connect: &StartedConnect, keep: i64, now: i64) -> Result<()> {
        on!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("DELETE FROM started_connects WHERE expires_at < $1").bind(now).execute(&mut *tx).await?;
            bind!(
                sqlx::query(
                    "INSERT INTO started_connects (state_hash, user_id, site_id, sealed, created_at, expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                ),
                &connect.state_hash,
                connect.user_id,
                connect.site_id,
                &connect.sealed,
                connect.created_at,
                connect.expires_at
            )
            .execute(&mut *tx)
            .await?;
            bind!(
                sqlx::query(
                    "DELETE FROM started_connects WHERE user_id = $1 AND state_hash NOT IN
                     (SELECT state_hash FROM started_connects WHERE user_id = $1
                      ORDER BY created_at DESC, state_hash LIMIT $2)",
                ),
                connect.user_id,
                keep
            )
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn take_started_connect(&self, state_hash: &str, user_id: i64, now: i64) -> Result<Option<StartedConnect>> {
        let sql = "DELETE FROM started_connects WHERE state_hash = $1 AND user_id = $2
                   RETURNING state_hash, user_id, site_id, sealed, created_at, expires_at";
        let taken: Option<StartedConnect> = fetch!(&self.pool, fetch_optional(sql, state_hash, user_id))?;
        Ok(taken.filter(|connect| connect.expires_at >= now))
    }
}
