//! Command-line arguments. The shapes of `check`, `brief resolve`, `brief extract` and
//! `address` are a fixed contract: external conformance checks run against them.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Servio: validate, test and serve Servio manifests.
///
/// Exit codes: 0 all good, 1 the input is invalid, 2 something could not be done.
#[derive(Debug, Parser)]
#[command(name = "servio", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate and lint manifests, reporting every problem with its line and column.
    ///
    /// Exits 0 when every manifest is valid and no brief is ignored; 1 when a manifest is
    /// invalid, or valid with its brief ignored (the platform accepts it, but collects none of
    /// its metrics), or has warnings with --deny-warnings; 2 when a source could not be read.
    /// Checking several manifests ends with a summary on standard error.
    Check(CheckArgs),
    /// Write a starting manifest that passes `servio check`: a name, a server URL, the
    /// authentication, one tool taking a date range and, if asked, one metric of a brief.
    ///
    /// Takes each part from its flag; on a terminal it asks for those not given, elsewhere it
    /// needs --name and --server-url and takes the defaults for the rest. It writes nothing
    /// over an existing file (unless --force) and nothing that would not pass the check:
    /// exit 1 with the check's report then, 2 when it could not ask or write.
    Init(InitArgs),
    /// Explain a rule: what it checks, why, an example and the fix; with no code, list them all.
    Explain(ExplainArgs),
    /// Work with a manifest's brief: the metrics a platform collects.
    Brief {
        #[command(subcommand)]
        command: BriefCommand,
    },
    /// Print the prefixed name under which a platform offers a site's tool to an AI.
    Address(AddressArgs),
    /// Call a site's tool and print its JSON result.
    ///
    /// The manifest is discovered first, and the arguments are checked against the tool's
    /// input_schema before anything is sent. Exit 1 when the arguments are invalid or the site
    /// answers with an error, 2 when the site cannot be reached.
    Call(CallArgs),
    /// Sign in to a site that uses OAuth 2.0, and store its tokens for `call` and `brief test`.
    ///
    /// Opens the site's consent page (the URL is printed too) and waits on a loopback address
    /// for the browser to come back. Tokens go to the per-user credentials file
    /// (~/.config/servio/credentials.json, or SERVIO_CREDENTIALS), readable only by you.
    Login(LoginArgs),
    /// Run everything on this machine: the platform on embedded SQLite, the demo site, a demo
    /// user with the site in their vault and eight weeks of its metrics collected; then open the
    /// printed dashboard URL.
    Demo(DemoArgs),
    /// Run the platform: accounts, the vault, the Directory, collection and the dashboard,
    /// web pages and a JSON API, and the AI gateway (MCP at /mcp).
    ///
    /// Stores everything in an embedded SQLite file in --data-dir, or in PostgreSQL with
    /// --database-url postgres://...; migrations are applied at start. Site credentials are
    /// sealed with the platform's key: SERVIO_SECRET_KEY, or secret.key in --data-dir. A key
    /// other than the one the database was first used with is refused at start (exit 2).
    Serve(ServeArgs),
    /// Collect metrics as one of many workers sharing the platform's database.
    ///
    /// Plans due collections into jobs and works them in a loop until SIGTERM or Ctrl-C (the
    /// batches in hand are finished first). Run as many as you like next to `servio serve`, on
    /// the same --database-url: each job is leased to one worker until an expiry, a job whose worker died or
    /// stalled is taken over when its lease expires, and a result is committed only by the
    /// worker holding the job's current lease, so every value is stored exactly once. Site
    /// credentials are opened with the platform's key: SERVIO_SECRET_KEY, or secret.key in
    /// --data-dir; a key other than the database's is refused at start (exit 2).
    Worker(WorkerArgs),
    /// Run the demo site over HTTPS: a forum and a shop with a brief, behind a bearer token.
    ///
    /// A local certificate authority is created in --tls-dir; trust DIR/ca.pem with --ca-cert.
    DemoSite(DemoSiteArgs),
    /// Speak MCP on standard input and output for a desktop AI client, offering the tools of
    /// your Servio vault.
    ///
    /// It relays the platform's MCP endpoint (URL/mcp): every message goes there with your API
    /// token and every answer and notice comes back, so it offers what /mcp offers, in the
    /// revision the client speaks. Each tool is named SITE_TOOL as on the platform, and the
    /// platform calls it with your stored credential for the site. Nothing but MCP is written
    /// to standard output. Configure it in the client as the command `servio mcp --url URL`
    /// with SERVIO_TOKEN in its environment.
    Mcp(McpArgs),
}

