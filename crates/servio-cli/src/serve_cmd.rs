//! `servio serve`: the platform, until interrupted.

use std::sync::Arc;

use anyhow::Context;
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
        let app = router(AppState { store: Arc::from(store) });
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Ok)
}
