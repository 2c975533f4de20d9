//! `servio login`: OAuth 2.0 the native-app way (RFC 8252): a loopback redirect on 127.0.0.1
//! with a random port, the URL printed (and opened when a browser is at hand), the tokens
//! stored in the per-user credentials file.

use std::time::Duration;

use anyhow::{Context, anyhow};
use axum::extract::RawQuery;
use axum::response::Html;
use axum::routing::get;
use servio_client::oauth::{self, Callback, OAuthSite};
use servio_manifest::{Auth, CheckOptions, Site, check};
use tokio::sync::mpsc;

use crate::cli::LoginArgs;
use crate::credentials::{self, Stored};
use crate::fetch::Fetcher;
use crate::{Failure, Outcome};

pub fn run(args: &LoginArgs) -> Result<Outcome, Failure> {
    let fetcher = Fetcher::new(&args.fetch)?;
    let found = fetcher.discover(&args.site)?;
    let report = check(
        &found.body,
        &CheckOptions { site: Site::from_url(&found.origin), allow: Vec::new(), ..Default::default() },
    );
    let manifest = report
        .manifest
        .ok_or_else(|| anyhow!("{} is not a valid manifest; run servio check {}", found.url, args.site))?;
    let Auth::OAuth2 { authorization_url, token_url, scopes } = manifest.auth else {
        return Err(Failure(anyhow!(
            "{} uses bearer tokens, not OAuth: pass the site's token with --token or SERVIO_TOKEN",
            args.site
        )));
    };
    let origin = found.origin.as_str().trim_end_matches('/').to_owned();
    let tokens = fetcher.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.context("opening the loopback redirect")?;
        let port = listener.local_addr()?.port();
        let site = OAuthSite {
            authorization_url,
            token_url,
            scopes,
            client_id: args.client_id.clone(),
            redirect_uri: format!("http://127.0.0.1:{port}/callback").parse()?,
        };
        let authorization = oauth::start(&site)?;
        let (sender, mut receiver) = mpsc::channel::<String>(1);
        let app = axum::Router::new().route(
            "/callback",
            get(move |RawQuery(query): RawQuery| {
                let sender = sender.clone();
                async move {
                    let _ = sender.send(query.unwrap_or_default()).await;
                    Html("<!doctype html><title>Servio</title><p>Done. You can close this tab and return to the terminal.</p>")
                }
            }),
        );
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        println!("Open this URL in a browser to sign in to {origin}:\n\n  {}\n", authorization.authorize_url);
        if !args.no_browser {
            open_browser(authorization.authorize_url.as_str());
        }
        println!("Waiting for the sign-in to finish (up to {} s)...", args.timeout);
        let query = tokio::time::timeout(Duration::from_secs(args.timeout), receiver.recv())
            .await
            .map_err(|_| anyhow!("no answer within {} s", args.timeout))?
            .ok_or_else(|| anyhow!("the loopback listener stopped"))?;
        server.abort();
        let tokens = oauth::finish(fetcher.tool_client(), &site, authorization, &Callback::from_query(&query)).await?;
        anyhow::Ok((tokens, site))
    })?;
    let (tokens, site) = tokens;
    let stored = Stored {
        client_id: site.client_id.clone(),
        authorization_url: site.authorization_url.to_string(),
        token_url: site.token_url.to_string(),
        tokens,
    };
    let path = credentials::save(&origin, stored)?;
    println!("Signed in to {origin}; tokens stored in {}", path.display());
    Ok(Outcome::Ok)
}

/// Opens the URL in the desktop's browser, when there is one; the URL is printed anyway.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
