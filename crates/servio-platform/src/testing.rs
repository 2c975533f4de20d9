//! Test support for the crates that run the platform, as `servio_store::testing` is for the
//! store (behind the `testing` feature): a platform state with a fixed key, and a running
//! platform on 127.0.0.1 per available backend, with a client that speaks to it as a browser
//! or a program would.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_client::{Client, ClientConfig};
use servio_core::credentials::OAuthConfig;
use servio_core::secrets::Secrets;
use servio_store::Store;

use crate::{AppState, router};

/// The sealing key of every test platform.
pub const KEY: [u8; 32] = [42; 32];

/// A platform's state over `store`, reaching sites with `client`, reached by browsers at
/// `public_url` (its OAuth callbacks).
pub fn state(store: Arc<dyn Store>, client: Client, public_url: &str) -> AppState {
    let oauth = OAuthConfig {
        public_url: public_url.to_owned(),
        client_id: "servio-test".into(),
        per_site: Default::default(),
    };
    let mut state = AppState::new(store, client, Secrets::from_key(&KEY), oauth);
    // Tests refresh one site many times in a row, and add one demo site for many users; the
    // limit on refreshes on request is held by the CLI's abuse suite (`refreshes.rs`), against
    // a real `servio serve`, and the budget of fetches per site by the tests that set it.
    let throttle = crate::throttle::ThrottleConfig {
        refresh_per_site: std::time::Duration::ZERO,
        manifest_fetches_per_site: 0,
        ..crate::throttle::ThrottleConfig::default()
    };
    state.throttle = Arc::new(crate::throttle::Throttle::new(&throttle));
    state
}

/// A client that may reach loopback (the demo site) and trusts `ca_pem` when given.
pub fn client(ca_pem: Option<&str>) -> Client {
    Client::new(ClientConfig { extra_roots_pem: ca_pem.map(|p| p.as_bytes().to_vec()), ..ClientConfig::default() })
        .expect("a client")
}

/// Serves `state` on `listener` in the background, with the peer address sign-in throttling
/// reads.
pub fn serve(listener: tokio::net::TcpListener, state: AppState) {
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
}

/// A running platform.
pub struct Server {
    /// Where it listens: `http://127.0.0.1:PORT`.
    pub base: String,
    /// The client tests speak to it with.
    pub http: reqwest::Client,
    /// The platform's state, for driving the collector with a chosen clock.
    pub state: AppState,
}

/// One platform per backend. Outbound calls may reach loopback (the demo site) and trust
/// `ca_pem` when given.
pub async fn servers(ca_pem: Option<&str>) -> Vec<(&'static str, Server)> {
    servers_with(ca_pem, |_| {}).await
}

/// [`servers`] with their state changed by `configure` first (tighter limits, say).
pub async fn servers_with(ca_pem: Option<&str>, configure: impl Fn(&mut AppState)) -> Vec<(&'static str, Server)> {
    let mut all = Vec::new();
    for (name, store) in servio_store::testing::backends().await {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mut state = state(Arc::from(store), client(ca_pem), &base);
        configure(&mut state);
        serve(listener, state.clone());
        all.push((name, Server { base, http: reqwest::Client::new(), state }));
    }
    all
}

