//! Keeping manifests current: each site is fetched again with a conditional request, every
//! 24 hours (jittered, so that many sites do not all fall due at once) and on demand.
//!
//! A failed refresh (unreachable, refused, invalid) keeps the last valid manifest in use and
//! marks the site stale with the reason. A changed valid manifest becomes a new version; what
//! needs approval is worked out per user against the version they approved.

use std::time::Duration;

use servio_client::discovery::{Discovered, Refreshed, Validators, refresh};
use servio_collector::Busy;
use servio_collector::manifests::Wait;
use servio_store::{SiteRecord, StoreError};
use url::Url;

use crate::approval::Unapproved;
use crate::shared::discovered::fetched_manifest;
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

/// Why a refresh could not be done (a site that could not be refreshed is [`Outcome::Stale`]).
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No manifest check was free for as long as a request waits.
    #[error(transparent)]
    Busy(#[from] Busy),
}

/// Refreshes one site now, as the periodic refresh does (its check waits its turn), and counts
/// how it went in the metrics.
pub async fn refresh_site(state: &AppState, site: &SiteRecord) -> Result<Outcome, RefreshError> {
    refresh_counted(state, site, Wait::Turn).await
}

/// Refreshes one site on a user's request: its check waits a bounded time for its turn.
pub async fn refresh_requested(state: &AppState, site: &SiteRecord) -> Result<Outcome, RefreshError> {
    refresh_counted(state, site, Wait::Bounded).await
}

async fn refresh_counted(state: &AppState, site: &SiteRecord, wait: Wait) -> Result<Outcome, RefreshError> {
    let outcome = refresh_once(state, site, wait).await;
    let name = outcome.as_ref().map_or("failed", Outcome::name);
    metrics::counter!("servio_manifest_refreshes_total", "outcome" => name).increment(1);
    outcome
}

async fn refresh_once(state: &AppState, site: &SiteRecord, wait: Wait) -> Result<Outcome, RefreshError> {
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
    let fetched = match fetched_manifest(&site.origin, &found) {
        Ok(fetched) => fetched,
        Err(not_utf8) => return stale(state, site, not_utf8.to_string()).await,
    };
    let text = fetched.manifest;
    let manifests = state.collector.manifests();
    let checked = manifests.text(&site.origin, text, wait).await?;
    let report = &checked.report;
    if !report.is_valid() {
        let first: Vec<String> =
            report.errors.iter().take(3).map(|e| format!("{} {} at {}", e.code, e.message, e.pointer)).collect();
        return stale(state, site, format!("the manifest is now invalid: {}", first.join("; "))).await;
    }
    let changed = text != site.manifest;
    let record = state.store.save_site(&fetched, now()).await?;
    // A change that needs no approval acts at once for everyone who had approved the version
    // before it; any other waits for each user (see `crate::approval`). Exactly the text judged
    // here is approved, whatever another process has saved since.
    if changed {
        // The old text comes checked from the manifest cache, the new one was checked above;
        // comparing two large manifests takes a while too, so it runs off the async threads.
        let old = manifests.text(&site.origin, &site.manifest, wait).await?;
        let (before, after) = (site.manifest.clone(), text.to_owned());
        let new = checked.clone();
        let pending = manifests
            .run(wait, move || {
                Unapproved::of((&before, old.report.manifest.as_ref()), (&after, new.report.manifest.as_ref()))
            })
            .await?;
        if !pending.needs_approval() {
            state.store.advance_approvals(site.id, &site.manifest, text).await?;
        }
        let lines = serde_json::Value::from(pending.lines()).to_string();
        state.store.describe_version(site.id, text, &lines).await?;
        // The approvals above are settled: the versions nobody uses any more can go.
        state.store.prune_versions(Some(site.id), state.retention.versions_per_site).await?;
    }
    if let Some(manifest) = &report.manifest {
        crate::routes::directory::recheck_listing(state, record.id, &record.origin, manifest).await?;
    }
    Ok(if changed { Outcome::Changed } else { Outcome::Unchanged })
}

async fn stale(state: &AppState, site: &SiteRecord, reason: String) -> Result<Outcome, RefreshError> {
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
            Err(error) => {
                tracing::error!(error = %servio_client::error_chain(&error), "finding sites to refresh failed")
            }
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
                tracing::error!(origin = %site.origin, error = %servio_client::error_chain(&error), "refreshing a manifest failed");
            }
        }
    }
    tracing::info!(sites = sites.len(), unchanged, changed, stale, failed, "manifest refresh round");
}
