//! The life of a long-running platform process (`serve`, `demo`, `worker`): its background
//! tasks, its metrics listener, and how it stops on SIGTERM or Ctrl-C.
//!
//! A graceful stop, in order: readiness turns 503 and MCP event streams end; the listener
//! stops accepting; requests and collection calls in flight get the grace period (then are cut
//! off); the collector commits what it has and hands back the jobs it still holds; the call
//! log is flushed; the process exits 0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use servio_collector::collect::Summary;
use servio_platform::connections::ConnectionLimits;
use servio_platform::{AppState, Stopping};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often the scheduler plans due periods into jobs (and retries transient failures).
const SCHEDULER_TICK: Duration = Duration::from_secs(300);

/// How often expired sessions are purged and sign-in limiters trimmed.
const UPKEEP_TICK: Duration = Duration::from_secs(60);

/// Waits for SIGTERM (how service managers and orchestrators stop a process) or Ctrl-C.
pub async fn shutdown_signal() -> anyhow::Result<()> {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::select! {
        _ = terminate.recv() => {}
        result = tokio::signal::ctrl_c() => result.context("listening for Ctrl-C")?,
    }
    Ok(())
}

/// A platform's background work: manifest refreshes, the collection scheduler and upkeep.
pub struct Background {
    scheduler: JoinHandle<Summary>,
    others: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts the background work of `state`; the scheduler stops, within `grace`, once
    /// `state.stopping` is set.
    pub fn start(state: &AppState, grace: Duration) -> Background {
        let (stop, stopped) = watch::channel(false);
        let token = state.stopping.token();
        let bridge = tokio::spawn(async move {
            token.cancelled().await;
            let _ = stop.send(true);
        });
        let scheduler = tokio::spawn(state.collector.clone().run_scheduler(SCHEDULER_TICK, grace, stopped));
        let refresh = tokio::spawn(servio_platform::refresh::run_periodically(state.clone()));
        let upkeep = tokio::spawn(servio_platform::upkeep::run_periodically(state.clone(), UPKEEP_TICK));
        let others = tokio::spawn(servio_platform::notices::hear_other_processes(state.clone()));
        Background { scheduler, others: vec![bridge, refresh, upkeep, others] }
    }

    /// Waits for the scheduler to stop (set `stopping` first), and ends the rest.
    pub async fn stop(self) -> Summary {
        let summary = self.scheduler.await.unwrap_or_default();
        for task in self.others {
            task.abort();
        }
        summary
    }
}

/// Serves the platform's `router` on `listener` within `limits` until SIGTERM or Ctrl-C; then
/// sets `stopping`, stops accepting, and gives the requests in flight `grace` before cutting
/// them off.
pub async fn serve_until_signal(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    limits: ConnectionLimits,
    stopping: &Stopping,
    grace: Duration,
) -> anyhow::Result<()> {
    // The peer address (ConnectInfo) is the client address that sign-in and sign-up are
    // throttled by.
    let server = servio_platform::connections::serve(listener, router, limits, stopping.token());
    tokio::pin!(server);
    tokio::select! {
        () = &mut server => return Ok(()),
        signal = shutdown_signal() => signal?,
    }
    tracing::info!(grace_s = grace.as_secs_f64(), "stopping: no new connections, waiting for requests in flight");
    stopping.begin();
    if tokio::time::timeout(grace, &mut server).await.is_err() {
        tracing::warn!(grace_s = grace.as_secs_f64(), "requests still running after the grace period are cut off")
    }
    Ok(())
}

/// Serves `/metrics` alone on `addr` (`--metrics-addr`) until the process ends.
pub async fn serve_metrics(addr: SocketAddr, store: Arc<dyn servio_store::Store>) -> anyhow::Result<SocketAddr> {
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr} for metrics"))?;
    let local = listener.local_addr()?;
    let app = servio_platform::metrics::router(store);
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(error = %servio_client::error_chain(&error), "the metrics listener failed");
        }
    });
    Ok(local)
}
