//! Which token a request to a site carries: `--token`/`SERVIO_TOKEN`, else the stored OAuth
//! tokens, renewed when they expire within a minute, and once more after a `401`.

use std::time::Duration;

use servio_client::oauth;

use crate::credentials::{self, Stored};
use crate::fetch::Fetcher;

/// A token and where it came from.
pub enum SiteToken {
    /// Given on the command line or in the environment.
    Explicit(String),
    /// From the credentials file.
    Stored {
        /// The site's origin, the key in the file.
        origin: String,
        /// The record.
        stored: Stored,
    },
    /// Nothing: the request goes without `Authorization`.
    None,
}

impl SiteToken {
    /// The bearer token to send.
    pub fn token(&self) -> Option<&str> {
        match self {
            SiteToken::Explicit(token) => Some(token),
            SiteToken::Stored { stored, .. } => Some(&stored.tokens.access_token),
            SiteToken::None => None,
        }
    }

    /// Finds the credential for `origin`, renewing stored tokens that expire soon.
    pub fn find(fetcher: &Fetcher, origin: &str, explicit: Option<&str>) -> anyhow::Result<SiteToken> {
        if let Some(token) = explicit {
            return Ok(SiteToken::Explicit(token.to_owned()));
        }
        let Some(stored) = credentials::load(origin)? else { return Ok(SiteToken::None) };
        let mut credential = SiteToken::Stored { origin: origin.to_owned(), stored };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        if let SiteToken::Stored { stored, .. } = &credential
            && stored.tokens.expires_soon(now, Duration::from_secs(60))
            && stored.tokens.refresh_token.is_some()
        {
            credential.renew(fetcher)?;
        }
        Ok(credential)
    }

    /// Renews stored tokens (after a `401`, say). False when there is nothing to renew.
    pub fn renew(&mut self, fetcher: &Fetcher) -> anyhow::Result<bool> {
        let SiteToken::Stored { origin, stored } = self else { return Ok(false) };
        let Some(refresh_token) = stored.tokens.refresh_token.clone() else { return Ok(false) };
        let site = stored.oauth_site()?;
        let tokens = fetcher.block_on(oauth::renew(fetcher.tool_client(), &site, &refresh_token))?;
        stored.tokens = tokens;
        credentials::save(origin, stored.clone())?;
        Ok(true)
    }
}
