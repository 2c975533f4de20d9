//! Whether a process's sealing key is the one its database's credentials were sealed with,
//! asked once at start by every process that opens credentials (`servio serve`, `worker`,
//! `demo`).
//!
//! Why: a process given another key starts fine and then fails every job of a bearer site with
//! "the stored credential cannot be opened" and of an OAuth site with "renewing the OAuth token
//! failed", long after the mistake and far from it. The database keeps a check value, a
//! constant sealed with its key by the first process that opened it with one; a key that
//! cannot open it is refused before anything is done.

use servio_store::Operations;

use crate::Error;
use crate::secrets::{Secrets, credential_aad};

/// What the check value seals, and the associated data it is bound to.
const CHECK_TEXT: &[u8] = b"servio secret key check";
const CHECK_AAD: &str = "servio secret key check v1";

/// How a key stands with its database, when it is the right one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// The key opens the check value the database keeps.
    Matches,
    /// The database had no check value: this key's is kept from now on. Its credentials, if it
    /// had any from before check values, open with this key.
    Kept,
}

/// Checks `secrets` against the database of `store`, keeping a check value made with it when
/// the database has none yet. A database made before check values, whose credentials are
/// sealed already, takes this key only when it opens the oldest of them.
///
/// # Errors
///
/// [`Error::KeyMismatch`] when the key is not the database's; [`Error::Store`] when the store
/// fails.
pub async fn check_key(store: &dyn Operations, secrets: &Secrets, now: i64) -> Result<KeyCheck, Error> {
    if let Some(sealed) = store.key_check().await? {
        return if opens(secrets, &sealed) { Ok(KeyCheck::Matches) } else { Err(Error::KeyMismatch) };
    }
    if let Some((user_id, site_id, sealed)) = store.oldest_credential().await?
        && secrets.open(&sealed, &credential_aad(user_id, site_id)).is_none()
    {
        return Err(Error::KeyMismatch);
    }
    // Another process may have kept its own meanwhile: the one kept is what this key must open.
    let kept = store.keep_key_check(&secrets.seal(CHECK_TEXT, CHECK_AAD), now).await?;
    if opens(secrets, &kept) { Ok(KeyCheck::Kept) } else { Err(Error::KeyMismatch) }
}

fn opens(secrets: &Secrets, sealed: &[u8]) -> bool {
    secrets.open(sealed, CHECK_AAD).as_deref() == Some(CHECK_TEXT)
}
