//! The client's integration tests, against real HTTPS servers on loopback. One binary for the
//! crate, so it is linked once.

mod call_limits;
mod call_redirects;
mod discovery;
mod oauth;
mod oauth_independent;
mod transport;
