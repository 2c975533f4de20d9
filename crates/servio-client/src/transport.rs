//! Why a connection to a site failed, in words a person can act on.
//!
//! reqwest reports a failed connection as a chain of errors from reqwest, hyper, hyper-util
//! and rustls (`error sending request for url (...): client error (Connect): invalid peer
//! certificate: UnknownIssuer`): the URL repeated, the cause spelled as a Rust identifier.
//! `TransportError::from_reqwest` walks that chain once, downcasting to the typed errors it
//! knows (the resolver's `DnsFailure`, `rustls::Error`, `std::io::Error`), and sorts the
//! failure into a few kinds. Only when no typed error is found does it fall back to the
//! innermost message, which is the most specific one.

use std::error::Error;
use std::fmt;
use std::io;
use std::net::IpAddr;

use rustls::CertificateError;
use url::Url;

/// A request that failed below HTTP: the name, the connection or the TLS handshake, or the
/// connection breaking afterwards.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The host name has no address.
    #[error("could not resolve host {host}")]
    Dns {
        /// The name that did not resolve.
        host: String,
    },
    /// Nothing listens there: the connection was refused.
    #[error("connection refused by {target}")]
    Refused {
        /// `host:port`, as the URL names it.
        target: String,
    },
    /// The connection could not be opened for another reason (no route, reset).
    #[error("could not connect to {target}: {cause}")]
    Connect {
        /// `host:port`, as the URL names it.
        target: String,
        /// What the operating system said, in words.
        cause: String,
    },
    /// The TLS handshake failed, usually over the certificate.
    #[error("{0}")]
    Tls(TlsProblem),
    /// Anything else (a connection closed mid-answer, say): the innermost message.
    #[error("{0}")]
    Other(String),
}

/// What was wrong with the TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsProblem {
    /// The certificate chain does not lead to a trusted root (a private CA, a self-signed
    /// certificate).
    UnknownIssuer,
    /// The certificate is for other names than the one asked for.
    WrongName {
        /// The names it is for, when rustls says (empty otherwise).
        presented: Vec<String>,
    },
    /// The certificate's validity has ended.
    Expired,
    /// The certificate's validity has not started.
    NotYetValid,
    /// The certificate has been revoked.
    Revoked,
    /// The site does not speak TLS on that port (often plain HTTP).
    NotTls,
    /// Another certificate or handshake problem, in rustls's words.
    Other(String),
}

impl fmt::Display for TlsProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsProblem::UnknownIssuer => f.write_str("the certificate is signed by an unknown issuer"),
            TlsProblem::WrongName { presented } if presented.is_empty() => {
                f.write_str("the certificate is for another name")
            }
            TlsProblem::WrongName { presented } => {
                write!(f, "the certificate is for another name (it is for {})", presented.join(", "))
            }
            TlsProblem::Expired => f.write_str("the certificate has expired"),
            TlsProblem::NotYetValid => f.write_str("the certificate is not valid yet"),
            TlsProblem::Revoked => f.write_str("the certificate has been revoked"),
            TlsProblem::NotTls => f.write_str("the site does not speak TLS on that port (plain http?)"),
            TlsProblem::Other(message) => write!(f, "the TLS handshake failed: {message}"),
        }
    }
}

impl TransportError {
    /// True when the site was never reached: the name, the connection or the handshake
    /// failed, so nothing was sent.
    pub fn is_unreachable(&self) -> bool {
        !matches!(self, TransportError::Other(_))
    }

    /// Sorts a reqwest error for a request to `url` by the first typed cause in its chain.
    pub(crate) fn from_reqwest(error: &reqwest::Error, url: &Url) -> TransportError {
        let target = target(url);
        for cause in causes(error) {
            if let Some(failure) = cause.downcast_ref::<DnsFailure>() {
                return TransportError::Dns { host: failure.host.clone() };
            }
            if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
                return TransportError::Tls(TlsProblem::from_rustls(tls));
            }
            if let Some(io) = cause.downcast_ref::<io::Error>()
                && let Some(kind) = TransportError::from_io(io, &target, error.is_connect())
            {
                return kind;
            }
        }
        TransportError::Other(innermost(error))
    }

    /// An operating system error while connecting; `None` for an error of another stage
    /// (or one that only wraps a more specific cause further down the chain).
    fn from_io(error: &io::Error, target: &str, connecting: bool) -> Option<TransportError> {
        match error.kind() {
            io::ErrorKind::ConnectionRefused => Some(TransportError::Refused { target: target.to_owned() }),
            _ if !connecting || error.get_ref().is_some() => None,
            kind => Some(TransportError::Connect { target: target.to_owned(), cause: io_words(error, kind) }),
        }
    }
}

