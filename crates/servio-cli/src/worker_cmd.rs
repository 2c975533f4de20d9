//! `servio worker`: plans and works collection jobs on the platform's database until SIGTERM
//! or Ctrl-C, then stops gracefully (calls in flight get `--shutdown-timeout`, held jobs are
//! handed back). The work itself is a `servio_collector::Collector` (a store, a client and the
//! credentials; no web state); this is configuration and signals.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use servio_collector::{Collector, WorkerConfig};
use servio_core::Credentials;
use servio_platform::notices::Notices;

use crate::cli::WorkerArgs;
use crate::platform::{KeyFile, backend, check_key};
use crate::running::{serve_metrics, shutdown_signal};
use crate::{Failure, Outcome};

pub fn run(args: &WorkerArgs) -> Result<Outcome, Failure> {
    let platform = &args.platform;
    let data_dir = platform.data_dir();
    let url = platform.database_url(&data_dir)?;
    let secrets = platform.secrets(&data_dir, KeyFile::Existing)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let store = servio_store::open(&url).await.context("opening the database")?;
        check_key(store.as_ref(), &secrets).await?;
        let client = platform.client(false, None)?;
        // OAuth renewals name the platform's callback URL.
        let oauth = platform.oauth("http://127.0.0.1:8080".into())?;
        let store: Arc<dyn servio_store::Store> = Arc::from(store);
        // What this worker's writes change (new values, renewed OAuth tokens) is what the
        // platform's processes must not keep showing or using: told by the platform's one
        // ordered path (held for as long as the worker runs).
        let notices = Arc::new(Notices::of_process("worker"));
        notices.hear_store(store.clone());
        let credentials = Credentials::new(store.clone(), client.clone(), Arc::new(secrets), Arc::new(oauth));
        let collector = Collector::with_checks(store.clone(), client, Arc::new(credentials), platform.checks.config())
            .with_in_flight(args.calls.in_flight());
        let owner = args.id.clone().unwrap_or_else(|| servio_collector::process_owner("worker"));
        let config = WorkerConfig {
            owner: owner.clone(),
            lease: Duration::from_secs(args.lease),
            batch: usize::try_from(args.batch_size).unwrap_or(usize::MAX),
            plan_every: Duration::from_secs(args.plan_every),
            idle: Duration::from_millis(args.idle),
            drain: args.drain,
            grace: Duration::from_secs(args.process.shutdown_timeout),
        };
        if let Some(addr) = args.process.metrics_addr {
            let metrics = serve_metrics(addr, store.clone()).await?;
            println!("Metrics on http://{metrics}/metrics");
        }
        println!(
            "Servio worker {owner} on {}: leases of {}s, batches of {}, {} calls in flight",
            backend(&url),
            args.lease,
            args.batch_size,
            args.calls.in_flight
        );
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut work = tokio::spawn(collector.run(config, stopped));
        let summary = tokio::select! {
            // Drained: no job is due.
            summary = &mut work => summary.context("the worker's tasks")?,
            signal = shutdown_signal() => {
                signal?;
                tracing::info!(
                    grace_s = args.process.shutdown_timeout,
                    "stopping: no new leases; calls in flight finish or are cut off, held jobs are handed back"
                );
                let _ = stop.send(true);
                work.await.context("the worker's tasks")?
            }
        };
        println!("Servio worker {owner} stopped: {}", summary.describe());
        anyhow::Ok(())
    })?;
    Ok(Outcome::Ok)
}
