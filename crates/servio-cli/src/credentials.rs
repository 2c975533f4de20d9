//! The per-user credentials file: OAuth tokens per site origin, readable only by its owner.
//!
//! Location: `$SERVIO_CREDENTIALS`, else `$XDG_CONFIG_HOME/servio/credentials.json`, else
//! `~/.config/servio/credentials.json`. Written to a temporary file with mode 0600 and renamed
//! over the old one, so a crash never leaves half a file and no other user can read it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};
use servio_client::oauth::{OAuthSite, Tokens};

/// What is stored for one site.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored {
    /// The client id the tokens were issued to.
    pub client_id: String,
    /// The authorization endpoint.
    pub authorization_url: String,
    /// The token endpoint, for renewals.
    pub token_url: String,
    /// The tokens, as members of the site's object beside the endpoints (`access_token`,
    /// `refresh_token`, `expires_at`), as the file has always kept them.
    #[serde(flatten)]
    pub tokens: Tokens,
}

impl Stored {
    /// The OAuth endpoints, for a renewal (the redirect URI is not used there).
    pub fn oauth_site(&self) -> anyhow::Result<OAuthSite> {
        Ok(OAuthSite {
            authorization_url: self.authorization_url.parse()?,
            token_url: self.token_url.parse()?,
            scopes: Vec::new(),
            client_id: self.client_id.clone(),
            redirect_uri: "http://127.0.0.1/callback".parse()?,
        })
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    sites: BTreeMap<String, Stored>,
}

/// The credentials file's path.
pub fn path() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("SERVIO_CREDENTIALS") {
        return Ok(PathBuf::from(path));
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").ok_or_else(|| anyhow!("HOME is not set"))?).join(".config"),
    };
    Ok(config.join("servio").join("credentials.json"))
}

fn load_file() -> anyhow::Result<File> {
    let path = path()?;
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The stored credentials of the site at `origin`.
pub fn load(origin: &str) -> anyhow::Result<Option<Stored>> {
    Ok(load_file()?.sites.remove(origin))
}

/// Stores credentials for `origin`, keeping the other sites'.
pub fn save(origin: &str, stored: Stored) -> anyhow::Result<PathBuf> {
    let mut file = load_file()?;
    file.sites.insert(origin.to_owned(), stored);
    let path = path()?;
    let dir = path.parent().ok_or_else(|| anyhow!("{} has no directory", path.display()))?;
    create_private_dir(dir)?;
    let temporary = path.with_extension("json.tmp");
    write_private(&temporary, &serde_json::to_vec_pretty(&file)?)?;
    std::fs::rename(&temporary, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

#[cfg(unix)]
fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Writes `bytes` to `path` (replacing it), readable by its owner only.
#[cfg(unix)]
pub(crate) fn write_private(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).with_context(|| format!("writing {}", path.display()))
}

#[cfg(not(unix))]
pub(crate) fn write_private(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}
