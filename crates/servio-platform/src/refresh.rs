//! Keeping manifests current: each site is fetched again with a conditional request, every
//! 24 hours (jittered, so that many sites do not all fall due at once) and on demand.
//!
//! A failed refresh (unreachable, refused, invalid) keeps the last valid manifest in use and
//! marks the site stale with the reason, and the site backs off: it is asked again an hour
//! later, then two, four... up to a day ([`Schedule`]). A changed valid manifest becomes a new
//! version; what needs approval is worked out per user against the version they approved.
//!
//! Each round ([`run_once`]) deletes a batch of the sites nobody holds any more (no vault entry,
//! no Directory listing), then refreshes the held sites due, the earliest due first: a set of
//! failing sites waits behind the others instead of filling every round. When a site's fetches
//! are spent for now ([`crate::throttle::Throttle::manifest_fetch`]), the round puts it off
//! until they are back.

use std::time::Duration;

use futures_util::StreamExt;
use servio_store::{SiteRecord, StoreError};

use crate::domain::refresh::{Outcome, RefreshError, refresh_site, seconds};
use crate::{AppState, now};

/// How often a site is refreshed.
pub const INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// When sites are refreshed and how a round goes; [`Default`] is what `servio serve` uses.
///
/// A failed refresh waits `first_retry`, twice that after the next failure in a row, and so on
/// up to `longest_retry`: an hour, two, four, eight, sixteen, then a day. A site that is down
/// for a moment (a deploy, an outage) is read again within the hour, so that a tool it removed
/// does not stay offered for a day; one that stays dead costs six fetches its first day and
/// then one a day, as a live site does, so that dead sites cannot outnumber live ones in the
/// rounds. The times are stored with the site, so they hold across restarts and processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// How long after a good refresh the next one is due, less up to a tenth of it, drawn at
    /// random each round ([`INTERVAL`]).
    pub interval: Duration,
    /// The wait after a first failed refresh.
    pub first_retry: Duration,
    /// The longest wait after failed refreshes in a row.
    pub longest_retry: Duration,
    /// How often a round looks for sites due.
    pub tick: Duration,
    /// Sites refreshed in one round at most (and unheld sites deleted), the earliest due first;
    /// the rest wait for the next round.
    pub batch: i64,
    /// How many of a round's sites are refreshed at once: a site that never answers holds its
    /// place for the 10 s a fetch may take, not the whole round.
    pub at_once: usize,
    /// How long a site that nobody holds is kept after its last good fetch before it is
    /// deleted: longer than a write that saves a site and then holds it takes (adding it,
    /// verifying a claim), and than the clocks of the processes sharing the database differ.
    pub keep_unheld: Duration,
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule {
            interval: INTERVAL,
            first_retry: Duration::from_secs(3600),
            longest_retry: INTERVAL,
            tick: Duration::from_secs(600),
            batch: 100,
            at_once: 4,
            keep_unheld: Duration::from_secs(3600),
        }
    }
}

impl Schedule {
    /// The wait after `failures` failed refreshes in a row (1 after the first).
    pub fn retry_after(&self, failures: i64) -> Duration {
        let doublings = u32::try_from(failures.saturating_sub(1).clamp(0, 31)).unwrap_or(31);
        self.first_retry.saturating_mul(1 << doublings).min(self.longest_retry)
    }
}

/// What one round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Sites deleted because nobody holds them.
    pub dropped: u64,
    /// Sites found unchanged.
    pub unchanged: usize,
    /// Sites with a new manifest.
    pub changed: usize,
    /// Sites whose refresh failed (now stale, backing off).
    pub stale: usize,
    /// Sites put off because their fetches were spent.
    pub put_off: usize,
    /// Refreshes that could not be done (the store failed, say).
    pub failed: usize,
}

