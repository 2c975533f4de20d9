//! The AI gateway: every approved tool of every site in a user's vault under its prefixed name
//! (interpretation §4), and calls by that name with the user's credential.
//!
//! The MCP endpoint ([`crate::mcp`]), `servio mcp` and the HTTP API (`/api/tools`) all go
//! through [`catalogue()`] and [`call()`]. Checked manifests and compiled argument validators come
//! from the collector's [`servio_core::ManifestCache`] (by site and manifest text), so a
//! call costs no parse and no schema compilation; each
//! user's catalogue and log setting are kept for [`CALL_CONTEXT_TTL`] (dropped at once when this
//! process changes them, so only another process's change can take that long to show), at most
//! `--catalogue-cache-bytes` of them together (a catalogue of 1,000 tools weighs megabytes: a
//! bound by count bounded nothing); the call log is written by a background task in batches, so a call never waits for a commit,
//! behind a queue bounded in entries and bytes (what finds it full is dropped and counted).
//! Each user's calls, and the bytes they make the log keep, are limited before anything is
//! done for them ([`crate::throttle::Throttle::gateway_call`]).
//!
//! One module per job: `catalogue` (what a user may call, kept), `call` (calling a tool),
//! `log` (the call log). What changes tell the gateway comes from [`crate::notices`].

use std::sync::OnceLock;

use crate::cache::Counted;

mod call;
mod catalogue;
mod log;

/// The platform's own tool, which answers with the figures (`domain::figures`): no site's
/// tool takes its name in a catalogue.
pub const METRICS_TOOL: &str = "servio_metrics";

pub use call::{Failure, call};
use catalogue::CallContext;
pub use catalogue::{CALL_CONTEXT_TTL, Catalogue, CatalogueTool, DEFAULT_CATALOGUE_BYTES, catalogue, catalogue_of};
use log::LogQueue;
pub use log::{Asked, QueueBounds, admit_asked, log_asked, most_logged};

/// The gateway's shared state: each user's catalogue and the call-log writer.
pub struct Gateway {
    call_contexts: Counted<i64, CallContext>,
    log: OnceLock<LogQueue>,
    log_bounds: QueueBounds,
}

impl Default for Gateway {
    fn default() -> Gateway {
        Gateway::new(DEFAULT_CATALOGUE_BYTES)
    }
}

impl Gateway {
    /// A gateway keeping at most `catalogue_bytes` of catalogues.
    pub fn new(catalogue_bytes: u64) -> Gateway {
        Gateway {
            call_contexts: Counted::new("catalogue", catalogue_bytes, CALL_CONTEXT_TTL),
            log: OnceLock::new(),
            log_bounds: QueueBounds::default(),
        }
    }
}
