//! Housekeeping, run by `servio serve` every minute: expired and idled-out sessions are
//! deleted, the sign-in limiters forget clients whose limits have replenished, the attempt
//! log, the call log and finished jobs lose what is older than their [`Retention`], and each
//! site keeps its newest [`Retention::versions_per_site`] versions (plus those a user still has
//! approved or kept), so that nothing grows without bound. Deletes go in small batches, a bounded number per round.

use std::time::Duration;

use servio_store::{Pruned, StoreError};

use crate::{AppState, now};

/// How many rows one statement deletes: small, so that it never holds a table long.
const PURGE_BATCH: i64 = 500;

/// How long an MCP session is kept in the store, for another process to take it over; a
/// client whose session is gone opens a new one (the transport's rule for a `404`).
const MCP_SESSION_LIFE: Duration = Duration::from_secs(7 * 86_400);

/// How many batches one round deletes at most; the rest waits for the next round.
const PURGE_BATCHES: usize = 20;

/// How long the logs and finished jobs are kept (`--keep-attempts-days`, `--keep-calls-days`),
/// and how many versions of a site's manifest (`--versions-per-site`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// The collection attempt log, and collection jobs done or failed.
    pub attempts: Duration,
    /// The gateway's call log.
    pub calls: Duration,
    /// The newest versions kept of each site's manifest, besides every version a user still
    /// has approved or kept; pruned when a refresh stores a new one, and by upkeep.
    pub versions_per_site: i64,
}

/// The versions of a site kept by default, besides those in use.
pub const VERSIONS_PER_SITE: i64 = 10;

/// Ninety days of each log, ten versions a site.
impl Default for Retention {
    fn default() -> Retention {
        let ninety_days = Duration::from_secs(90 * 86_400);
        Retention { attempts: ninety_days, calls: ninety_days, versions_per_site: VERSIONS_PER_SITE }
    }
}

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upkeep {
    /// Sessions deleted.
    pub sessions_purged: u64,
    /// Keys the limiters still hold.
    pub limiter_keys: usize,
    /// Attempts, calls, finished jobs and manifest versions deleted past their retention.
    pub pruned: u64,
}

/// One round: purges sessions and prunes old rows in batches until a batch comes back short
/// (at most `PURGE_BATCHES` each), and trims the limiters.
pub async fn run_once(state: &AppState) -> Result<Upkeep, StoreError> {
    let limiter_keys = state.throttle.forget_stale();
    let now = now();
    let sessions_purged = in_batches(|limit| state.store.purge_sessions(now, limit)).await?;
    let retention = state.retention;
    let mut pruned = 0;
    for (what, kept) in [
        (Pruned::Attempts, retention.attempts),
        (Pruned::FinishedJobs, retention.attempts),
        (Pruned::ToolCalls, retention.calls),
        (Pruned::McpSessions, MCP_SESSION_LIFE),
    ] {
        let before = now.saturating_sub(i64::try_from(kept.as_secs()).unwrap_or(i64::MAX));
        pruned += in_batches(|limit| state.store.prune(what, before, limit)).await?;
    }
    pruned += state.store.prune_versions(None, retention.versions_per_site).await?;
    if pruned > 0 {
        tracing::info!(pruned, "deleted attempts, calls, finished jobs and manifest versions past their retention");
    }
    Ok(Upkeep { sessions_purged, limiter_keys, pruned })
}

/// Runs `delete` (given the batch size) until a batch comes back short, at most
/// [`PURGE_BATCHES`] times; returns how many rows went.
async fn in_batches<F, Fut>(mut delete: F) -> Result<u64, StoreError>
where
    F: FnMut(i64) -> Fut,
    Fut: Future<Output = Result<u64, StoreError>>,
{
    let mut deleted = 0;
    for _ in 0..PURGE_BATCHES {
        let done = delete(PURGE_BATCH).await?;
        deleted += done;
        if done < PURGE_BATCH as u64 {
            break;
        }
    }
    Ok(deleted)
}

/// [`run_once`] every `tick`, for ever; failures are logged and the next round tries again.
pub async fn run_periodically(state: AppState, tick: Duration) {
    loop {
        if let Err(error) = run_once(&state).await {
            tracing::error!(error = %servio_client::error_chain(&error), "upkeep failed (purging sessions, pruning logs)");
        }
        tokio::time::sleep(tick).await;
    }
}