impl Server {
    /// Waits until more than `before` MCP streams listen to this platform's notices (a session
    /// subscribes once it heard `notifications/initialized`, after that was answered); panics
    /// after 10 s.
    pub async fn wait_for_listeners(&self, before: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.state.notices.listeners() <= before {
            assert!(std::time::Instant::now() < deadline, "no MCP stream started listening");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// [`with_worker`] on this platform.
    pub async fn with_worker<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        with_worker(&self.state, work).await
    }
}

/// Runs `work` while a worker collects the jobs of the platform of `state`, as `servio
/// serve`'s scheduler does (it plans every vault entry's due periods as it starts), and stops
/// the worker after: for requests that wait for the workers, such as a backfill waited for.
pub async fn with_worker<T>(state: &AppState, work: impl std::future::Future<Output = T>) -> T {
    let config = servio_collector::WorkerConfig {
        idle: std::time::Duration::from_millis(20),
        plan_every: std::time::Duration::from_secs(3600),
        grace: std::time::Duration::from_secs(1),
        ..servio_collector::WorkerConfig::new("test-worker")
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(state.collector.clone().run(config, stopped));
    let done = work.await;
    let _ = stop.send(true);
    let _ = worker.await;
    done
}

/// A signed-in browser or program.
#[derive(Clone, Default)]
pub struct Browser {
    /// The session cookie (`name=value`).
    pub cookie: Option<String>,
    /// The session's CSRF token, sent as `X-CSRF-Token`.
    pub csrf: Option<String>,
    /// An API token, sent as a bearer token.
    pub bearer: Option<String>,
    /// The signed-in user's id, as signing up or in answered it, for a test that reads the
    /// store as that user.
    pub user_id: Option<i64>,
}

impl Server {
    /// Sends `method path` as `who`, with `body` as JSON; answers the status, the JSON body
    /// (`null` when there is none) and the `Set-Cookie` header.
    pub async fn send(
        &self,
        who: &Browser,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value, Option<String>) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(cookie) = &who.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(csrf) = &who.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        if let Some(token) = &who.bearer {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let set_cookie = response.headers().get("set-cookie").map(|v| v.to_str().unwrap().to_owned());
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body, set_cookie)
    }

    /// The HTML of the page at `path` as `who` sees it (its session cookie); panics unless 200.
    pub async fn page(&self, who: &Browser, path: &str) -> String {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(cookie) = &who.cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        response.text().await.unwrap()
    }

    /// The user signed up as `email` and their only vault entry, from the store.
    pub async fn vault_entry_of(&self, email: &str) -> (servio_store::User, servio_store::VaultEntry) {
        let entries = self.state.store.all_vault_entries().await.unwrap();
        entries.into_iter().find(|(user, _)| user.email == email).unwrap()
    }

    /// Signs up `email` (in Pacific/Auckland) and answers their signed-in browser.
    pub async fn sign_up(&self, email: &str) -> Browser {
        let body = sign_up_body(email, "Pacific/Auckland");
        let (status, body, set_cookie) = self.send(&Browser::default(), Method::POST, "/api/signup", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        browser(&body, set_cookie)
    }

    /// Signs up `email` and adds the site at `origin` to their vault with the bearer `token`:
    /// their browser and the vault site's id.
    pub async fn sign_up_with_site(&self, email: &str, origin: &str, token: &str) -> (Browser, i64) {
        let who = self.sign_up(email).await;
        let id = self.add_site(&who, origin, token).await;
        (who, id)
    }

    /// Adds the site at `origin` to the vault of `who`, with the bearer `token`; the vault
    /// site's id.
    pub async fn add_site(&self, who: &Browser, origin: &str, token: &str) -> i64 {
        let body = json!({ "url": origin, "token": token });
        let (status, added, _) = self.send(who, Method::POST, "/api/vault", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "adding {origin}: {added}");
        added["site"]["id"].as_i64().unwrap()
    }
}

/// The password of every user the tests sign up.
pub const PASSWORD: &str = "a long enough password";

/// The body of `/api/signup` for `email` in `time_zone`, with [`PASSWORD`].
pub fn sign_up_body(email: &str, time_zone: &str) -> Value {
    json!({ "email": email, "password": PASSWORD, "time_zone": time_zone })
}

/// The body of `/api/signin` for `email`, with [`PASSWORD`].
pub fn sign_in_body(email: &str) -> Value {
    json!({ "email": email, "password": PASSWORD })
}

/// The browser a sign-up or sign-in answer (`body`, `set_cookie`) makes, after checking the
/// session cookie's attributes.
pub fn browser(body: &Value, set_cookie: Option<String>) -> Browser {
    let set_cookie = set_cookie.expect("a session cookie");
    for attribute in ["__Host-servio_session=", "Path=/", "Secure", "HttpOnly", "SameSite=Lax"] {
        assert!(set_cookie.contains(attribute), "{attribute} in {set_cookie}");
    }
    Browser {
        cookie: Some(set_cookie.split(';').next().unwrap().to_owned()),
        csrf: body["csrf_token"].as_str().map(str::to_owned),
        bearer: None,
        user_id: body["user"]["id"].as_i64(),
    }
}

/// What [`seed_collections`] seeds: the site, its token, and who has it in their vault.
pub struct Seed<'a> {
    /// The site's origin.
    pub origin: &'a str,
    /// The manifest it serves.
    pub manifest: &'a str,
    /// Its bearer token, sealed for each user with `key`.
    pub token: &'a str,
    /// The sealing key of the workers that will collect.
    pub key: &'a [u8; 32],
    /// One user per zone, the site in each vault.
    pub zones: &'a [&'a str],
    /// Due days per user, counting back from two days ago in the user's zone.
    pub days: i64,
    /// The daily metrics to collect.
    pub metrics: &'a [&'a str],
}

