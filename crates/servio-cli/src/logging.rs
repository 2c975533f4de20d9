//! Where the libraries' `tracing` events go: standard error, filtered by `SERVIO_LOG` (the
//! `tracing-subscriber` filter syntax, e.g. `SERVIO_LOG=debug` or `SERVIO_LOG=servio_platform=debug`),
//! as text for people or as one JSON object per line (`--log-format json`) for a collector.
//! Standard output stays the command's own (JSON reports, and `servio mcp`'s protocol stream).
//!
//! No event carries a credential, a token or a tool's arguments: the libraries log ids, route
//! templates and outcomes (tests grep the logs for the secrets they used).

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// The filter when `SERVIO_LOG` is unset: what an operator wants to see, without sqlx's
/// per-statement chatter.
const DEFAULT_FILTER: &str = "info,sqlx=warn,rmcp=warn";

/// Installs the subscriber for a long-running command (`serve`, `worker`, `demo`, …).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_env("SERVIO_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second call (tests run commands in one process) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init(),
        // The span's fields (method, route, request id, …) on every line, flattened with the event's.
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).with_span_list(false).try_init(),
    };
}
