//! `servio serve`: the platform, until interrupted.

use std::sync::Arc;

use anyhow::Context;
use servio_platform::{AppState, router};

use crate::cli::ServeArgs;
use crate::platform::{KeyFile, backend};
use crate::{Failure, Outcome};

pub fn run(args: &ServeArgs) -> Result<Outcome, Failure> {
    let platform = &args.platform;
    let data_dir = platform.data_dir();
    let url = platform.database_url(&data_dir)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let store = servio_store::open(&url).await.context("opening the database")?;
        let listener =
            tokio::net::TcpListener::bind(args.addr).await.with_context(|| format!("listening on {}", args.addr))?;
        let local = listener.local_addr()?;
        println!("Servio platform on http://{local} ({})", backend(&url));
        let secrets = platform.secrets(&data_dir, KeyFile::Create)?;
        // The platform fetches user-supplied URLs: the public guard, unless told otherwise.
        let client = platform.client(false, None)?;
        let oauth = platform.oauth(format!("http://{local}"))?;
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