impl Command {
    /// How a long-running command logs; `None` for the others, which answer on standard output
    /// and standard error themselves.
    pub fn log_args(&self) -> Option<&LogArgs> {
        match self {
            Command::Serve(args) => Some(&args.process.log),
            Command::Worker(args) => Some(&args.process.log),
            Command::Demo(args) => Some(&args.log),
            Command::DemoSite(args) => Some(&args.log),
            Command::Mcp(args) => Some(&args.log),
            _ => None,
        }
    }
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the manifest.
    #[arg(default_value = "servio.json", value_name = "FILE")]
    pub path: PathBuf,
    /// The site's display name, shown in the vault and the Directory.
    #[arg(long)]
    pub name: Option<String>,
    /// Where tool calls go: POST URL/tools/TOOL_NAME. HTTPS.
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
    /// How the platform authenticates its calls [default: bearer].
    #[arg(long, value_enum)]
    pub auth: Option<InitAuth>,
    /// OAuth 2.0's authorization endpoint [default: ORIGIN/oauth/authorize, of --server-url].
    #[arg(long, value_name = "URL")]
    pub authorization_url: Option<String>,
    /// OAuth 2.0's token endpoint [default: ORIGIN/oauth/token, of --server-url].
    #[arg(long, value_name = "URL")]
    pub token_url: Option<String>,
    /// The one tool's name, a lowercase namespace, a dot and camelCase [default: site.getSummary].
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// What the tool does and what it returns, for the AI that reads it.
    #[arg(long, value_name = "TEXT")]
    pub tool_description: Option<String>,
    /// A metric of the brief, collected with the tool each period: its key, such as
    /// sales.revenue.daily (the key's hourly, daily, weekly or monthly sets its granularity).
    #[arg(long, value_name = "KEY")]
    pub metric: Option<String>,
    /// Where the metric's number is in the tool's answer, a dotted path [default: data.total].
    #[arg(long, value_name = "PATH")]
    pub value_path: Option<String>,
    /// The metric's display unit, such as USD or count.
    #[arg(long)]
    pub unit: Option<String>,
    /// Write over FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitAuth {
    /// A token the user pastes, sent as `Authorization: Bearer`.
    Bearer,
    /// OAuth 2.0 with PKCE.
    Oauth2,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The site: an origin or any URL on it.
    pub site: String,
    /// The tool's name as in the manifest.
    pub tool: String,
    /// An argument: key=value; the value is read as JSON when it is valid JSON (42, true,
    /// ["a"]), as a string otherwise. Repeatable; applied on top of --json.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// All arguments as one JSON object.
    #[arg(long, value_name = "OBJECT")]
    pub json: Option<String>,
    #[command(flatten)]
    pub access: SiteAccess,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Address of the platform.
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse_addr)]
    pub addr: SocketAddr,
    // Start again on the same --data-dir to keep the demo user, its site and its metrics; the
    // demo site's port and demo.json are kept there too.
    #[command(flatten)]
    pub platform: PlatformArgs,
    #[command(flatten)]
    pub log: LogArgs,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SERVIO_ADDR", default_value = "127.0.0.1:8080", value_parser = parse_addr, hide_env_values = true)]
    pub addr: SocketAddr,
    #[command(flatten)]
    pub platform: PlatformArgs,
    #[command(flatten)]
    pub process: ProcessArgs,
    /// Days the collection attempt log (and finished collection jobs) are kept; older entries
    /// are deleted a batch at a time, every minute. Values themselves are kept for good.
    #[arg(long, env = "SERVIO_KEEP_ATTEMPTS_DAYS", default_value_t = 90, value_name = "DAYS", value_parser = clap::value_parser!(u64).range(1..=36_500), hide_env_values = true)]
    pub keep_attempts_days: u64,
    /// Days the AI gateway's call log is kept.
    #[arg(long, env = "SERVIO_KEEP_CALLS_DAYS", default_value_t = 90, value_name = "DAYS", value_parser = clap::value_parser!(u64).range(1..=36_500), hide_env_values = true)]
    pub keep_calls_days: u64,
    /// Bytes the kept dashboards may take together (rendered JSON, up to 30 s each; about
    /// 140 KiB for 50 metrics, 1 MiB for 200); the least used go first. Hits and misses are in
    /// /metrics (servio_cache_requests_total).
    #[arg(long, env = "SERVIO_DASHBOARD_CACHE_BYTES", default_value_t = 64 << 20, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(0..=1 << 40), hide_env_values = true)]
    pub dashboard_cache_bytes: u64,
    /// Bytes the kept AI-gateway catalogues may take together (each user's tools, up to 2 s
    /// each; several MiB for 1,000 tools); the least used go first.
    #[arg(long, env = "SERVIO_CATALOGUE_CACHE_BYTES", default_value_t = 64 << 20, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(0..=1 << 40), hide_env_values = true)]
    pub catalogue_cache_bytes: u64,
    /// Bytes the kept MCP figure resources may take together (each metric's periods as served,
    /// up to 30 s each and 32 per user; a few KiB each); the least used go first.
    #[arg(long, env = "SERVIO_FIGURES_CACHE_BYTES", default_value_t = 16 << 20, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(0..=1 << 40), hide_env_values = true)]
    pub figures_cache_bytes: u64,
    /// Versions of each site's manifest kept: the newest N, plus every version a user still
    /// has approved or kept; older ones are deleted when a refresh stores a new one, and
    /// every minute.
    #[arg(long, env = "SERVIO_VERSIONS_PER_SITE", default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000), hide_env_values = true)]
    pub versions_per_site: u64,
    /// Seconds between two refreshes of one site's manifest on request (by any of its users);
    /// one sooner is answered 429 with Retry-After. The periodic refresh is not limited. 0
    /// turns the limit off.
    #[arg(long, env = "SERVIO_REFRESH_EVERY", default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=86_400), hide_env_values = true)]
    pub refresh_every: u64,
    /// Fetches of one site's manifest a minute, whoever asks and why: adding the site,
    /// verifying a claim on it, testing it at its URL, refreshing it on request or
    /// periodically. A request past it is answered 429 with Retry-After; the periodic refresh
    /// puts the site off until then. 0 turns the limit off.
    #[arg(long, env = "SERVIO_MANIFEST_FETCHES_PER_SITE", default_value_t = servio_platform::throttle::MANIFEST_FETCHES_PER_SITE, value_name = "COUNT", value_parser = clap::value_parser!(u32).range(0..=10_000), hide_env_values = true)]
    pub manifest_fetches_per_site: u32,
    /// Seconds between two looks for sites due for a manifest refresh (600). Hidden: for tests,
    /// which cannot wait ten minutes to see the periodic refresh at work.
    #[arg(long, hide = true, default_value_t = 600, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub refresh_tick: u64,
    /// Seconds from a site's good refresh to its next periodic one (a day), less up to a tenth.
    /// Hidden: for tests, which cannot wait a day; failed refreshes back off as always (an
    /// hour, doubling to a day).
    #[arg(long, hide = true, default_value_t = 86_400, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400 * 365))]
    pub refresh_interval: u64,
    #[command(flatten)]
    pub quotas: QuotaArgs,
    #[command(flatten)]
    pub calls: InFlightArgs,
    #[command(flatten)]
    pub connections: ConnectionArgs,
}