/// Seeds `store` with the users, vaults and due jobs `seed` describes (through the store:
/// thousands of sign-ups would be thousands of password hashes), for the tests and benchmarks
/// of the workers. Returns each job's slot as (user, metric key, start date).
pub async fn seed_collections(
    store: &dyn Store,
    seed: &Seed<'_>,
) -> Result<Vec<(i64, String, String)>, Box<dyn std::error::Error>> {
    use jiff::ToSpan;
    use servio_manifest::period::{Granularity, resolve, zone};

    let manifest_url = format!("{}/.well-known/servio.json", seed.origin);
    let fetched = servio_store::FetchedManifest {
        origin: seed.origin,
        manifest_url: &manifest_url,
        manifest: seed.manifest,
        etag: None,
        last_modified: None,
    };
    let site = store.save_site(&fetched, 0).await?;
    let secrets = Secrets::from_key(seed.key);
    let now = jiff::Timestamp::now();
    let mut slots = Vec::new();
    for (i, name) in seed.zones.iter().enumerate() {
        let user = store.create_user(&format!("seed-{i}@example.com"), "not a hash", name, 0).await?;
        store.add_to_vault(user.id, site.id, 0).await?;
        let sealed = secrets.seal(seed.token.as_bytes(), &servio_core::secrets::credential_aad(user.id, site.id));
        store.set_credential(user.id, site.id, Some(&sealed)).await?;
        let tz = zone(name)?;
        // Two days back in the user's zone is due everywhere (a day's end plus an hour).
        let last = now.to_zoned_datetime(tz.clone()).date().checked_sub(2.days())?;
        let mut periods = Vec::new();
        for back in 0..seed.days {
            let period = resolve(Granularity::Day, last.checked_sub(back.days())?, 0, &tz)?;
            periods.push((period.start.as_second(), period.end.as_second(), period.start_date.to_string()));
        }
        let mut jobs = Vec::new();
        for key in seed.metrics {
            for (start, end, date) in &periods {
                let slot = servio_store::testing::daily_slot(user.id, site.id, key, (*start, *end), date);
                jobs.push(servio_store::NewJob {
                    slot,
                    not_before: 0,
                    deadline: now.as_second() + 86_400,
                    kind: servio_store::JobKind::Scheduled,
                });
                slots.push((user.id, key.to_string(), date.clone()));
            }
        }
        for chunk in jobs.chunks(5_000) {
            store.enqueue_jobs(chunk, now.as_second()).await?;
        }
    }
    Ok(slots)
}

/// The MCP protocol version the test clients of [`mcp_post`] speak.
pub const MCP_VERSION: &str = "2025-06-18";

/// Posts one JSON-RPC `message` to the MCP endpoint of the platform at `base` with the bearer
/// `token`, in `session` when given. Returns the status, the session id the answer names, and
/// the messages it carried (a JSON body, or an SSE stream of them).
pub async fn mcp_post(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    session: Option<&str>,
    message: &Value,
) -> (StatusCode, Option<String>, Vec<Value>) {
    let mut request = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(message);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", MCP_VERSION);
    }
    let response = request.send().await.expect("the MCP endpoint answers");
    let status = response.status();
    let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = response.text().await.expect("an MCP answer's body");
    let messages = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(text.trim_start().starts_with('{').then_some(text.as_str()))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    (status, session, messages)
}

/// Numbers beyond 64 bits and `f64`, as a client writes them: those of the
/// JSON-Schema-Test-Suite's bignum cases, and a long decimal. Tests send them as tool arguments
/// and read them back from the site, digit for digit (interpretation §5).
pub const BIG_NUMBERS: [&str; 8] = [
    "12345678910111213141516171819202122232425262728293031",
    "-12345678910111213141516171819202122232425262728293031",
    "98249283749234923498293171823948729348710298301928331",
    "18446744073709551600",
    "-18446744073709551600",
    "972783798187987123879878123.188781371",
    "-972783798187987123879878123.188781371",
    "3.14159265358979323846264338327950288419716939937510582097494459",
];