/// Runs [`run_once`] every [`Schedule::tick`] of the state's schedule, for ever; failures are
/// logged and the next round tries again.
pub async fn run_periodically(state: AppState) {
    loop {
        if let Err(error) = run_once(&state).await {
            tracing::error!(error = %servio_client::error_chain(&error), "finding sites to refresh failed");
        }
        tokio::time::sleep(state.refresh.tick).await;
    }
}

/// One round: deletes up to a batch of the sites nobody holds, then refreshes up to a batch of
/// the held sites due, the earliest due first, a few at once. A site is due an interval after
/// its last good fetch, less up to a tenth of it drawn at random for the round (so that sites
/// added together drift apart), or at its retry time after a failure.
pub async fn run_once(state: &AppState) -> Result<Round, StoreError> {
    let schedule = state.refresh;
    let now = now();
    let unheld_before = now.saturating_sub(seconds(schedule.keep_unheld));
    let dropped = state.store.drop_unheld_sites(unheld_before, schedule.batch).await?;
    if dropped > 0 {
        tracing::info!(dropped, "deleted sites that no vault and no Directory listing holds");
    }
    let mut jitter = [0u8; 8];
    let _ = getrandom::fill(&mut jitter);
    let tenth = (schedule.interval.as_secs() / 10).max(1);
    let spread = u64::from_le_bytes(jitter) % tenth;
    let interval = seconds(schedule.interval).saturating_sub(i64::try_from(spread).unwrap_or(0));
    let sites = state.store.sites_due(now, interval, schedule.batch).await?;
    let mut round = if sites.is_empty() { Round::default() } else { refresh_round(state, &sites).await };
    round.dropped = dropped;
    Ok(round)
}

/// Refreshes `sites` ([`Schedule::at_once`] at a time, started in their order), then says in
/// one line how the round went.
async fn refresh_round(state: &AppState, sites: &[SiteRecord]) -> Round {
    // By index: a closure taking `&SiteRecord` would make the spawned round's future not `Send`
    // for every lifetime (rustc's higher-ranked closure limitation).
    let outcomes: Vec<Result<Outcome, RefreshError>> = futures_util::stream::iter(0..sites.len())
        .map(|index| refresh_noted(state, &sites[index]))
        .buffered(state.refresh.at_once.max(1))
        .collect()
        .await;
    let mut round = Round::default();
    for outcome in outcomes {
        match outcome {
            Ok(Outcome::Unchanged) => round.unchanged += 1,
            Ok(Outcome::Changed) => round.changed += 1,
            Ok(Outcome::Stale(_)) => round.stale += 1,
            Err(RefreshError::Spent(_)) => round.put_off += 1,
            Err(_) => round.failed += 1,
        }
    }
    let Round { unchanged, changed, stale, put_off, failed, .. } = round;
    tracing::info!(sites = sites.len(), unchanged, changed, stale, put_off, failed, "manifest refresh round");
    round
}

/// Refreshes `site` for the round, logging a failure, and putting the site off when its
/// fetches are spent for now (they are back after the wait, whatever else asks meanwhile).
async fn refresh_noted(state: &AppState, site: &SiteRecord) -> Result<Outcome, RefreshError> {
    let outcome = refresh_site(state, site).await;
    match &outcome {
        Ok(Outcome::Stale(reason)) => {
            tracing::info!(origin = %site.origin, %reason, "a manifest refresh failed; the site is stale");
        }
        Err(RefreshError::Spent(spent)) => {
            let until = now().saturating_add(i64::try_from(spent.retry_after).unwrap_or(i64::MAX));
            if let Err(error) = state.store.put_off_refresh(site.id, until).await {
                tracing::error!(origin = %site.origin, error = %servio_client::error_chain(&error), "putting a refresh off failed");
            }
        }
        Err(error) => {
            tracing::error!(origin = %site.origin, error = %servio_client::error_chain(error), "refreshing a manifest failed");
        }
        Ok(_) => {}
    }
    outcome
}