/// How many connections `servio serve` keeps open and how long a client may take to send.
#[derive(Debug, Args)]
pub struct ConnectionArgs {
    /// Connections open at once, from all clients; one more is answered 503 and closed. With
    /// 1,024 file descriptors kept for the database and calls to sites, it must fit the
    /// process's open-files limit (raised to its hard limit at start), or serve exits 2.
    #[arg(long, env = "SERVIO_MAX_CONNECTIONS", default_value_t = 4096, value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..=u64::from(u32::MAX)), hide_env_values = true)]
    pub max_connections: u64,
    /// Connections open at once from one client address (an IPv6 /64 counts as one); one more
    /// is answered 429 and closed. Behind a load balancer every client has its address: set it
    /// to --max-connections there.
    #[arg(long, env = "SERVIO_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 64, value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..=1_000_000), hide_env_values = true)]
    pub max_connections_per_address: u64,
    /// Seconds a client may take to send a request's head, counted from when the connection
    /// waits for one (so also how long an idle kept-alive connection stays open).
    #[arg(long, env = "SERVIO_HEADER_TIMEOUT", default_value_t = 20, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3_600), hide_env_values = true)]
    pub header_timeout: u64,
    /// Seconds a client may take to send a request's body (2 MiB at most).
    #[arg(long, env = "SERVIO_BODY_TIMEOUT", default_value_t = 30, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3_600), hide_env_values = true)]
    pub body_timeout: u64,
}

