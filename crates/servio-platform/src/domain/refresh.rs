//! Refreshing one site's manifest, on a user's request or for the periodic rounds of
//! [`crate::refresh`]: a conditional fetch, the new text checked, a changed valid manifest saved
//! as a new version (what needs approval worked out per user against the version they
//! approved), its Directory listing checked again. A failed refresh keeps the last valid
//! manifest in use and marks the site stale with the reason, backed off by the platform's
//! [`crate::refresh::Schedule`].

use std::time::Duration;

use servio_client::discovery::{Discovered, Refreshed};
use servio_core::Busy;
use servio_core::manifests::Wait;
use servio_store::{SiteRecord, StoreError};
use url::Url;

use crate::approval::Unapproved;
use crate::error::ApiError;
use crate::shared::discovered::fetched_manifest;
use crate::throttle::FetchesSpent;
use crate::{AppState, now};

/// Seconds of `duration`, as the store counts time.
pub(crate) fn seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

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
    /// The site's fetches are spent for now: nothing was asked of it.
    #[error(transparent)]
    Spent(#[from] FetchesSpent),
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
    let name = match &outcome {
        Ok(done) => done.name(),
        Err(RefreshError::Spent(_)) => "put_off",
        Err(_) => "failed",
    };
    metrics::counter!("servio_manifest_refreshes_total", "outcome" => name).increment(1);
    outcome
}

async fn refresh_once(state: &AppState, site: &SiteRecord, wait: Wait) -> Result<Outcome, RefreshError> {
    let (Ok(origin), Ok(manifest_url)) = (site.origin.parse::<Url>(), site.manifest_url.parse::<Url>()) else {
        return stale(state, site, format!("stored URLs of {} do not parse", site.origin)).await;
    };
    let found: Discovered = match crate::shared::discovered::refresh(state, site, &origin, &manifest_url).await? {
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
        crate::domain::directory::recheck_listing(state, record.id, &record.origin, manifest).await?;
    }
    Ok(if changed { Outcome::Changed } else { Outcome::Unchanged })
}

/// Marks `site` stale for `reason`, one more failure in a row, and backs it off.
async fn stale(state: &AppState, site: &SiteRecord, reason: String) -> Result<Outcome, RefreshError> {
    let wait = state.refresh.retry_after(site.refresh_failures.saturating_add(1));
    state.store.mark_stale(site.id, &reason, now().saturating_add(seconds(wait))).await?;
    Ok(Outcome::Stale(reason))
}

impl From<RefreshError> for ApiError {
    fn from(error: RefreshError) -> ApiError {
        match error {
            RefreshError::Store(error) => ApiError::from(error),
            RefreshError::Busy(busy) => ApiError::ChecksBusy(busy),
            RefreshError::Spent(spent) => ApiError::from(spent),
        }
    }
}
