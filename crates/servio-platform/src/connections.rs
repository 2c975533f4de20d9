//! The platform's listener: connections accepted within bounds, so that no one client can take
//! the file descriptors, memory or time that every other client needs (issue 41, finding 1:
//! 20,050 idle or half-sent connections from one client once left `/healthz` unanswered).
//!
//! What is bounded, and where:
//! - connections open at once, in all and per client address (an IPv4 address, an IPv6 /64,
//!   as [`ClientKey`] groups them): one past either is answered at once with `503` or `429`
//!   and closed, before any request is read;
//! - the time a client may take to send a request's head, and to stay idle between two
//!   requests on one connection (hyper's header-read timer, which runs from the moment the
//!   connection waits for a head);
//! - the time a client may take to send a request's body (the router's body timeout);
//! - file descriptors: [`ConnectionLimits::check_descriptors`] refuses to start a process whose
//!   connections could take the descriptors the database and the calls to sites need.
//!
//! HTTP/1.1 only: every client the platform serves (browsers over plain HTTP, MCP clients,
//! balancers) speaks it, and HTTP/2's idle connections escape the header timer.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::throttle::ClientKey;

/// File descriptors kept for everything but client connections: the database pool, calls to
/// sites (`--in-flight` and the gateway's), manifest fetches, log files and the process's own.
pub const RESERVED_DESCRIPTORS: u64 = 1024;

/// How many connections the platform keeps open, and how long a client may take to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once, from everyone.
    pub total: usize,
    /// Connections open at once from one client address (an IPv6 /64 counts as one).
    pub per_address: usize,
    /// Seconds a client may take to send a request's head, counted from when the connection
    /// waits for one (so also the longest a kept-alive connection may stay idle).
    pub header_timeout: Duration,
    /// Seconds a client may take to send a request's body.
    pub body_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            total: 4096,
            per_address: 64,
            header_timeout: Duration::from_secs(20),
            body_timeout: Duration::from_secs(30),
        }
    }
}

/// The process may not open enough files for its connections and what it keeps beside them.
#[derive(Debug, thiserror::Error)]
#[error(
    "{connections} connections (--max-connections) and {RESERVED_DESCRIPTORS} file descriptors kept for the \
     database and calls to sites need {needed} open files, but this process may open {limit}: lower \
     --max-connections or raise the limit (ulimit -n)"
)]
pub struct TooFewDescriptors {
    connections: usize,
    needed: u64,
    limit: u64,
}

impl ConnectionLimits {
    /// Raises the process's soft limit on open files to its hard limit, then checks that
    /// [`Self::total`] connections leave [`RESERVED_DESCRIPTORS`] for the rest.
    pub fn check_descriptors(&self) -> Result<(), TooFewDescriptors> {
        let limit = raise_open_files_limit();
        let needed = self.total as u64 + RESERVED_DESCRIPTORS;
        if needed > limit {
            return Err(TooFewDescriptors { connections: self.total, needed, limit });
        }
        Ok(())
    }
}

/// The soft limit on open files after raising it as far as the hard limit allows.
fn raise_open_files_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit { current: limit.maximum, maximum: limit.maximum };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return limit.maximum.unwrap_or(u64::MAX);
        }
    }
    limit.current.unwrap_or(u64::MAX)
}

/// Serves `router` on `listener` within `limits` until `stop` is cancelled; then stops
/// accepting, asks every open connection to close once its request in flight is answered,
/// and returns when they all have. The router sees each client's address as
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(listener: TcpListener, router: axum::Router, limits: ConnectionLimits, stop: CancellationToken) {
    let router = router.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(limits.body_timeout));
    let open = Arc::new(Open::default());
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    // Every connection task holds a receiver; `closed()` answers once all are gone.
    let (all_closed, closing) = tokio::sync::watch::channel(());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors (EMFILE) or a connection reset before it was taken:
                    // wait a moment rather than spin.
                    tracing::warn!(error = %servio_client::error_chain(&error), "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let held = match open.admit(peer.ip(), &limits) {
            Ok(held) => held,
            Err(refusal) => {
                refuse(&stream, refusal);
                continue;
            }
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(error = %servio_client::error_chain(&error), "turning Nagle's algorithm off failed");
        }
        let service = router.clone().map_request(move |request: hyper::Request<hyper::body::Incoming>| {
            let mut request = request.map(axum::body::Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            request
        });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)).with_upgrades();
        let (stop, closing) = (stop.clone(), closing.clone());
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop((held, closing));
        });
    }
    drop((listener, closing));
    all_closed.closed().await;
}