impl ConnectionArgs {
    /// The listener's limits.
    pub fn limits(&self) -> servio_platform::connections::ConnectionLimits {
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        servio_platform::connections::ConnectionLimits {
            total: count(self.max_connections),
            per_address: count(self.max_connections_per_address),
            header_timeout: std::time::Duration::from_secs(self.header_timeout),
            body_timeout: std::time::Duration::from_secs(self.body_timeout),
        }
    }
}

/// What one user may hold or ask for at once (`servio serve`).
#[derive(Debug, Args)]
pub struct QuotaArgs {
    /// Periods one backfill may ask for, each metric's periods counted (400 days of an hourly
    /// metric is 9,600); a larger range is refused with 400, saying how many it holds.
    #[arg(long, env = "SERVIO_BACKFILL_MAX_PERIODS", default_value_t = 10_000, value_name = "PERIODS", value_parser = clap::value_parser!(u64).range(1..), hide_env_values = true)]
    pub backfill_max_periods: u64,
    /// Backfill periods one user may have queued and not yet collected; a backfill that would
    /// pass it is refused with 409 until those are collected. Users' backfills take turns, after
    /// every scheduled period.
    #[arg(long, env = "SERVIO_BACKFILL_MAX_PENDING", default_value_t = 20_000, value_name = "PERIODS", value_parser = clap::value_parser!(u64).range(1..), hide_env_values = true)]
    pub backfill_max_pending: u64,
    /// Sites in one user's vault; one more is refused with 409 (remove one first).
    #[arg(long, env = "SERVIO_MAX_SITES", default_value_t = 100, value_name = "COUNT", value_parser = clap::value_parser!(i64).range(1..), hide_env_values = true)]
    pub max_sites: i64,
    /// API tokens per user; one more is refused with 409 (revoke one first).
    #[arg(long, env = "SERVIO_MAX_API_TOKENS", default_value_t = 100, value_name = "COUNT", value_parser = clap::value_parser!(i64).range(1..), hide_env_values = true)]
    pub max_api_tokens: i64,
    /// Directory claims per user not yet verified; one more is refused with 409 (verify or
    /// withdraw one first).
    #[arg(long, env = "SERVIO_MAX_PENDING_CLAIMS", default_value_t = 50, value_name = "COUNT", value_parser = clap::value_parser!(i64).range(1..), hide_env_values = true)]
    pub max_pending_claims: i64,
    /// MCP sessions per user; opening one more ends the user's least recently used session. A
    /// session's initialize request may carry 64 KiB at most.
    #[arg(long, env = "SERVIO_MAX_MCP_SESSIONS", default_value_t = 100, value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..=100_000), hide_env_values = true)]
    pub max_mcp_sessions: u64,
    /// Browser sessions per user; signing in once more ends the user's least recently used one.
    #[arg(long, env = "SERVIO_MAX_BROWSER_SESSIONS", default_value_t = 100, value_name = "COUNT", value_parser = clap::value_parser!(i64).range(1..), hide_env_values = true)]
    pub max_browser_sessions: i64,
}

/// How many calls to sites a process that collects (`serve`, `worker`) makes at once.
#[derive(Debug, Args)]
pub struct InFlightArgs {
    /// Calls to sites in flight at once, for everything this process collects: scheduled
    /// periods, backfills and collect-now alike (a site's brief of many metrics included).
    /// Results are committed in groups while calls go on.
    #[arg(long, env = "SERVIO_IN_FLIGHT", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096), hide_env_values = true)]
    pub in_flight: u64,
}

