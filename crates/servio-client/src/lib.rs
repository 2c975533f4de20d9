//! The one crate that opens outbound connections to sites.
//!
//! - [`guard`]: which addresses may be connected to (interpretation §9).
//! - [`http`]: the client every request goes through: HTTPS only unless asked, the guard on
//!   every DNS answer and redirect hop, body, time and redirect limits.
//! - [`transport`]: why a connection failed, in words (DNS, refused, TLS certificate).
//! - [`discovery`]: finding a site's manifest (interpretation §1) and refreshing it with
//!   conditional requests.
//! - [`call`]: calling a tool (interpretation §5), arguments validated before anything is sent.
//! - [`oauth`]: OAuth 2.0 authorization code with PKCE `S256`, token exchange and renewal.
#![deny(missing_docs)]

pub mod call;
pub mod discovery;
pub mod guard;
pub mod http;
pub mod oauth;
pub mod transport;

pub use call::{CallError, ToolCall, post_tool};
pub use discovery::{Discovered, DiscoveryError, Validators, discover, refresh};
pub use guard::{Guard, Policy, Refusal, Rule};
pub use http::{
    Client, ClientConfig, ClientError, DEFAULT_CALL_MAX_BODY, DEFAULT_CALL_TIMEOUT, Fetched, Limits, Lookup,
};
pub use transport::{TlsProblem, TransportError};

/// `error` and each of its sources, joined by `: `; a source whose text the message before it
/// already holds (a store error names its database error) is not repeated.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}
