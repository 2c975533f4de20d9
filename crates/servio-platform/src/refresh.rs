//! Keeping manifests current: each site is fetched again with a conditional request, every
//! 24 hours (jittered, so that many sites do not all fall due at once) and on demand.
//!
//! A failed refresh (unreachable, refused, invalid) keeps the last valid manifest in use and
//! marks the site stale with the reason. A changed valid manifest becomes a new version; what
//! needs approval is worked out per user against the version they approved.

use std::time::Duration;

use servio_client::discovery::{Discovered, Refreshed, Validators, refresh};
use servio_manifest::{CheckOptions, Site, check};
use servio_store::{FetchedManifest, SiteRecord};
use url::Url;

use crate::approval::Pending;
use crate::{AppState, now};

/// How often a site is refreshed.
pub const INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// What a refresh did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The site answered 304 or served the same manifest.
    Unchanged,
    /// A new valid manifest was stored.
    Changed,
    /// The refresh failed; the reason was recorded and the last valid manifest stays.
    Stale(String),
}

impl Outcome {
    /// The outcome's word in metrics and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Unchanged => "unchanged",
            Outcome::Changed => "changed",
            Outcome::Stale(_) => "stale",
        }
    }
}

/// Refreshes one site now, and counts how it went in the metrics.
pub async fn refresh_site(state: &AppState, site: &SiteRecord) -> Result<Outcome, servio_store::StoreError> {
    let outcome = refresh_once(state, site).await;
    let name = outcome.as_ref().map_or("failed", Outcome::name);
    metrics::counter!("servio_manifest_refreshes_total", "outcome" => name).increment(1);
    outcome
}

async fn refresh_once(state: &AppState, site: &SiteRecord) -> Result<Outcome, servio_store::StoreError> {
    let (Ok(origin), Ok(manifest_url)) = (site.origin.parse::<Url>(), site.manifest_url.parse::<Url>()) else {
        let reason = format!("stored URLs of {} do not parse", site.origin);
        state.store.mark_stale(site.id, &reason).await?;
        return Ok(Outcome::Stale(reason));
    };
    let validators = Validators { etag: site.etag.clone(), last_modified: site.last_modified.clone() };
    let found: Discovered = match refresh(&state.client, &origin, &manifest_url, &validators).await {
        Ok(Refreshed::NotModified) => {
            state.store.touch_site(site.id, now()).await?;
            return Ok(Outcome::Unchanged);
        }
        Ok(Refreshed::Changed(found)) => *found,
        Err(error) => return stale(state, site, error.to_string()).await,
    };
    let Ok(text) = String::from_utf8(found.body) else {
        return stale(state, site, "the manifest is not UTF-8".into()).await;
    };
    let report = check(text.as_bytes(), &CheckOptions { site: Site::parse(&site.origin).ok(), allow: Vec::new() });
    if !report.is_valid() {
        let first: Vec<String> =
            report.errors.iter().take(3).map(|e| format!("{} {} at {}", e.code, e.message, e.pointer)).collect();
        return stale(state, site, format!("the manifest is now invalid: {}", first.join("; "))).await;
    }
    let changed = text != site.manifest;
    let fetched = FetchedManifest {
        origin: &site.origin,
        manifest_url: found.url.as_str(),
        manifest: &text,
        etag: found.validators.etag.as_deref(),
        last_modified: found.validators.last_modified.as_deref(),
    };
    let record = state.store.save_site(&fetched, now()).await?;
    // A change that needs no approval acts at once for everyone who had approved the version
    // before it; any other waits for each user (see `crate::approval`). Exactly the text judged
    // here is approved, whatever another process has saved since.
    if changed {
        // The old text comes checked from the manifest cache, the new one was checked above.
        let old = state.collector.manifests().get(site.id, &site.manifest);
        let old = (site.manifest.as_str(), old.as_deref().map(|checked| &checked.manifest));
        if !Pending::of(old, (&text, report.manifest.as_ref())).needs_approval() {
            state.store.advance_approvals(site.id, &site.manifest, &text).await?;
        }
        catalogues_changed(state, site.id).await?;
    }
    if let Some(manifest) = &report.manifest {
        crate::routes::directory::recheck_listing(state, record.id, &record.origin, manifest).await?;
    }
    Ok(if changed { Outcome::Changed } else { Outcome::Unchanged })
}

/// Tells every user of the site, here and in the other processes, that their catalogue may have
/// changed: an advanced approval changes it, a removed tool leaves it at once, and a change
/// waiting for approval changes what their pages say.
async fn catalogues_changed(state: &AppState, site_id: i64) -> Result<(), servio_store::StoreError> {
    let users = state.store.site_users(site_id).await?;
    state.gateway.catalogues_changed(&users);
    Ok(())
}

async fn stale(state: &AppState, site: &SiteRecord, reason: String) -> Result<Outcome, servio_store::StoreError> {
    state.store.mark_stale(site.id, &reason).await?;
    Ok(Outcome::Stale(reason))
}

/// Refreshes due sites forever, checking every `tick`. Each site's due time is its last fetch
/// plus [`INTERVAL`] less up to a tenth of it, chosen at random per round.
pub async fn run_periodically(state: AppState, tick: Duration) {
    loop {
        let mut jitter = [0u8; 4];
        let _ = getrandom::fill(&mut jitter);
        let spread = (u32::from_le_bytes(jitter) as u64) % (INTERVAL.as_secs() / 10);
        let due_before = now() - (INTERVAL.as_secs() - spread) as i64;
        match state.store.sites_due(due_before, 100).await {
            Ok(sites) if sites.is_empty() => {}
            Ok(sites) => refresh_round(&state, &sites).await,
            Err(error) => tracing::error!(%error, "finding sites to refresh failed"),
        }
        tokio::time::sleep(tick).await;
    }
}

/// Refreshes `sites`, then says in one line how the round went.
async fn refresh_round(state: &AppState, sites: &[SiteRecord]) {
    let (mut unchanged, mut changed, mut stale, mut failed) = (0, 0, 0, 0);
    for site in sites {
        match refresh_site(state, site).await {
            Ok(Outcome::Unchanged) => unchanged += 1,
            Ok(Outcome::Changed) => changed += 1,
            Ok(Outcome::Stale(reason)) => {
                stale += 1;
                tracing::info!(origin = %site.origin, %reason, "a manifest refresh failed; the site is stale");
            }
            Err(error) => {
                failed += 1;
                tracing::error!(origin = %site.origin, %error, "refreshing a manifest failed");
            }
        }
    }
    tracing::info!(sites = sites.len(), unchanged, changed, stale, failed, "manifest refresh round");
}