impl InFlightArgs {
    /// The calls in flight, as the collector takes them.
    pub fn in_flight(&self) -> usize {
        usize::try_from(self.in_flight).unwrap_or(servio_collector::Collector::IN_FLIGHT)
    }
}

/// What `serve` and `worker` share as long-running processes: logs, metrics, how they stop.
#[derive(Debug, Args)]
pub struct ProcessArgs {
    #[command(flatten)]
    pub log: LogArgs,
    /// Serve /metrics (Prometheus text format) on this address, such as a port that only the
    /// monitoring network reaches. This is the only place /metrics is served: the main
    /// listener (--addr) does not answer it, since the metrics tell outcomes (sign-ins,
    /// gateway calls) that anyone reaching the platform could otherwise read.
    #[arg(long, env = "SERVIO_METRICS_ADDR", value_parser = parse_addr, hide_env_values = true)]
    pub metrics_addr: Option<SocketAddr>,
    /// On SIGTERM or Ctrl-C, how long requests and calls in flight may take to finish, in
    /// seconds; what is still running then is cut off (its jobs handed back for another
    /// process to collect). The process then exits 0.
    #[arg(long, env = "SERVIO_SHUTDOWN_TIMEOUT", default_value_t = 10, value_name = "SECONDS", hide_env_values = true)]
    pub shutdown_timeout: u64,
}

/// What `serve`, `worker` and `demo` share: where the platform's data lives and how it reaches
/// sites. A worker takes the same values as the `servio serve` whose database it works on.
#[derive(Debug, Args)]
pub struct PlatformArgs {
    /// Database: postgres://USER@HOST/DB, or sqlite:PATH (default: servio.db in --data-dir).
    #[arg(long, env = "SERVIO_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Directory for the embedded database and the secret key, secret.key (default:
    /// servio-data; a temporary one for `demo`). SERVIO_SECRET_KEY (64 hex digits) replaces the
    /// key file.
    #[arg(long, env = "SERVIO_DATA_DIR", value_name = "DIR", hide_env_values = true)]
    pub data_dir: Option<PathBuf>,
    /// Trust the certificate authorities in this PEM file too when reaching sites.
    #[arg(long, env = "SERVIO_CA_CERT", value_name = "PEM", hide_env_values = true)]
    pub ca_cert: Option<PathBuf>,
    /// Let the platform reach loopback and private addresses (development only: the address
    /// guard refuses them otherwise; `demo` always may, its site is local).
    #[arg(long, env = "SERVIO_ALLOW_LOCAL", hide_env_values = true)]
    pub allow_local: bool,
    /// Where browsers reach the platform, for OAuth callbacks (default: http://ADDR; for a
    /// worker, http://127.0.0.1:8080).
    #[arg(long, env = "SERVIO_PUBLIC_URL", hide_env_values = true)]
    pub public_url: Option<String>,
    /// The OAuth client id the platform uses with sites ("Connect").
    #[arg(long, env = "SERVIO_OAUTH_CLIENT_ID", default_value = "servio-platform", hide_env_values = true)]
    pub oauth_client_id: String,
    /// A client id for one site: ORIGIN=CLIENT_ID. Repeatable.
    #[arg(long = "oauth-client", value_name = "ORIGIN=CLIENT_ID")]
    pub oauth_client: Vec<String>,
    #[command(flatten)]
    pub limits: CallLimitArgs,
    #[command(flatten)]
    pub checks: CheckPoolArgs,
}

