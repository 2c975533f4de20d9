//! What every domain module's queries share: the dispatch that runs a query written once on
//! whichever backend the store is (`on!`), binding in turn, and the column lists several
//! domains read. Declared first in `lib.rs`, so that every module may use these macros.
//!
//! A query is written once with `$N` placeholders, which sqlx's SQLite reads as numbered
//! parameters too; `on!` compiles its body once per backend, so that each keeps sqlx's own
//! types and fast paths. Functions generic over `sqlx::Database` would need bounds (an
//! executor for every connection type, `Encode` and `Type` for every bound value) longer than
//! the queries, and `sqlx::Any` would lose the backends' fast paths.

/// Runs `$body` with `$name` bound to the side of `$either` (a [`crate::database::Backend`]:
/// a pool, a transaction or a connection) the store has: the body is written once and compiled
/// for each backend.
///
/// ```ignore
/// on!(&self.pool, |pool| sqlx::query("DELETE FROM sessions WHERE token_hash = $1").bind(hash).execute(pool).await)?;
/// ```
macro_rules! on {
    ($either:expr, |$name:ident| $body:expr) => {
        match $either {
            $crate::database::Backend::Sqlite($name) => $body,
            $crate::database::Backend::Postgres($name) => $body,
        }
    };
}

/// `$query` with each value bound in turn: the values read in the order of their `$N`.
macro_rules! bind {
    ($query:expr, $($value:expr),+ $(,)?) => {
        $query$(.bind($value))+
    };
}

/// Reads the query `$sql`, with each `$value` bound in turn, on whichever backend `$pool` is:
/// `$read` is `fetch_one`, `fetch_optional` or `fetch_all`, and the rows are read as the
/// caller's return type. The whole body of a store method that reads with one query.
///
/// ```ignore
/// fetch!(&self.pool, fetch_optional("SELECT id, fetched_at, manifest FROM site_versions WHERE id = $1", id))
/// ```
macro_rules! fetch {
    ($pool:expr, $read:ident($sql:expr $(, $value:expr)* $(,)?)) => {
        on!($pool, |pool| sqlx::query_as($sql)$(.bind($value))*.$read(pool).await.map_err($crate::StoreError::from))
    };
}

/// Runs the statement `$sql`, with each `$value` bound in turn, on whichever backend `$pool`
/// is; the number of rows it changed.
macro_rules! execute {
    ($pool:expr, $sql:expr $(, $value:expr)* $(,)?) => {
        on!($pool, |pool| {
            let done = sqlx::query($sql)$(.bind($value))*.execute(pool).await;
            done.map(|done| done.rows_affected()).map_err($crate::StoreError::from)
        })
    };
}

/// Runs the `INSERT … RETURNING` `$sql` of one row with `$value`s bound, read as the caller's
/// return type; a unique violation is a [`crate::StoreError::Conflict`] over `$what`.
macro_rules! insert_one {
    ($executor:expr, $what:expr, $sql:expr, $($value:expr),+ $(,)?) => {
        bind!(sqlx::query_as($sql), $($value),+)
            .fetch_one($executor)
            .await
            .map_err(|e| $crate::error::conflict(e, $what))
    };
}

/// Inserts one row of a user's, as [`insert_one!`] does, in a transaction of its own on `$pool`,
/// unless the user has as many as the limit allows: `$limit` is `(user_id, count_sql, limit,
/// what)`, where `count_sql` (`$1` the user) counts them under the user's row lock
/// (`accounts::count_locked`), and reaching `limit` is a [`crate::StoreError::AtLimit`] over
/// `what`. The one way per-user limits are kept (API tokens, pending claims).
macro_rules! insert_within_limit {
    ($pool:expr, $limit:expr, $taken:expr, $sql:expr, $($value:expr),+ $(,)?) => {{
        let (user_id, count_sql, limit, what): (i64, &'static str, i64, &'static str) = $limit;
        let mut tx = $pool.begin().await?;
        if $crate::accounts::count_locked((&mut *tx).into(), user_id, count_sql).await? >= limit {
            return Err($crate::StoreError::AtLimit { what, limit });
        }
        let row = insert_one!(&mut *tx, $taken, $sql, $($value),+)?;
        tx.commit().await?;
        Ok(row)
    }};
}

/// The columns a [`crate::SiteRecord`] is read from, on a query over `sites s`. The manifest is
/// the site's newest version's text (stored there once, not on the site's row).
macro_rules! site_columns {
    () => {
        "s.id, s.origin, s.manifest_url, \
         COALESCE((SELECT sv.manifest FROM site_versions sv WHERE sv.site_id = s.id ORDER BY sv.id DESC LIMIT 1), '') \
         AS manifest, s.etag, s.last_modified, s.fetched_at, s.stale_error, s.refresh_failures, s.retry_at"
    };
}

/// The columns a [`crate::VaultEntry`] is read from, on a query over `vault v JOIN sites s`:
/// its site's, then its own.
macro_rules! vault_entry_columns {
    () => {
        concat!(
            site_columns!(),
            ", v.credential, (SELECT sv.manifest FROM site_versions sv WHERE sv.id = v.approved_version) \
             AS approved_manifest, v.approved_version, v.kept_version"
        )
    };
}

/// The columns a [`crate::Found`] listing is read from, on a query over `listings l JOIN sites
/// s`: the listing of every search, shared and per dialect.
macro_rules! found_columns {
    () => {
        "l.site_id, l.claim_id, l.listed, l.suspended_reason, l.name, l.description, l.tools, l.verified_at, s.origin"
    };
}
