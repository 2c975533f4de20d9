//! A manifest as discovery or a refresh found it, made ready to store: its text, where it was
//! served, and the validators (`ETag`, `Last-Modified`) that the next refresh asks with.

use servio_client::discovery::Discovered;
use servio_store::FetchedManifest;

/// A manifest whose bytes are not UTF-8, which no manifest may be: a `422` when a site is
/// added or a claim verified, the reason a refresh marks the site stale.
#[derive(Debug, thiserror::Error)]
#[error("the manifest is not UTF-8")]
pub(crate) struct NotUtf8;

/// What to store of the manifest `found` for the site at `origin`. Adding a site, verifying a
/// claim and a refresh all save through this, so that every stored copy keeps the validators
/// it was served with.
pub(crate) fn fetched_manifest<'a>(origin: &'a str, found: &'a Discovered) -> Result<FetchedManifest<'a>, NotUtf8> {
    let manifest = std::str::from_utf8(&found.body).map_err(|_| NotUtf8)?;
    Ok(FetchedManifest {
        origin,
        manifest_url: found.url.as_str(),
        manifest,
        etag: found.validators.etag.as_deref(),
        last_modified: found.validators.last_modified.as_deref(),
    })
}