/// How the platform checks manifests and validates tool arguments: off the request threads, a
/// bounded number at once, each text's report kept.
#[derive(Debug, Clone, Args)]
pub struct CheckPoolArgs {
    /// Manifest checks and tool-argument validations run at once, each on a thread of its own
    /// (default: the number of cores). A large or hostile manifest takes seconds of CPU to
    /// check; requests and /healthz never wait behind it.
    #[arg(long, env = "SERVIO_CHECK_CONCURRENCY", hide_env_values = true, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub check_concurrency: Option<u64>,
    /// How long a request waits for a free check, in seconds; then it is answered 503 with
    /// Retry-After (background collection waits its turn instead).
    #[arg(long, env = "SERVIO_CHECK_WAIT", hide_env_values = true, default_value_t = 5, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub check_wait: u64,
    /// Bytes the reports of checked manifests may take together in memory (estimated: eight
    /// times the text plus 256 bytes a diagnostic; 256 MiB by default); each text is checked
    /// once while it is kept, the least used go first.
    #[arg(long, env = "SERVIO_CHECK_CACHE_BYTES", hide_env_values = true, default_value_t = 256 << 20, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(1 << 20..=1 << 40))]
    pub check_cache_bytes: u64,
}

impl CheckPoolArgs {
    /// The collector's settings for these flags.
    pub fn config(&self) -> servio_core::CheckConfig {
        let default = servio_core::CheckConfig::default();
        servio_core::CheckConfig {
            concurrency: self.check_concurrency.map_or(default.concurrency, |n| usize::try_from(n).unwrap_or(1)),
            wait: std::time::Duration::from_secs(self.check_wait),
            cache_bytes: self.check_cache_bytes,
            budget: default.budget,
        }
    }
}

/// How a long-running command logs to standard error.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log lines as text for people, or as JSON objects (one per line) for a log collector.
    /// Which events: SERVIO_LOG, e.g. `debug` or `info,servio_collector=debug`.
    #[arg(long, env = "SERVIO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, hide_env_values = true)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The platform, such as https://servio.example or http://127.0.0.1:8080.
    #[arg(long, env = "SERVIO_URL", hide_env_values = true)]
    pub url: String,
    /// One of your personal API tokens (create one on the platform's "AI clients" page, /ai).
    /// Required, here or in the environment.
    #[arg(long, env = "SERVIO_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Trust the certificate authorities in this PEM file too when reaching the platform.
    #[arg(long, env = "SERVIO_CA_CERT", value_name = "PEM", hide_env_values = true)]
    pub ca_cert: Option<PathBuf>,
    /// Ignored, kept so that configurations written for earlier versions still start: changes
    /// now come from the platform as it makes them, with no polling.
    #[arg(long, hide = true, value_name = "SECONDS")]
    pub poll: Option<u64>,
    #[command(flatten)]
    pub log: LogArgs,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub platform: PlatformArgs,
    #[command(flatten)]
    pub process: ProcessArgs,
    /// This worker's id, recorded as the owner of the jobs it holds (default: worker-PID).
    #[arg(long, env = "SERVIO_WORKER_ID", hide_env_values = true)]
    pub id: Option<String>,
    /// How long a lease on a job holds, in seconds; past it another worker may take the job
    /// over. Longer than a batch takes (calls time out after --call-timeout, 30 s).
    #[arg(long, default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub lease: u64,
    /// The most jobs leased at once (one lease on the database). A worker holds at most
    /// --in-flight + --batch-size jobs leased and not done, so another user's due job waits at
    /// most a batch behind a leased backlog; a worker that stops or dies holds no more.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub batch_size: u64,
    #[command(flatten)]
    pub calls: InFlightArgs,
    /// How often to plan due collections into jobs, in seconds (planning is idempotent).
    #[arg(long, default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub plan_every: u64,
    /// How long to wait when no job is due, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MILLIS")]
    pub idle: u64,
    /// Plan once, work until no job is due, then exit (for a run from cron, or a benchmark).
    #[arg(long)]
    pub drain: bool,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The site: an origin or any URL on it.
    pub site: String,
    /// The OAuth client id to sign in as (the manifest has none).
    #[arg(long, env = "SERVIO_CLIENT_ID", default_value = "servio-cli", hide_env_values = true)]
    pub client_id: String,
    /// Print the URL without trying to open a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// How long to wait for the browser to come back, in seconds.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub timeout: u64,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

