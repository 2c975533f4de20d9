//! `servio demo`: the whole system on this machine, seeded through the platform's own API as
//! any client would: the demo site over HTTPS with its own CA, the platform on embedded SQLite,
//! a demo user (credentials in DATA_DIR/demo.json), the demo site in their vault with its token,
//! and eight weeks of its daily metrics collected by the real collector.

use std::sync::Arc;

use anyhow::{Context, anyhow};
use serde_json::{Value, json};
use servio_demo_site::{LocalCa, Site, SiteConfig, serve_https_on};
use servio_manifest::period::Granularity;
use servio_platform::{AppState, router};

use crate::cli::DemoArgs;
use crate::platform::{KeyFile, check_key};
use crate::running::{Background, serve_until_signal};
use crate::{Failure, Outcome};

pub fn run(args: &DemoArgs) -> Result<Outcome, Failure> {
    let temporary;
    let data_dir = match &args.platform.data_dir {
        Some(dir) => dir.clone(),
        None => {
            temporary = tempfile::tempdir().context("creating a temporary data directory")?;
            temporary.path().to_owned()
        }
    };
    std::fs::create_dir_all(&data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(demo(args, &data_dir))?;
    Ok(Outcome::Ok)
}

async fn demo(args: &DemoArgs, data_dir: &std::path::Path) -> anyhow::Result<()> {
    // The demo site, over HTTPS with a local CA.
    let ca = LocalCa::generate(&[])?;
    let tls = data_dir.join("tls");
    std::fs::create_dir_all(&tls)?;
    std::fs::write(tls.join("ca.pem"), &ca.ca_pem)?;
    let site_listener = demo_site_listener(data_dir)?;
    let origin = format!("https://localhost:{}", site_listener.local_addr()?.port());
    let site_token = new_secret()?;
    let site = Site::new(SiteConfig::bearer(&origin, &site_token), Some(&data_dir.join("forum.sqlite"))).await?;
    site.watch_verification_file(tls.join("verification"));
    let _site = serve_https_on(site_listener, &ca, site.router()).await?;

    // The platform, on embedded SQLite unless told otherwise; it may reach the local demo site.
    let platform = &args.platform;
    let database_url = platform.database_url(data_dir)?;
    let store = servio_store::open(&database_url).await?;
    let secrets = platform.secrets(data_dir, KeyFile::Create)?;
    check_key(store.as_ref(), &secrets).await?;
    let client = platform.client(true, Some(&ca.ca_pem))?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("listening on {} (choose another with --addr)", args.addr))?;
    let url = format!("http://{}", listener.local_addr()?);
    let oauth = platform.oauth(url.clone())?;
    let state = AppState::with_limits(
        Arc::from(store),
        client,
        secrets,
        oauth,
        args.platform.checks.config(),
        Default::default(),
    );
    let background = Background::start(&state, STOP_GRACE);
    let app = router(state.clone());
    let stopping = state.stopping.clone();
    let server =
        tokio::spawn(async move { serve_until_signal(listener, app, Default::default(), &stopping, STOP_GRACE).await });

    // The demo user and their vault, through the API.
    println!("Seeding the demo: a user, the demo site in their vault, eight weeks of metrics...");
    let api = Api { http: reqwest::Client::new(), base: url.clone() };
    let demo_file = data_dir.join("demo.json");
    let (email, password, api_token) = api.demo_user(&demo_file).await?;
    let site_id = api.vault_site(&api_token, &origin, &site_token).await?;
    let zone = jiff::tz::TimeZone::system().iana_name().unwrap_or("UTC").to_owned();
    // Eight weeks ending with the latest daily period already due in the user's zone (before
    // the day's collection time that is the day before yesterday): 56 periods at any hour.
    let user_zone = servio_manifest::period::zone(&api.time_zone(&api_token).await?).unwrap_or(jiff::tz::TimeZone::UTC);
    let latest = servio_collector::plan::latest_due(Granularity::Day, &user_zone, jiff::Timestamp::now())?;
    let last = latest.start_date;
    let from = last.checked_sub(jiff::ToSpan::days(55))?;
    let collected = api
        .call(
            &api_token,
            reqwest::Method::POST,
            &format!("/api/vault/{site_id}/backfill"),
            Some(json!({ "from": from.to_string(), "to": last.to_string() })),
        )
        .await?;
    let demo = json!({ "url": url, "email": email, "password": password, "api_token": api_token });
    // It holds the demo user's password and API token: readable by the owner only.
    crate::credentials::write_private(&demo_file, &serde_json::to_vec_pretty(&demo)?)?;

    println!();
    println!("Servio demo is running (time zone of the demo user: {zone}).");
    println!("  dashboard:  {url}/dashboard");
    println!("  sign in as: {email} / {password}");
    println!("  API token:  {api_token}   (also in {})", demo_file.display());
    println!("  demo site:  {origin}  (CA: {})", tls.join("ca.pem").display());
    // The platform's worker collects the backfill; past the request's wait it goes on.
    match collected.get("pending") {
        Some(pending) => println!("  collecting: {pending} periods still to collect, in the background"),
        None => println!(
            "  collected:  {} values stored, {} dropped, {} failed",
            collected["stored"], collected["dropped"], collected["failed"]
        ),
    }
    println!("Press Ctrl-C to stop.");
    server.await.context("the platform's server")??;
    background.stop().await;
    state.gateway.flush().await;
    Ok(())
}

