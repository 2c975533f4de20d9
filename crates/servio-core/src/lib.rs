//! What acts for a user at a site, shared by every door of the platform (routes, MCP, the
//! worker, refresh): which manifest acts for them ([`approval`]), the one cache of checked
//! manifests, its checks served to users in turn ([`manifests`], [`fair`]), and the credentials
//! sites are called with ([`credentials`]: sealed with the platform's key, [`secrets`], whose
//! match with the database [`key_check`] verifies; OAuth tokens renewed with the 401 rule).
//!
//! It knows no HTTP route and no SQL: it asks `servio-store`, and calls sites through
//! `servio-client`. Collection itself is `servio-collector`'s.
//!
//! - [`Error`]: the crate's one error type.

#![deny(missing_docs)]

pub mod approval;
pub mod credentials;
pub mod error;
pub mod fair;
pub mod key_check;
pub mod manifests;
pub mod secrets;

pub use credentials::Credentials;
pub use error::{Error, ErrorKind};
pub use manifests::{Busy, CheckConfig, ManifestCache};

/// Seconds since the Unix epoch: the clock of the store's timestamps, for every crate of the
/// platform.
pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}