#[derive(Debug, Args)]
pub struct DemoSiteArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8443", value_parser = parse_addr)]
    pub addr: SocketAddr,
    /// Directory for the local CA and certificate; ca.pem is written there.
    #[arg(long, value_name = "DIR")]
    pub tls_dir: PathBuf,
    /// Authentication the manifest declares: a fixed bearer token, or this site's own OAuth 2.0
    /// server (authorization code with PKCE; sign in with `servio login`).
    #[arg(long, value_enum, default_value_t = AuthKind::Bearer)]
    pub auth: AuthKind,
    /// With --auth oauth2: lifetime of access tokens, in seconds.
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub access_ttl: u64,
    /// The bearer token to accept (default: a random one, printed at start).
    #[arg(long, env = "SERVIO_DEMO_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Make a path misbehave: PATH=slow:MILLIS, PATH=500, PATH=huge:BYTES, PATH=wrong-type,
    /// PATH=html, PATH=redirect-loop or PATH=redirect:URL (a 307 to URL). Repeatable.
    #[arg(long = "misbehave", value_name = "PATH=MODE")]
    pub misbehave: Vec<String>,
    #[command(flatten)]
    pub log: LogArgs,
}

/// How the demo site's manifest says to authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthKind {
    /// A fixed bearer token, printed at start.
    Bearer,
    /// The site's own OAuth 2.0 server (authorization code with PKCE).
    #[value(name = "oauth2")]
    Oauth2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Diagnostics for people, like rustc: location, source line, caret, help.
    Human,
    /// One JSON report per manifest, one per line.
    Json,
    /// SARIF 2.1.0, for code review tools.
    Sarif,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Treat warnings as errors for the exit code.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Print only problems: leave out manifests without any, and the summary lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Turn off a lint (a W code such as W004, or its name such as property-description).
    #[arg(long = "allow", value_name = "CODE")]
    pub allow: Vec<String>,
    /// Apply the fixes that are mechanical and write each file that changed: a near miss of a
    /// member name renamed (`inputSchema` to `input_schema`), a JSONPath valuePath rewritten
    /// (`$.a[0].b` to `a.0.b`), a granularity word (`daily` to `day`), a trailing comma
    /// removed. Says what it changed, then reports what remains; the exit code is the fixed
    /// file's. Files only: not standard input or a site.
    #[arg(long)]
    pub fix: bool,
    /// The docs' base URL, under which each rule has its page (BASE/rules/E020): SARIF's
    /// helpUri links there. A platform serves the pages under its own public URL.
    #[arg(long, env = "SERVIO_DOCS_URL", value_name = "URL", default_value = servio_manifest::rules::DOCS_BASE)]
    pub docs_url: String,
    /// Worker threads for many files (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Manifest files, directories (every *.json under them), - for standard input, or a
    /// site URL (https://example.com), whose manifest is discovered and fetched.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// The limits of a tool call (interpretation §5). The defaults are the platform's, so that
/// `servio call` and `servio brief test` judge a site as the platform does.
#[derive(Debug, Clone, Args)]
pub struct CallLimitArgs {
    /// Longest a tool call may take, in seconds.
    #[arg(long, env = "SERVIO_CALL_TIMEOUT", hide_env_values = true, default_value_t = 30, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub call_timeout: u64,
    /// Largest tool-call answer accepted, in MiB.
    #[arg(long, env = "SERVIO_CALL_MAX_BODY", hide_env_values = true, default_value_t = 4, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub call_max_body: u64,
}

impl CallLimitArgs {
    /// `config` with these limits for tool calls.
    pub fn apply(&self, config: servio_client::ClientConfig) -> servio_client::ClientConfig {
        servio_client::ClientConfig {
            call_timeout: std::time::Duration::from_secs(self.call_timeout),
            call_max_body: usize::try_from(self.call_max_body).unwrap_or(usize::MAX / (1024 * 1024)) * 1024 * 1024,
            ..config
        }
    }
}

