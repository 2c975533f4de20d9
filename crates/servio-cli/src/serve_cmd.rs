//! `servio serve`: the platform, until interrupted.

use std::sync::Arc;

use anyhow::Context;
use servio_client::{Client, ClientConfig, Policy};
use servio_collector::credentials::OAuthConfig;
use servio_collector::secrets::Secrets;
use servio_platform::{AppState, router};

use crate::cli::ServeArgs;
use crate::{Failure, Outcome};

pub fn run(args: &ServeArgs) -> Result<Outcome, Failure> {
    let url = match &args.database_url {
        Some(url) => url.clone(),
        None => {
            std::fs::create_dir_all(&args.data_dir).with_context(|| format!("creating {}", args.data_dir.display()))?;
            format!("sqlite:{}", args.data_dir.join("servio.db").display())
        }
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let store = servio_store::open(&url).await.context("opening the database")?;
        let listener =
            tokio::net::TcpListener::bind(args.addr).await.with_context(|| format!("listening on {}", args.addr))?;
        let backend = if url.starts_with("sqlite:") { "SQLite" } else { "PostgreSQL" };
        println!("Servio platform on http://{} ({backend})", listener.local_addr()?);
        let secrets = match std::env::var("SERVIO_SECRET_KEY") {
            Ok(hex) => Secrets::from_hex(&hex).map_err(|e| anyhow::anyhow!("SERVIO_SECRET_KEY: {e}"))?,
            Err(_) => {
                std::fs::create_dir_all(&args.data_dir)
                    .with_context(|| format!("creating {}", args.data_dir.display()))?;
                Secrets::load_or_create(&args.data_dir.join("secret.key")).map_err(|e| anyhow::anyhow!(e.chain()))?
            }
        };
        // The platform fetches user-supplied URLs: the public guard, unless told otherwise.
        let policy = if args.allow_local { Policy::Any } else { Policy::Public };
        let mut config = args.limits.apply(ClientConfig::default()).with_policy(policy);
        if let Some(path) = &args.ca_cert {
            config = config.with_ca_file(path)?;
        }
        let client = Client::new(config)?;
        let local = listener.local_addr()?;
        let oauth = OAuthConfig {
            public_url: args.public_url.clone().unwrap_or_else(|| format!("http://{local}")),
            client_id: args.oauth_client_id.clone(),
            per_site: crate::serve_cmd::per_site_clients(&args.oauth_client)?,
        };
        let state = AppState::new(Arc::from(store), client, secrets, oauth);
        // Sites fall due every 24 hours (jittered); look for due ones every ten minutes.
        tokio::spawn(servio_platform::refresh::run_periodically(state.clone(), std::time::Duration::from_secs(600)));
        // Due periods are collected, and transient failures retried, every five minutes.
        tokio::spawn(state.collector.clone().run_scheduler(std::time::Duration::from_secs(300)));
        // Expired sessions are purged, and sign-in limiters trimmed, every minute.
        tokio::spawn(servio_platform::upkeep::run_periodically(state.clone(), std::time::Duration::from_secs(60)));
        // The peer address is the client address that sign-in and sign-up are throttled by.
        let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
        axum::serve(servio_platform::no_delay(listener), app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Ok)
}

/// The `--oauth-client ORIGIN=CLIENT_ID` pairs, by origin (of `serve` and `worker`).
pub fn per_site_clients(pairs: &[String]) -> anyhow::Result<std::collections::HashMap<String, String>> {
    pairs
        .iter()
        .map(|pair| {
            let (origin, id) = pair
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--oauth-client {pair:?} is not ORIGIN=CLIENT_ID"))?;
            Ok((origin.trim_end_matches('/').to_owned(), id.to_owned()))
        })
        .collect()
}
