//! `servio serve`: the platform, until SIGTERM or Ctrl-C, then a graceful stop
//! ([`crate::running`]).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use servio_collector::BackfillLimits;
use servio_platform::quotas::Quotas;
use servio_platform::refresh::Schedule;
use servio_platform::throttle::{Throttle, ThrottleConfig};
use servio_platform::upkeep::Retention;
use servio_platform::{AppState, CacheBytes, router};

use crate::cli::ServeArgs;
use crate::platform::{KeyFile, backend, check_key};
use crate::running::{Background, serve_metrics, serve_until_signal};
use crate::{Failure, Outcome};

pub fn run(args: &ServeArgs) -> Result<Outcome, Failure> {
    let platform = &args.platform;
    let data_dir = platform.data_dir();
    let url = platform.database_url(&data_dir)?;
    let grace = Duration::from_secs(args.process.shutdown_timeout);
    let connections = args.connections.limits();
    connections.check_descriptors()?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let store = servio_store::open(&url).await.context("opening the database")?;
        let secrets = platform.secrets(&data_dir, KeyFile::Create)?;
        check_key(store.as_ref(), &secrets).await?;
        let listener =
            tokio::net::TcpListener::bind(args.addr).await.with_context(|| format!("listening on {}", args.addr))?;
        let local = listener.local_addr()?;
        println!("Servio platform on http://{local} ({})", backend(&url));
        // The platform fetches user-supplied URLs: the public guard, unless told otherwise.
        let client = platform.client(false, None)?;
        let oauth = platform.oauth(format!("http://{local}"))?;
        let cache_bytes = CacheBytes {
            dashboards: args.dashboard_cache_bytes,
            catalogues: args.catalogue_cache_bytes,
            figures: args.figures_cache_bytes,
        };
        let checks = platform.checks.config();
        let mut state = AppState::with_limits(Arc::from(store), client, secrets, oauth, checks, cache_bytes);
        let days = |n: u64| Duration::from_secs(n * 86_400);
        state.retention = Retention {
            attempts: days(args.keep_attempts_days),
            calls: days(args.keep_calls_days),
            versions_per_site: i64::try_from(args.versions_per_site).unwrap_or(i64::MAX),
        };
        let throttle = ThrottleConfig {
            refresh_per_site: Duration::from_secs(args.refresh_every),
            manifest_fetches_per_site: args.manifest_fetches_per_site,
            ..Default::default()
        };
        state.throttle = Arc::new(Throttle::new(&throttle));
        state.refresh = Schedule {
            tick: Duration::from_secs(args.refresh_tick),
            interval: Duration::from_secs(args.refresh_interval),
            ..Schedule::default()
        };
        let quotas = &args.quotas;
        state.quotas = Quotas {
            api_tokens: quotas.max_api_tokens,
            pending_claims: quotas.max_pending_claims,
            mcp_sessions: usize::try_from(quotas.max_mcp_sessions).unwrap_or(usize::MAX),
            browser_sessions: quotas.max_browser_sessions,
            sites: quotas.max_sites,
        };
        let backfills =
            BackfillLimits { per_request: quotas.backfill_max_periods, in_flight: quotas.backfill_max_pending };
        state.collector =
            state.collector.clone().with_backfill_limits(backfills).with_in_flight(args.calls.in_flight());
        if let Some(addr) = args.process.metrics_addr {
            let metrics = serve_metrics(addr, state.store.clone()).await?;
            println!("Metrics on http://{metrics}/metrics");
        }
        let background = Background::start(&state, grace);
        tracing::info!(addr = %local, backend = backend(&url), "serving");
        serve_until_signal(listener, router(state.clone()), connections, &state.stopping, grace).await?;
        let collected = background.stop().await;
        state.gateway.flush().await;
        tracing::info!(collected = %collected.describe(), "stopped");
        anyhow::Ok(())
    })?;
    Ok(Outcome::Ok)
}