impl TlsProblem {
    /// The problem a rustls error describes.
    fn from_rustls(error: &rustls::Error) -> TlsProblem {
        match error {
            rustls::Error::InvalidCertificate(certificate) => TlsProblem::from_certificate(certificate),
            rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => TlsProblem::NotTls,
            other => TlsProblem::Other(other.to_string()),
        }
    }

    fn from_certificate(error: &CertificateError) -> TlsProblem {
        match error {
            CertificateError::UnknownIssuer => TlsProblem::UnknownIssuer,
            CertificateError::NotValidForName => TlsProblem::WrongName { presented: Vec::new() },
            CertificateError::NotValidForNameContext { presented, .. } => {
                TlsProblem::WrongName { presented: presented.iter().map(|name| unquote(name)).collect() }
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => TlsProblem::Expired,
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => TlsProblem::NotYetValid,
            CertificateError::Revoked => TlsProblem::Revoked,
            other => TlsProblem::Other(rustls::Error::InvalidCertificate(other.clone()).to_string()),
        }
    }
}

/// rustls hands over the names a certificate is for as their debug form, `DnsName("localhost")`
/// or `IpAddress(127.0.0.1)` (there is no typed form to read); a person wants `localhost`.
fn unquote(name: &str) -> String {
    match name.split_once('(') {
        Some((_, rest)) => {
            let inner = rest.trim_end_matches(')').trim_matches('"');
            // An address in its usual spelling: webpki writes `::1` as `0::1`.
            inner.parse::<IpAddr>().map_or_else(|_| inner.to_owned(), |address| address.to_string())
        }
        None => name.to_owned(),
    }
}

/// The resolver's failure to find any address for `host`, kept typed so that the transport
/// error can name the host instead of quoting `getaddrinfo`.
#[derive(Debug)]
pub(crate) struct DnsFailure {
    /// The name looked up.
    pub host: String,
    /// What the lookup said, when it failed rather than answered nothing.
    pub source: Option<io::Error>,
}

impl fmt::Display for DnsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(error) => write!(f, "could not resolve host {}: {error}", self.host),
            None => write!(f, "{} has no addresses", self.host),
        }
    }
}

impl Error for DnsFailure {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn Error + 'static))
    }
}

/// `host:port` of `url`, the port spelled out even when it is the scheme's default.
fn target(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// An io error in words: the kind's own phrase ("network unreachable") for the kinds that
/// happen while connecting, the message otherwise.
fn io_words(error: &io::Error, kind: io::ErrorKind) -> String {
    use io::ErrorKind::*;
    match kind {
        NetworkUnreachable | HostUnreachable | ConnectionReset | ConnectionAborted | TimedOut | AddrNotAvailable
        | NetworkDown | PermissionDenied => kind.to_string(),
        _ => error.to_string(),
    }
}

/// Every error in the chain of `error`, itself first. `std::io::Error::source` skips the error
/// it wraps (it answers that error's source), so the wrapped error is visited explicitly:
/// that is where hyper-rustls puts the `rustls::Error`.
fn causes<'a>(error: &'a (dyn Error + 'static)) -> Vec<&'a (dyn Error + 'static)> {
    let mut chain = Vec::new();
    let mut next = Some(error);
    while let Some(current) = next {
        chain.push(current);
        next = match current.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn Error + 'static)),
            None => current.source(),
        };
    }
    chain
}

/// The message of the last error in the chain: the most specific one.
fn innermost(error: &(dyn Error + 'static)) -> String {
    causes(error).last().map_or_else(|| error.to_string(), |cause| cause.to_string())
}
