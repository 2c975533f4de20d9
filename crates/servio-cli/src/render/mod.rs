//! Rendering reports: for people (`human`), for programs (`json`) and for code review tools
//! (`sarif`). All three read the same [`servio_manifest::Report`].

use std::io::IsTerminal;

pub mod human;
pub mod json;
pub mod sarif;

/// Whether to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// ANSI colours.
    Color,
    /// Plain text.
    Plain,
}

impl Style {
    /// Colour only on a terminal, and never when `NO_COLOR` is set to anything non-empty.
    pub fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if !no_color && std::io::stdout().is_terminal() { Style::Color } else { Style::Plain }
    }
}
