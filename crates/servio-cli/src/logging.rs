//! Where the libraries' `tracing` events go: standard error, filtered by `SERVIO_LOG` (the
//! `tracing-subscriber` filter syntax, e.g. `SERVIO_LOG=debug` or `SERVIO_LOG=servio_platform=debug`).
//! Standard output stays the command's own (JSON reports, and `servio mcp`'s protocol stream).

use tracing_subscriber::EnvFilter;

/// The filter when `SERVIO_LOG` is unset: what an operator wants to see, without sqlx's
/// per-statement chatter.
const DEFAULT_FILTER: &str = "info,sqlx=warn,rmcp=warn";

/// Installs the subscriber for a long-running command (`serve`, `worker`, `demo`, …).
pub fn init() {
    let filter = EnvFilter::try_from_env("SERVIO_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // A second call (tests run commands in one process) keeps the first subscriber.
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).try_init();
}
