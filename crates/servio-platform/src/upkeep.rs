//! Housekeeping for accounts, run by `servio serve` every minute: expired and idled-out
//! sessions are deleted, and the sign-in limiters forget clients whose limits have replenished,
//! so that neither the sessions table nor the limiters' memory grows without bound.

use std::time::Duration;

use servio_store::StoreError;

use crate::{AppState, now};

/// How many sessions one statement deletes: small, so that it never holds the table long.
const PURGE_BATCH: i64 = 500;

/// How many batches one round deletes at most; the rest waits for the next round.
const PURGE_BATCHES: usize = 20;

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upkeep {
    /// Sessions deleted.
    pub sessions_purged: u64,
    /// Keys the limiters still hold.
    pub limiter_keys: usize,
}

/// One round: purges sessions in batches until a batch comes back short, and trims the limiters.
pub async fn run_once(state: &AppState) -> Result<Upkeep, StoreError> {
    let limiter_keys = state.throttle.forget_stale();
    let mut sessions_purged = 0;
    for _ in 0..PURGE_BATCHES {
        let purged = state.store.purge_sessions(now(), PURGE_BATCH).await?;
        sessions_purged += purged;
        if purged < PURGE_BATCH as u64 {
            break;
        }
    }
    Ok(Upkeep { sessions_purged, limiter_keys })
}

/// [`run_once`] every `tick`, for ever; failures are logged and the next round tries again.
pub async fn run_periodically(state: AppState, tick: Duration) {
    loop {
        if let Err(error) = run_once(&state).await {
            tracing::error!(%error, "purging sessions failed");
        }
        tokio::time::sleep(tick).await;
    }
}
