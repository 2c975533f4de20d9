//! Fetching manifests from sites for the CLI: the client built from `--guard`, `--ca-cert`
//! and `--allow-http`, and a runtime to drive it from synchronous code.

use anyhow::{Context, anyhow};
use servio_client::{Client, ClientConfig, Discovered, Policy, discover};

use crate::cli::FetchArgs;

/// The clients and the runtime they run on.
pub struct Fetcher {
    client: Client,
    tools: Client,
    runtime: tokio::runtime::Runtime,
}

impl Fetcher {
    /// Builds the client the arguments describe.
    pub fn new(args: &FetchArgs) -> anyhow::Result<Fetcher> {
        let policy: Policy = args.guard.parse().map_err(|e: String| anyhow!(e))?;
        let mut config = ClientConfig { allow_http: args.allow_http, ..ClientConfig::default() }.with_policy(policy);
        if let Some(path) = &args.ca_cert {
            config = config.with_ca_file(path)?;
        }
        let client = Client::new(config.clone())?;
        // Tool calls have their own limits (interpretation §5): 30 s and 4 MiB.
        let tools = Client::new(ClientConfig {
            timeout: std::time::Duration::from_secs(30),
            max_body: 4 * 1024 * 1024,
            ..config
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        Ok(Fetcher { client, tools, runtime })
    }

    /// The client for tool calls.
    pub fn tool_client(&self) -> &Client {
        &self.tools
    }

    /// Runs a future to completion.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Discovers and fetches the manifest of the site `input`.
    pub fn discover(&self, input: &str) -> anyhow::Result<Discovered> {
        self.runtime.block_on(discover(&self.client, input)).map_err(|e| anyhow!("{input}: {e}"))
    }
}

/// True when a source names a site rather than a file.
pub fn is_url(source: &str) -> bool {
    source.starts_with("https://") || source.starts_with("http://")
}
