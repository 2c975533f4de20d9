//! What every abuse test needs: a `servio serve` process on a backend, a hostile site it may
//! reach, a watch on `/healthz` and the process's memory.

#![allow(dead_code)] // Each module uses part of this.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

pub use crate::common::{Demo, start as start_site};

/// The secret key of every platform in this suite.
pub const KEY: &str = "2525252525252525252525252525252525252525252525252525252525252525";
/// The bearer token the hostile site takes.
pub const SITE_TOKEN: &str = "abuse-site-token-7f3a9c";
/// Every user's password.
pub const PASSWORD: &str = "abuse-password-4e8b1d";
/// How long `/healthz` may take while the platform is abused.
pub const HEALTH_BOUND: Duration = Duration::from_secs(1);

/// A database for a platform: the embedded one in a data directory, or PostgreSQL in a fresh
/// schema.
#[derive(Clone, Debug)]
pub enum Backend {
    Sqlite,
    Postgres(String),
}

impl Backend {
    /// Every backend this machine has: SQLite always, PostgreSQL when
    /// `SERVIO_TEST_DATABASE_URL` is set ([`servio_store::testing::postgres_url`]).
    pub async fn all() -> Vec<Backend> {
        let mut all = vec![Backend::Sqlite];
        all.extend(Backend::postgres().await);
        all
    }

    /// PostgreSQL in a fresh schema, when `SERVIO_TEST_DATABASE_URL` is set.
    pub async fn postgres() -> Option<Backend> {
        let base = servio_store::testing::postgres_url()?;
        Some(Backend::Postgres(servio_store::testing::fresh_schema_url(&base).await))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }
}

/// A running `servio serve` process, killed when dropped.
pub struct Platform {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub backend: Backend,
    pub data_dir: PathBuf,
    log: PathBuf,
    /// A client with no connection limits of its own.
    pub http: reqwest::Client,
}

impl Platform {
    /// Starts `servio serve` on `backend`, trusting the site's CA, with `args` added.
    pub async fn start(backend: &Backend, site: &Demo, args: &[&str]) -> Platform {
        Platform::start_with_env(backend, site, args, &[]).await
    }

    /// [`Platform::start`] with environment variables set for the process.
    pub async fn start_with_env(backend: &Backend, site: &Demo, args: &[&str], env: &[(&str, &str)]) -> Platform {
        let (mut command, data_dir, log) = serve_command(backend, site, args);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("the servio binary");
        let url = crate::common::served_url(&mut child).await;
        Platform { child, url, backend: backend.clone(), data_dir, log, http: reqwest::Client::new() }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("serve is running")
    }

    /// The process's resident memory now, in KiB.
    pub fn rss_kib(&self) -> u64 {
        status_kib(self.pid(), "VmRSS:")
    }

