//! Fetching a site's manifest, and a manifest as discovery or a refresh found it made ready to
//! store: its text, where it was served, and the validators (`ETag`, `Last-Modified`) that the
//! next refresh asks with.
//!
//! Every fetch of a manifest the platform makes goes through [`discover`] or [`refresh`] (held
//! by `xtask`'s tidy tests), and each spends one of the site's fetches
//! ([`crate::throttle::Throttle::manifest_fetch`]) before anything is sent: adding a site,
//! verifying a claim, testing a manifest at a URL, a refresh on request and the periodic one.

use servio_client::DiscoveryError;
use servio_client::discovery::{Discovered, Refreshed, Validators, origin_of};
use servio_store::{FetchedManifest, SiteRecord};
use url::Url;

use crate::AppState;
use crate::error::ApiError;
use crate::throttle::FetchesSpent;

/// The refusal of an empty (or blank) URL, before anything is looked up or fetched.
pub(crate) const EMPTY_URL: &str = "`url` must not be empty: give the site's URL or host name, such as example.com";

/// A manifest whose bytes are not UTF-8, which no manifest may be: a `422` when a site is
/// added or a claim verified, the reason a refresh marks the site stale.
#[derive(Debug, thiserror::Error)]
#[error("the manifest is not UTF-8")]
pub(crate) struct NotUtf8;

/// The site's origin as the store keeps it (`https://host[:port]`, no trailing slash) and the
/// fetch budget keys it.
pub(crate) fn stored_origin(origin: &Url) -> &str {
    origin.as_str().trim_end_matches('/')
}

/// Discovers the manifest of the site at `url` (an origin or any URL on it): adding a site,
/// verifying a claim, testing a manifest. `Err` when the site's fetches are spent for now,
/// before anything is sent; a URL that names no site spends nothing and fails as discovery
/// says.
pub(crate) async fn discover(state: &AppState, url: &str) -> Result<Result<Discovered, DiscoveryError>, FetchesSpent> {
    let origin = match origin_of(url) {
        Ok(origin) => origin,
        Err(not_a_site) => return Ok(Err(not_a_site)),
    };
    state.throttle.manifest_fetch(stored_origin(&origin))?;
    Ok(servio_client::discover(&state.client, url).await)
}

/// Asks for the manifest of `site` again (`origin` and `manifest_url` its stored URLs), with
/// the validators it was stored with. `Err` when the site's fetches are spent for now, before
/// anything is sent.
pub(crate) async fn refresh(
    state: &AppState,
    site: &SiteRecord,
    origin: &Url,
    manifest_url: &Url,
) -> Result<Result<Refreshed, DiscoveryError>, FetchesSpent> {
    state.throttle.manifest_fetch(&site.origin)?;
    let validators = Validators { etag: site.etag.clone(), last_modified: site.last_modified.clone() };
    Ok(servio_client::discovery::refresh(&state.client, origin, manifest_url, &validators).await)
}

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

impl From<NotUtf8> for ApiError {
    fn from(not_utf8: NotUtf8) -> ApiError {
        ApiError::Unprocessable(serde_json::json!({ "error": not_utf8.to_string() }))
    }
}
