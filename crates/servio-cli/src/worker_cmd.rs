//! `servio worker`: plans and works collection jobs on the platform's database until SIGTERM
//! or Ctrl-C. The work itself is a `servio_collector::Collector` (a store, a client and the
//! credentials; no web state); this is configuration and signals.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use servio_client::{Client, ClientConfig, Policy};
use servio_collector::credentials::OAuthConfig;
use servio_collector::secrets::Secrets;
use servio_collector::{Collector, Credentials, WorkerConfig};

use crate::cli::WorkerArgs;
use crate::{Failure, Outcome};

pub fn run(args: &WorkerArgs) -> Result<Outcome, Failure> {
    let url = match &args.database_url {
        Some(url) => url.clone(),
        None => format!("sqlite:{}", args.data_dir.join("servio.db").display()),
    };
    let secrets = secrets(args)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let store = servio_store::open(&url).await.context("opening the database")?;
        let policy = if args.allow_local { Policy::Any } else { Policy::Public };
        let mut config = args.limits.apply(ClientConfig::default()).with_policy(policy);
        if let Some(path) = &args.ca_cert {
            config = config.with_ca_file(path)?;
        }
        let client = Client::new(config)?;
        let oauth = OAuthConfig {
            public_url: args.public_url.clone(),
            client_id: args.oauth_client_id.clone(),
            per_site: crate::serve_cmd::per_site_clients(&args.oauth_client)?,
        };
        let store: Arc<dyn servio_store::Store> = Arc::from(store);
        let credentials = Credentials::new(store.clone(), client.clone(), Arc::new(secrets), Arc::new(oauth));
        let collector = Collector::new(store, client, Arc::new(credentials));
        let owner = args.id.clone().unwrap_or_else(|| format!("worker-{}", std::process::id()));
        let config = WorkerConfig {
            owner: owner.clone(),
            lease: Duration::from_secs(args.lease),
            batch: usize::try_from(args.batch_size).unwrap_or(usize::MAX),
            in_flight: usize::try_from(args.in_flight).unwrap_or(usize::MAX),
            plan_every: Duration::from_secs(args.plan_every),
            idle: Duration::from_millis(args.idle),
            drain: args.drain,
        };
        let backend = if url.starts_with("sqlite:") { "SQLite" } else { "PostgreSQL" };
        println!(
            "Servio worker {owner} on {backend}: leases of {}s, batches of {}, {} calls in flight",
            args.lease, args.batch_size, args.in_flight
        );
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut work = tokio::spawn(collector.run(config, stopped));
        let summary = tokio::select! {
            // Drained: no job is due.
            summary = &mut work => summary.context("the worker's tasks")?,
            signal = shutdown_signal() => {
                signal?;
                eprintln!("servio: {owner}: stopping after the batches in hand");
                let _ = stop.send(true);
                work.await.context("the worker's tasks")?
            }
        };
        println!("Servio worker {owner} stopped: {}", summary.describe());
        anyhow::Ok(())
    })?;
    Ok(Outcome::Ok)
}

/// The platform's key: SERVIO_SECRET_KEY, or the key file `servio serve` generated. A worker
/// never generates one: a key of its own would open no credential.
fn secrets(args: &WorkerArgs) -> anyhow::Result<Secrets> {
    if let Ok(hex) = std::env::var("SERVIO_SECRET_KEY") {
        return Secrets::from_hex(&hex).map_err(|e| anyhow::anyhow!("SERVIO_SECRET_KEY: {e}"));
    }
    let path = args.data_dir.join("secret.key");
    if !path.exists() {
        anyhow::bail!(
            "no secret key: set SERVIO_SECRET_KEY, or --data-dir to the directory where `servio serve` keeps secret.key ({} does not exist)",
            path.display()
        );
    }
    Secrets::load_or_create(&path).map_err(|e| anyhow::anyhow!(e.chain()))
}

/// Waits for SIGTERM (how service managers stop a process) or Ctrl-C.
async fn shutdown_signal() -> anyhow::Result<()> {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::select! {
        _ = terminate.recv() => {}
        result = tokio::signal::ctrl_c() => result.context("listening for Ctrl-C")?,
    }
    Ok(())
}