/// How to reach a site and call its tools.
#[derive(Debug, Clone, Args)]
pub struct SiteAccess {
    /// Bearer token for the site (else the one `servio login` stored for it).
    #[arg(long, env = "SERVIO_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// How to fetch from sites.
#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// Which addresses may be contacted: `public` refuses loopback, private, link-local and
    /// other non-global addresses, as the platform does; `any` allows them, for testing a site
    /// on your own machine.
    #[arg(long, value_name = "POLICY", default_value = "any", value_parser = ["public", "any"])]
    pub guard: String,
    /// Trust the certificate authorities in this PEM file too (for a local or test site).
    #[arg(long, value_name = "PEM", env = "SERVIO_CA_CERT", hide_env_values = true)]
    pub ca_cert: Option<PathBuf>,
    /// Allow plain http:// URLs (local development only; the platform never does).
    #[arg(long)]
    pub allow_http: bool,
    #[command(flatten)]
    pub limits: CallLimitArgs,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A rule code such as E020, or a rule name such as https-url; without one, every rule
    /// is listed.
    pub code: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BriefCommand {
    /// Resolve each metric's period and arguments for a date in a time zone, as JSON.
    ///
    /// Exits 1 when the manifest is invalid or its brief is absent or ignored (reasons on
    /// stderr), 2 for bad input such as an unknown zone.
    Resolve(ResolveArgs),
    /// Read a metric's value from a tool response, as a platform would store it.
    ///
    /// Prints {"value": N, "raw": ...} and exits 0, or {"dropped": "reason"} and exits 1.
    /// A malformed value path exits 2.
    Extract(ExtractArgs),
    /// Dry-run a site's brief: resolve each metric's period, call the tool, read the value and
    /// say what a platform would do: store it, and what; drop it, and why; record a failure;
    /// or, for a 5xx or 429, retry it until the period's deadline (24 hours after it is due),
    /// shown in the zone. Metrics with the same tool and arguments are one request.
    ///
    /// Nothing is stored anywhere. Exit 0 when every metric would be stored, 1 when any would
    /// not be (or the brief is absent or ignored), 2 when the site cannot be reached.
    Test(BriefTestArgs),
}

#[derive(Debug, Args)]
pub struct BriefTestArgs {
    /// The site: an origin or any URL on it.
    pub site: String,
    /// The local date to collect, YYYY-MM-DD (default: yesterday in the zone).
    #[arg(long)]
    pub date: Option<String>,
    /// The IANA time zone to collect in (default: this machine's zone).
    #[arg(long)]
    pub timezone: Option<String>,
    /// For hourly metrics: the local hour, 0 to 23.
    #[arg(long, default_value_t = 0)]
    pub hour: u8,
    /// Only this metric key.
    #[arg(long)]
    pub metric: Option<String>,
    #[command(flatten)]
    pub access: SiteAccess,
}

#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// The manifest file.
    pub file: PathBuf,
    /// The local date to collect, YYYY-MM-DD.
    #[arg(long)]
    pub date: String,
    /// The user's IANA time zone, such as Pacific/Auckland.
    #[arg(long)]
    pub timezone: String,
    /// For hourly metrics: the local hour, 0 to 23 (a repeated hour means its first occurrence).
    #[arg(long, default_value_t = 0)]
    pub hour: u8,
    /// Only this metric key.
    #[arg(long)]
    pub metric: Option<String>,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Dotted path to the value, such as data.totals.revenue.
    #[arg(long)]
    pub value_path: String,
    /// The tool response, as a file or - for standard input.
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct AddressArgs {
    /// The site: an origin, any URL on it, or host[:port].
    pub site: String,
    /// The tool's name as in the manifest.
    pub tool: String,
}

/// An address to listen on: `IP:PORT`, or `HOST:PORT` with a name such as `localhost`, looked
/// up once (an IPv4 address is preferred, as the default 127.0.0.1 is).
fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    if !text.contains(':') {
        return Err(format!("{text:?} has no port: write HOST:PORT, such as 127.0.0.1:8080"));
    }
    let found: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("{text:?} is not an address this machine can listen on: {e}"))?
        .collect();
    found.iter().find(|a| a.is_ipv4()).or(found.first()).copied().ok_or_else(|| format!("{text:?} names no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_take_names_and_numbers() {
        assert_eq!(parse_addr("127.0.0.1:8080"), Ok("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(parse_addr("[::1]:8080"), Ok("[::1]:8080".parse().unwrap()));
        assert_eq!(parse_addr("localhost:8080"), Ok("127.0.0.1:8080".parse().unwrap()));
        assert!(parse_addr("localhost").unwrap_err().contains("no port"));
        assert!(parse_addr("localhost:99999").is_err());
    }
}
