//! Site credentials encrypted at rest: XChaCha20-Poly1305 with a random nonce per message, and
//! the user and site bound in as associated data, so that a ciphertext copied to another user's
//! row, or another site's, does not decrypt.
//!
//! The key comes from configuration (`SERVIO_SECRET_KEY`, 64 hex digits) or from a key file
//! generated on first start in the data directory, readable only by its owner.

use std::path::Path;

use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use crate::Error;

const NONCE_LEN: usize = 24;

/// The platform's sealing key.
pub struct Secrets {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(..)")
    }
}

/// The associated data of a vault credential.
pub fn credential_aad(user_id: i64, site_id: i64) -> String {
    format!("servio vault credential v1; user {user_id}; site {site_id}")
}

impl Secrets {
    /// A key from 32 bytes.
    pub fn from_key(key: &[u8; 32]) -> Secrets {
        Secrets { cipher: XChaCha20Poly1305::new_from_slice(key).expect("a 32-byte key") }
    }

    /// A key given as 64 hex digits.
    pub fn from_hex(hex: &str) -> Result<Secrets, Error> {
        let hex = hex.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::KeyFormat);
        }
        let mut key = [0u8; 32];
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| Error::KeyFormat)?;
        }
        Ok(Secrets::from_key(&key))
    }

    /// The key in `path`, created (mode 0600) with a fresh random key when missing.
    pub fn load_or_create(path: &Path) -> Result<Secrets, Error> {
        let file_error = |action, source| Error::KeyFile { action, path: path.to_owned(), source };
        match std::fs::read_to_string(path) {
            Ok(text) => Secrets::from_hex(&text).map_err(|_| Error::KeyFileFormat { path: path.to_owned() }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut key = [0u8; 32];
                // getrandom's error is no `std` error without its `std` feature: kept as its words.
                getrandom::fill(&mut key).map_err(|e| Error::Randomness(std::io::Error::other(e.to_string())))?;
                let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
                write_private(path, hex.as_bytes()).map_err(|e| file_error("writing", e))?;
                Ok(Secrets::from_key(&key))
            }
            Err(e) => Err(file_error("reading", e)),
        }
    }

    /// Encrypts `plaintext` bound to `aad`: nonce then ciphertext.
    pub fn seal(&self, plaintext: &[u8], aad: &str) -> Vec<u8> {
        let nonce = XNonce::generate();
        let sealed = self
            .cipher
            .encrypt(&nonce, Payload { msg: plaintext, aad: aad.as_bytes() })
            .expect("encryption of a small message");
        let mut out = nonce.to_vec();
        out.extend(sealed);
        out
    }

    /// Decrypts what [`Secrets::seal`] made with the same `aad`; `None` when it was made with
    /// another key or for another user or site, or was altered.
    pub fn open(&self, sealed: &[u8], aad: &str) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).ok()?;
        self.cipher.decrypt(&nonce, Payload { msg: ciphertext, aad: aad.as_bytes() }).ok()
    }
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_credentials_open_only_for_their_user_and_site() {
        let secrets = Secrets::from_key(&[7; 32]);
        let sealed = secrets.seal(b"site-token", &credential_aad(1, 2));
        assert!(!sealed.windows(10).any(|w| w == b"site-token"));
        assert_eq!(secrets.open(&sealed, &credential_aad(1, 2)).as_deref(), Some(&b"site-token"[..]));
        assert_eq!(secrets.open(&sealed, &credential_aad(3, 2)), None, "another user");
        assert_eq!(secrets.open(&sealed, &credential_aad(1, 4)), None, "another site");
        assert_eq!(Secrets::from_key(&[8; 32]).open(&sealed, &credential_aad(1, 2)), None, "another key");
        let mut altered = sealed.clone();
        *altered.last_mut().unwrap() ^= 1;
        assert_eq!(secrets.open(&altered, &credential_aad(1, 2)), None, "altered");
        assert_ne!(sealed, secrets.seal(b"site-token", &credential_aad(1, 2)), "fresh nonce");
    }

    #[test]
    fn the_key_file_is_created_once_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let first = Secrets::load_or_create(&path).unwrap();
        let sealed = first.seal(b"x", "a");
        assert_eq!(Secrets::load_or_create(&path).unwrap().open(&sealed, "a").as_deref(), Some(&b"x"[..]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert!(Secrets::from_hex("abc").is_err());
    }
}
