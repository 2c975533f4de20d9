//! Rendering reports: for people (`human`, from `servio_report`), for programs (`json`) and for code review tools
//! (`sarif`). All three read the same [`servio_manifest::Report`].

use std::io::IsTerminal;

pub mod json;
pub mod sarif;

/// The human rendering lives in `servio-report`: the platform's "test your manifest" page shows
/// the same text.
pub use servio_report::{self as human, Style};

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything non-empty.
pub fn detect_style() -> Style {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    if !no_color && std::io::stdout().is_terminal() { Style::Color } else { Style::Plain }
}