/// How long a stopping demo waits for what is in flight.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The demo site's listener, on the port it had last time when that port is free: the site is
/// known to the vault by its origin, so a new port would add it again as a second site.
fn demo_site_listener(data_dir: &std::path::Path) -> anyhow::Result<std::net::TcpListener> {
    let port_file = data_dir.join("demo-site-port");
    let saved = std::fs::read_to_string(&port_file).ok().and_then(|s| s.trim().parse::<u16>().ok());
    let any_port = || std::net::TcpListener::bind("127.0.0.1:0").context("listening for the demo site");
    let listener = match saved {
        None => any_port()?,
        Some(port) => std::net::TcpListener::bind(("127.0.0.1", port)).or_else(|e| {
            println!("note: the demo site's port {port} is taken ({e}); on a new port it joins the vault again");
            any_port()
        })?,
    };
    let port = listener.local_addr()?.port();
    std::fs::write(&port_file, format!("{port}\n")).with_context(|| format!("writing {}", port_file.display()))?;
    Ok(listener)
}

fn new_secret() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| anyhow!("no randomness: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The platform's JSON API, as the demo uses it.
struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    async fn call(
        &self,
        bearer: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let mut request = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(bearer);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(anyhow!("{path} answered {status}: {value}"));
        }
        Ok(value)
    }

    /// The demo user: signed up the first time, signed in with the saved password after.
    async fn demo_user(&self, demo_file: &std::path::Path) -> anyhow::Result<(String, String, String)> {
        if let Ok(saved) = std::fs::read(demo_file) {
            let saved: Value = serde_json::from_slice(&saved)?;
            let field = |k: &str| {
                saved[k].as_str().map(str::to_owned).ok_or_else(|| anyhow!("{} lacks {k}", demo_file.display()))
            };
            return Ok((field("email")?, field("password")?, field("api_token")?));
        }
        let email = "demo@servio.test".to_owned();
        let password = new_secret()?;
        let time_zone = jiff::tz::TimeZone::system().iana_name().unwrap_or("UTC").to_owned();
        let response = self
            .http
            .post(format!("{}/api/signup", self.base))
            .json(&json!({ "email": email, "password": password, "time_zone": time_zone }))
            .send()
            .await?;
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or_default().to_owned());
        let body: Value = response.json().await?;
        let (Some(cookie), Some(csrf)) = (cookie, body["csrf_token"].as_str()) else {
            return Err(anyhow!("signing up the demo user failed: {body}"));
        };
        let token: Value = self
            .http
            .post(format!("{}/api/tokens", self.base))
            .header("cookie", cookie)
            .header("x-csrf-token", csrf)
            // The demo sets its own vault up with this token (adds the site, backfills): an
            // `account` token, made with the demo user's password.
            .json(&json!({ "name": "demo", "scope": "account", "password": password }))
            .send()
            .await?
            .json()
            .await?;
        let api_token =
            token["token"].as_str().ok_or_else(|| anyhow!("creating the demo API token failed: {token}"))?.to_owned();
        Ok((email, password, api_token))
    }

    /// The id of the demo site in the vault, adding it with its token when missing.
    async fn vault_site(&self, bearer: &str, origin: &str, token: &str) -> anyhow::Result<i64> {
        let vault = self.call(bearer, reqwest::Method::GET, "/api/vault", None).await?;
        for site in vault["sites"].as_array().into_iter().flatten() {
            if site["origin"] == origin {
                let id = site["id"].as_i64().unwrap_or_default();
                self.call(
                    bearer,
                    reqwest::Method::PUT,
                    &format!("/api/vault/{id}/credential"),
                    Some(json!({ "token": token })),
                )
                .await?;
                return Ok(id);
            }
        }
        let added = self
            .call(bearer, reqwest::Method::POST, "/api/vault", Some(json!({ "url": origin, "token": token })))
            .await?;
        added["site"]["id"].as_i64().ok_or_else(|| anyhow!("adding the demo site failed: {added}"))
    }

    async fn time_zone(&self, bearer: &str) -> anyhow::Result<String> {
        let me = self.call(bearer, reqwest::Method::GET, "/api/me", None).await?;
        Ok(me["user"]["time_zone"].as_str().unwrap_or("UTC").to_owned())
    }
}