    /// The most resident memory the process has had, in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        status_kib(self.pid(), "VmHWM:")
    }

    /// Starts counting the peak ([`Platform::peak_rss_kib`]) again from the memory held now, so
    /// that one-time work before (a first check of a large manifest) is not counted as growth.
    pub fn reset_peak(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5").expect("resetting the peak resident memory");
    }

    /// What the process wrote to its standard error.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The bytes the process's data directory holds (the embedded database and its journal).
    pub fn data_bytes(&self) -> u64 {
        dir_bytes(&self.data_dir)
    }

    /// The bytes the platform's database holds now: the data directory on SQLite, the database's
    /// size on PostgreSQL (each platform has a schema of its own there, but only this test writes
    /// to it while it runs).
    pub async fn stored_bytes(&self) -> u64 {
        match &self.backend {
            Backend::Sqlite => self.data_bytes(),
            Backend::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.unwrap();
                let size: i64 = sqlx::query_scalar(
                    "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::BIGINT FROM pg_class c
                     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'",
                )
                .fetch_one(&pool)
                .await
                .unwrap();
                pool.close().await;
                size as u64
            }
        }
    }

    /// The store the process uses, opened beside it.
    pub async fn store(&self) -> Box<dyn servio_store::Store> {
        let url = match &self.backend {
            Backend::Sqlite => format!("sqlite:{}", self.data_dir.join("servio.db").display()),
            Backend::Postgres(url) => url.clone(),
        };
        servio_store::open(&url).await.unwrap()
    }

    /// Signs `email` up (UTC) and makes them an API token.
    pub async fn user(&self, email: &str) -> User {
        let (cookie, token) = crate::common::sign_up_with_token(&self.http, &self.url, email, PASSWORD).await;
        User { email: email.to_owned(), cookie, token }
    }

    /// Adds `site` to `user`'s vault; answers the vault entry's JSON.
    pub async fn add_site(&self, user: &User, site: &Demo) -> Value {
        let added = self
            .http
            .post(format!("{}/api/vault", self.url))
            .bearer_auth(&user.token)
            .json(&json!({ "url": site.origin, "token": SITE_TOKEN }))
            .send()
            .await
            .unwrap();
        let status = added.status();
        let body = added.text().await.unwrap();
        assert!(status.is_success(), "adding the site: {status} {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Sends `method path` as `user` (API token) with an optional JSON body; answers the
    /// status and the body (JSON, or the text as a JSON string).
    pub async fn send(&self, user: &User, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.url)).bearer_auth(&user.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// Starts watching `/healthz`.
    pub fn watch_health(&self) -> HealthWatch {
        HealthWatch::start(&self.url)
    }
}

/// A signed-up user.
pub struct User {
    pub email: String,
    /// The session cookie (`name=value`).
    pub cookie: String,
    /// An API token.
    pub token: String,
}

/// `/healthz` asked every 100 ms on a connection of its own, each answer timed.
pub struct HealthWatch {
    stop: Arc<AtomicBool>,
    worst: Arc<Mutex<(Duration, Option<String>)>>,
    task: tokio::task::JoinHandle<()>,
}

impl HealthWatch {
    pub fn start(url: &str) -> HealthWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let worst = Arc::new(Mutex::new((Duration::ZERO, None)));
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        let url = format!("{url}/healthz");
        let task = tokio::spawn({
            let (stop, worst) = (stop.clone(), worst.clone());
            async move {
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let answer = http.get(&url).send().await;
                    let took = started.elapsed();
                    let mut worst = worst.lock().await;
                    match answer {
                        Ok(r) if r.status().is_success() => worst.0 = worst.0.max(took),
                        Ok(r) => worst.1 = Some(format!("status {}", r.status())),
                        Err(e) => worst.1 = Some(e.to_string()),
                    }
                    drop(worst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        HealthWatch { stop, worst, task }
    }

    /// Stops watching and asserts that every answer was a success within [`HEALTH_BOUND`];
    /// answers the slowest.
    pub async fn assert_healthy(self, what: &str) -> Duration {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        let (worst, failure) = self.worst.lock().await.clone();
        assert!(failure.is_none(), "{what}: /healthz failed: {failure:?}");
        assert!(worst <= HEALTH_BOUND, "{what}: /healthz took {worst:?} (bound {HEALTH_BOUND:?})");
        worst
    }
}

/// Runs `work` while `/healthz` is watched; asserts it stayed answering and `work` finished
/// within `bound`. Answers what `work` answered.
pub async fn within<T>(platform: &Platform, what: &str, bound: Duration, work: impl Future<Output = T>) -> T {
    let watch = platform.watch_health();
    let started = Instant::now();
    let result = tokio::time::timeout(bound, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {bound:?}\n{}", platform.log_text()));
    let took = started.elapsed();
    let worst = watch.assert_healthy(what).await;
    eprintln!("{what}: {took:?}, /healthz at worst {worst:?}");
    result
}

/// `servio serve` on `backend` in a fresh directory beside `site`'s files, trusting its CA,
/// with `args` added; answers the command, the data directory and the log file.
fn serve_command(backend: &Backend, site: &Demo, args: &[&str]) -> (Command, PathBuf, PathBuf) {
    let dir = site.dir.path().join(format!("platform-{}-{}", backend.name(), unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("serve.log");
    let data_dir = dir.join("data");
    let mut command = Command::new(env!("CARGO_BIN_EXE_servio"));
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--allow-local", "--ca-cert", &site.ca_arg()])
        .arg("--data-dir")
        .arg(&data_dir)
        .args(args)
        .env("SERVIO_SECRET_KEY", KEY)
        // The suite's floods come from one address (127.0.0.1), and the health watch too: only
        // `connections.rs`, which connects from other loopback addresses, tries this bound.
        .env("SERVIO_MAX_CONNECTIONS_PER_ADDRESS", "4096")
        .env_remove("SERVIO_DATABASE_URL")
        // `SERVIO_ABUSE_LOG` (for example `info,servio_collector=debug`) to see more in the log.
        .env("SERVIO_LOG", std::env::var("SERVIO_ABUSE_LOG").unwrap_or_else(|_| "warn".into()))
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .kill_on_drop(true);
    if let Backend::Postgres(url) = backend {
        command.args(["--database-url", url]);
    }
    (command, data_dir, log)
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field} in /proc status"));
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().unwrap()
}

fn dir_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn unique() -> String {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A platform started with `--metrics-addr 127.0.0.1:0`, and where its metrics are served.
pub struct WithMetrics {
    pub platform: Platform,
    /// `http://127.0.0.1:PORT/metrics`.
    pub metrics_url: String,
}

/// A platform with metrics is a platform: its methods are the platform's.
impl std::ops::Deref for WithMetrics {
    type Target = Platform;

    fn deref(&self) -> &Platform {
        &self.platform
    }
}

impl WithMetrics {
    /// [`Platform::start`] with metrics on a port of their own; the rest of the process's
    /// standard output is read to its end (so that no later line meets a closed pipe).
    pub async fn start(backend: &Backend, site: &Demo, args: &[&str]) -> WithMetrics {
        use tokio::io::AsyncBufReadExt;
        let metrics_args: Vec<&str> =
            ["--metrics-addr", "127.0.0.1:0"].into_iter().chain(args.iter().copied()).collect();
        let (mut command, data_dir, log) = serve_command(backend, site, &metrics_args);
        let mut child = command.spawn().expect("the servio binary");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut url, mut metrics_url) = (None, None);
        while url.is_none() || metrics_url.is_none() {
            let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await.unwrap().unwrap();
            let line = line.unwrap_or_else(|| panic!("serve ended early:\n{}", std::fs::read_to_string(&log).unwrap()));
            let word =
                |prefix: &str| line.strip_prefix(prefix).and_then(|rest| rest.split(' ').next()).map(str::to_owned);
            url = url.or(word("Servio platform on "));
            metrics_url = metrics_url.or(word("Metrics on "));
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let platform = Platform {
            child,
            url: url.unwrap(),
            backend: backend.clone(),
            data_dir,
            log,
            http: reqwest::Client::new(),
        };
        WithMetrics { platform, metrics_url: metrics_url.unwrap() }
    }

    /// The text of `/metrics`.
    pub async fn metrics_text(&self) -> String {
        self.platform.http.get(&self.metrics_url).send().await.unwrap().text().await.unwrap()
    }

    /// The value of the counter (or gauge) `name` without labels, 0 when it is not there yet.
    pub async fn metric(&self, name: &str) -> f64 {
        let text = self.platform.http.get(&self.metrics_url).send().await.unwrap().text().await.unwrap();
        text.lines()
            .filter_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .find_map(|value| value.trim().parse().ok())
            .unwrap_or(0.0)
    }
}

impl Platform {
    /// Sends `GET path` as `user` with their session cookie (a page); answers the status and
    /// the body.
    pub async fn page(&self, user: &User, path: &str) -> (u16, String) {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .header(reqwest::header::COOKIE, &user.cookie)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }
}

/// `n` characters of `alphabet`, each drawn by a fixed xorshift: the same text every run, with
/// no repeating pattern (nothing for an automaton or a compressor to take in).
pub fn drawn(n: usize, alphabet: &[u8]) -> String {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(alphabet[(x % alphabet.len() as u64) as usize])
        })
        .collect()
}

/// A user made through `store` as `email` (sign-up is limited per address), with an `account`
/// API token, as the tests act as a user's owner: the stored user and the token.
pub async fn stored_user(store: &dyn servio_store::Store, email: &str) -> (servio_store::User, String) {
    use servio_platform::domain::accounts::secrets::{decoy_hash, new_token, token_hash};
    let now = servio_platform::now();
    let user = store.create_user(email, decoy_hash(), "UTC", now).await.unwrap();
    let token = new_token("servio_").unwrap();
    let grant = servio_store::Grant::all_sites(servio_store::Scope::Account);
    store.create_api_token(user.id, "abuse", &token_hash(&token), &grant, (now, 100)).await.unwrap();
    (user, token)
}
