//! The core's one error type: what failed about a credential, the sealing key or the store, with
//! the failure it came from kept as its source, and a [`kind`](Error::kind) for callers that
//! answer differently per kind.

use std::path::PathBuf;

use servio_store::StoreError;

/// Why a credential, the sealing key or the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored credential was sealed with another key, or altered.
    #[error("the stored credential cannot be opened with this platform's key")]
    Unopenable,
    /// The OAuth tokens came without a refresh token, so the access token cannot be renewed.
    #[error("the site gave no refresh token")]
    NoRefreshToken,
    /// The acting manifest does not use OAuth 2.0 (any more).
    #[error("the manifest no longer uses OAuth 2.0")]
    NotOAuth,
    /// The platform's public URL makes no OAuth callback URL.
    #[error("the public URL {0:?} does not make a callback URL")]
    CallbackUrl(String),
    /// The authorization server did not renew the access token.
    #[error("renewing the OAuth token failed")]
    Renewal(#[source] servio_client::oauth::OAuthError),
    /// The sealing key is not 64 hex digits.
    #[error("the secret key must be 64 hex digits (32 bytes)")]
    KeyFormat,
    /// The key file could not be read or written.
    #[error("{action} the key file {}", path.display())]
    KeyFile {
        /// `reading` or `writing`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The key file's content is not a key.
    #[error("the key file {} does not hold a key", path.display())]
    KeyFileFormat {
        /// The file.
        path: PathBuf,
    },
    /// The system gave no randomness for a new key.
    #[error("no randomness for a new key")]
    Randomness(#[source] std::io::Error),
    /// The key cannot open the database's check value (or, in a database from before check
    /// values, its oldest credential): the database's credentials were sealed with another.
    #[error("the secret key does not match this database's: its credentials were sealed with another key")]
    KeyMismatch,
}

/// What kind of failure an [`Error`] is, for callers that answer differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The store failed: try again later.
    Store,
    /// A credential could not be opened or renewed.
    Credential,
    /// The sealing key or the platform's configuration is wrong.
    Configuration,
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Store(_) => ErrorKind::Store,
            Error::Unopenable | Error::NoRefreshToken | Error::NotOAuth | Error::Renewal(_) => ErrorKind::Credential,
            Error::CallbackUrl(_)
            | Error::KeyFormat
            | Error::KeyFile { .. }
            | Error::KeyFileFormat { .. }
            | Error::Randomness(_)
            | Error::KeyMismatch => ErrorKind::Configuration,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_says_each_cause_once() {
        let error = Error::KeyFile {
            action: "reading",
            path: PathBuf::from("secret.key"),
            source: std::io::Error::other("permission denied"),
        };
        assert_eq!(servio_client::error_chain(&error), "reading the key file secret.key: permission denied");
        assert_eq!(error.kind(), ErrorKind::Configuration);
        let store = Error::Store(StoreError::Conflict("that email"));
        assert_eq!(servio_client::error_chain(&store), "that email is already taken");
    }
}
