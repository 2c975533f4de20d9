//! What `serve`, `worker` and `demo` build the same way from [`PlatformArgs`]: the database URL,
//! the sealing key, the client that reaches sites, the OAuth settings.

use std::path::{Path, PathBuf};

use anyhow::Context;
use servio_client::{Client, ClientConfig, Policy};
use servio_core::credentials::OAuthConfig;
use servio_core::secrets::Secrets;

use crate::cli::PlatformArgs;

/// The data directory of `serve` and `worker` when none is given.
const DEFAULT_DATA_DIR: &str = "servio-data";

/// Whether a missing key file may be created (`serve`, `demo`) or must exist (a worker: a key
/// of its own would open no credential).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFile {
    Create,
    Existing,
}

impl PlatformArgs {
    /// `--data-dir`, or the default of `serve` and `worker`.
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
    }

    /// `--database-url`, or the embedded database in `data_dir` (created when missing).
    pub fn database_url(&self, data_dir: &Path) -> anyhow::Result<String> {
        if let Some(url) = &self.database_url {
            return Ok(url.clone());
        }
        std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
        Ok(format!("sqlite:{}", data_dir.join("servio.db").display()))
    }

    /// The key that seals credentials: SERVIO_SECRET_KEY, or `secret.key` in `data_dir`.
    pub fn secrets(&self, data_dir: &Path, key_file: KeyFile) -> anyhow::Result<Secrets> {
        if let Ok(hex) = std::env::var("SERVIO_SECRET_KEY") {
            return Secrets::from_hex(&hex)
                .map_err(|e| anyhow::anyhow!("SERVIO_SECRET_KEY: {}", servio_client::error_chain(&e)));
        }
        let path = data_dir.join("secret.key");
        if key_file == KeyFile::Existing && !path.exists() {
            anyhow::bail!(
                "no secret key: set SERVIO_SECRET_KEY, or --data-dir to the directory where `servio serve` keeps secret.key ({} does not exist)",
                path.display()
            );
        }
        std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
        Secrets::load_or_create(&path).map_err(|e| anyhow::anyhow!(servio_client::error_chain(&e)))
    }

    /// The client that reaches sites: the public address guard unless `--allow-local` (or
    /// `always_local`, the demo's), the call limits, `--ca-cert` and `extra_ca_pem`.
    pub fn client(&self, always_local: bool, extra_ca_pem: Option<&str>) -> anyhow::Result<Client> {
        let policy = if self.allow_local || always_local { Policy::Any } else { Policy::Public };
        let mut config = self.limits.apply(ClientConfig::default()).with_policy(policy);
        let mut roots = extra_ca_pem.map(|pem| pem.as_bytes().to_vec()).unwrap_or_default();
        if let Some(path) = &self.ca_cert {
            roots.extend(std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?);
        }
        if !roots.is_empty() {
            config.extra_roots_pem = Some(roots);
        }
        Ok(Client::new(config)?)
    }

    /// The OAuth settings, with `default_public_url` unless `--public-url` is given.
    pub fn oauth(&self, default_public_url: String) -> anyhow::Result<OAuthConfig> {
        Ok(OAuthConfig {
            public_url: self.public_url.clone().unwrap_or(default_public_url),
            client_id: self.oauth_client_id.clone(),
            per_site: per_site_clients(&self.oauth_client)?,
        })
    }
}

/// Refuses `secrets` when they are not the key `store`'s credentials were sealed with
/// (`servio_core::key_check`), saying what to do; keeps the key's check value in a
/// database that has none.
pub async fn check_key(store: &dyn servio_store::Store, secrets: &Secrets) -> anyhow::Result<()> {
    match servio_core::key_check::check_key(store, secrets, servio_core::now()).await {
        Ok(_) => Ok(()),
        Err(error @ servio_core::Error::KeyMismatch) => Err(anyhow::anyhow!(
            "{error}\nhelp: start it with the key this database was used with before (SERVIO_SECRET_KEY, or \
             secret.key in the --data-dir of the process that first used it), or give it a database of its own \
             (--database-url)"
        )),
        Err(error) => {
            Err(anyhow::anyhow!("checking the secret key against the database: {}", servio_client::error_chain(&error)))
        }
    }
}

/// The name of the database's backend, for the line a command prints when it starts.
pub fn backend(url: &str) -> &'static str {
    if url.starts_with("sqlite:") { "SQLite" } else { "PostgreSQL" }
}

/// The `--oauth-client ORIGIN=CLIENT_ID` pairs, by origin.
fn per_site_clients(pairs: &[String]) -> anyhow::Result<std::collections::HashMap<String, String>> {
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
