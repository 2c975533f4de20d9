//! Fetching manifests from sites for the CLI: the client built from `--guard`, `--ca-cert`
//! and `--allow-http`, a runtime to drive it from synchronous code, and the words for a site
//! that cannot be reached, with the flag that fixes it where there is one.

use std::fmt;

use anyhow::{Context, anyhow};
use reqwest::Url;
use servio_client::{
    Client, ClientConfig, ClientError, Discovered, DiscoveryError, Policy, TlsProblem, TransportError, discover,
};

use crate::cli::FetchArgs;

/// The clients and the runtime they run on.
pub struct Fetcher {
    client: Client,
    runtime: tokio::runtime::Runtime,
}

impl Fetcher {
    /// Builds the client the arguments describe.
    pub fn new(args: &FetchArgs) -> anyhow::Result<Fetcher> {
        let policy: Policy = args.guard.parse().map_err(|e: String| anyhow!(e))?;
        let mut config = args
            .limits
            .apply(ClientConfig { allow_http: args.allow_http, ..ClientConfig::default() })
            .with_policy(policy);
        if let Some(path) = &args.ca_cert {
            config = config.with_ca_file(path)?;
        }
        // Tool calls have their own limits (interpretation §5), which the client applies.
        let client = Client::new(config)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        Ok(Fetcher { client, runtime })
    }

    /// The client for tool calls (it applies the call limits to them).
    pub fn tool_client(&self) -> &Client {
        &self.client
    }

    /// Runs a future to completion.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Discovers and fetches the manifest of the site `input`.
    pub fn discover(&self, input: &str) -> anyhow::Result<Discovered> {
        self.runtime.block_on(discover(&self.client, input)).map_err(|e| discovery_failure(input, &e))
    }
}

/// An error message with an optional `help:` line under it, as rustc and ruff print them.
/// `main` prints `error: ` and the message; the help line follows as it is.
#[derive(Debug)]
pub struct Hinted {
    message: String,
    help: Option<&'static str>,
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match self.help {
            Some(help) => write!(f, "\nhelp: {help}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Hinted {}

/// A failed discovery of `input`. Errors that name the URL they failed at are not prefixed
/// with the input, so that a URL appears once.
fn discovery_failure(input: &str, error: &DiscoveryError) -> anyhow::Error {
    let message = match error {
        DiscoveryError::Request { .. } | DiscoveryError::ServerError { .. } => error.to_string(),
        DiscoveryError::BadInput(_) | DiscoveryError::NotFound(_) => format!("{input}: {error}"),
    };
    anyhow::Error::new(Hinted { message, help: error.client_error().and_then(help_for) })
}

/// A failed request to `url` outside discovery (a tool call): "could not reach" the site when
/// nothing came back, the error alone otherwise.
pub fn request_failure(url: &Url, error: &ClientError) -> anyhow::Error {
    let message = match error.is_unreachable() {
        true => format!("could not reach {}: {error}", url.origin().ascii_serialization()),
        false => error.to_string(),
    };
    anyhow::Error::new(Hinted { message, help: help_for(error) })
}

/// The advice for the failures a flag of ours fixes. The client crate says what failed; only
/// the CLI knows its flags.
fn help_for(error: &ClientError) -> Option<&'static str> {
    if let ClientError::PlainHttp(_) = error {
        return Some("for a site on your own machine, add --allow-http (the platform never fetches http)");
    }
    match error.transport()? {
        TransportError::Tls(TlsProblem::UnknownIssuer) => {
            Some("if the site uses a private certificate authority, trust it with --ca-cert FILE")
        }
        TransportError::Tls(TlsProblem::NotTls) => {
            Some("for a local site on plain http, use its http:// URL with --allow-http")
        }
        _ => None,
    }
}

/// True when a source names a site rather than a file.
pub fn is_url(source: &str) -> bool {
    source.starts_with("https://") || source.starts_with("http://")
}
