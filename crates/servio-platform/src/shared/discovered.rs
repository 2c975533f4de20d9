//! A manifest as discovery or a refresh found it, made ready to store: its text, where it was
//! served, and the validators (`ETag`, `Last-Modified`) that the next refresh asks with.

use servio_client::discovery::Discovered;
use servio_store::FetchedManifest;

/// What to store of the manifest `found` for the site at `origin`; `None` when its bytes are
/// not UTF-8, which no manifest may be. Adding a site, verifying a claim and a refresh all
/// save through this, so that every stored copy keeps the validators it was served with.
pub(crate) fn fetched_manifest<'a>(origin: &'a str, found: &'a Discovered) -> Option<FetchedManifest<'a>> {
    let manifest = std::str::from_utf8(&found.body).ok()?;
    Some(FetchedManifest {
        origin,
        manifest_url: found.url.as_str(),
        manifest,
        etag: found.validators.etag.as_deref(),
        last_modified: found.validators.last_modified.as_deref(),
    })
}