/// Why a connection was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Every connection the process keeps is open.
    Full(usize),
    /// The client's address has every connection it may have.
    PerAddress(usize),
}

/// Answers a refused connection at once, without reading its request, and closes it. The write
/// does not wait: a client that does not read its answer just sees the connection close.
fn refuse(stream: &TcpStream, refusal: Refusal) {
    metrics::counter!("servio_connections_refused_total", "reason" => match refusal {
        Refusal::Full(_) => "full",
        Refusal::PerAddress(_) => "per_address",
    })
    .increment(1);
    let (status, message) = match refusal {
        Refusal::Full(n) => ("503 Service Unavailable", format!("the platform has {n} connections open, its most")),
        Refusal::PerAddress(n) => (
            "429 Too Many Requests",
            format!("{n} connections are open from this address, the most one address may have"),
        ),
    };
    let body = serde_json::json!({ "error": message }).to_string();
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// The connections open now: in all, and per client address.
#[derive(Debug, Default)]
struct Open {
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_address: HashMap<ClientKey, usize>,
}

impl Open {
    /// Counts a connection from `address` in, or says which bound it would pass.
    fn admit(self: &Arc<Open>, address: IpAddr, limits: &ConnectionLimits) -> Result<Held, Refusal> {
        let key = ClientKey::of(address);
        let mut counts = self.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if counts.total >= limits.total {
            return Err(Refusal::Full(limits.total));
        }
        let from_address = counts.per_address.entry(key).or_default();
        if *from_address >= limits.per_address {
            return Err(Refusal::PerAddress(limits.per_address));
        }
        *from_address += 1;
        counts.total += 1;
        Ok(Held { open: self.clone(), key })
    }
}

/// One counted connection; counted out when dropped.
struct Held {
    open: Arc<Open>,
    key: ClientKey,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut counts = self.open.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        counts.total -= 1;
        if let Some(from_address) = counts.per_address.get_mut(&self.key) {
            *from_address -= 1;
            if *from_address == 0 {
                counts.per_address.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_address: usize) -> ConnectionLimits {
        ConnectionLimits { total, per_address, ..ConnectionLimits::default() }
    }

    #[test]
    fn an_address_gets_its_share_and_no_more_and_a_closed_connection_frees_its_place() {
        let open = Arc::new(Open::default());
        let (a, b) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let limits = limits(3, 2);
        let first = open.admit(a, &limits).unwrap();
        let _second = open.admit(a, &limits).unwrap();
        assert_eq!(open.admit(a, &limits).err(), Some(Refusal::PerAddress(2)));
        let _third = open.admit(b, &limits).unwrap();
        assert_eq!(open.admit(b, &limits).err(), Some(Refusal::Full(3)));
        drop(first);
        assert!(open.admit(a, &limits).is_ok());
    }

    #[test]
    fn one_ipv6_subscriber_is_one_address() {
        let open = Arc::new(Open::default());
        let limits = limits(10, 1);
        let _held = open.admit("2001:db8::1".parse().unwrap(), &limits).unwrap();
        assert!(open.admit("2001:db8::2".parse().unwrap(), &limits).is_err());
        assert!(open.admit("2001:db8:0:1::1".parse().unwrap(), &limits).is_ok());
    }

    #[test]
    fn connections_beyond_the_descriptors_are_refused_at_start() {
        let limits = limits(usize::MAX / 2, 64);
        let error = limits.check_descriptors().unwrap_err().to_string();
        assert!(error.contains("lower --max-connections"), "{error}");
    }
}
