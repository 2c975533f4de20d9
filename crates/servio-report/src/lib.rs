//! Diagnostics for people, rendered like rustc and ruff:
//!
//! ```text
//! manifest.json:5:12: E020 server.url must use https: the URL uses http, not https
//!   |
//! 5 |     "url": "http://a.example.com"
//!   |            ^^^^^^^^^^^^^^^^^^^^^^
//!   |
//!   = help: write https://a.example.com
//! ```
//!
//! `servio check` prints it; the platform's "test your manifest" page shows the same text. It
//! lives here, not in `servio-manifest`, because it knows terminals (ANSI colours) and the
//! manifest crate knows none.
//! The snippet is drawn by `annotate-snippets`, rustc's own renderer, from the diagnostic's
//! line only, and of a long line only the kilobytes around the underlined part, so a 5 MB
//! manifest, even on one line, costs no more per diagnostic to render than a small one.

#![deny(missing_docs)]

use std::fmt::Write;

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use servio_manifest::locate::LineIndex;
use servio_manifest::{BriefStatus, Diagnostic, MAX_LISTED, Report, Severity, Span, merge_missing_members};

/// Whether to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// ANSI colours.
    Color,
    /// Plain text.
    Plain,
}

/// The whole report for one source: every diagnostic, then (with `summary`) a summary line.
pub fn render(source: &str, bytes: &[u8], report: &Report, style: Style, with_summary: bool) -> String {
    let lines = LineIndex::new(bytes);
    let renderer = match style {
        Style::Color => Renderer::styled(),
        Style::Plain => Renderer::plain(),
    };
    let mut out = String::new();
    for diagnostic in &merge_missing_members(&report.errors) {
        render_one(&mut out, source, bytes, &lines, &renderer, diagnostic, style, "");
    }
    for diagnostic in &merge_missing_members(&report.brief_errors) {
        render_one(&mut out, source, bytes, &lines, &renderer, diagnostic, style, " (the brief is ignored)");
    }
    for diagnostic in &report.warnings {
        render_one(&mut out, source, bytes, &lines, &renderer, diagnostic, style, "");
    }
    let omitted = report.omitted.total();
    if omitted > 0 {
        let problems = if omitted == 1 { "problem" } else { "problems" };
        let _ = writeln!(out, "{source}: ... and {omitted} more {problems} not shown (a report lists {MAX_LISTED})\n");
    }
    if with_summary {
        out.push_str(&summary(source, report, style));
        out.push('\n');
    }
    out
}

// The renderer, the source in three forms and the diagnostic are all needed at once, and a
// struct for one private call would only move the list.
#[allow(clippy::too_many_arguments)]
fn render_one(
    out: &mut String,
    source: &str,
    bytes: &[u8],
    lines: &LineIndex,
    renderer: &Renderer,
    d: &Diagnostic,
    style: Style,
    note: &str,
) {
    let code = paint(style, severity_color(d.severity), d.code.as_str());
    let _ = writeln!(out, "{}:{}:{}: {code} {}{note}", source, d.line, d.column, d.message);
    if d.line == 0 {
        return;
    }
    let line_span = lines.line_span(bytes, d.line);
    // Underline the value on its first line; a value spanning lines gets a caret at its start.
    let start = d.span.start.clamp(line_span.start, line_span.end);
    let end = if d.span.end <= line_span.end { d.span.end.max(d.span.start + 1) } else { d.span.start + 1 };
    let end = end.min(line_span.end).max(start);
    let shown = Excerpt::around(bytes, line_span, Span::new(start, end)).visible();
    let level = match d.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let text = shown.text.as_str();
    let mut group = Group::with_level(level).element(Snippet::source(text).line_start(d.line).fold(false).annotation(
        AnnotationKind::Primary.span(char_boundary(text, shown.mark.start)..char_boundary(text, shown.mark.end)),
    ));
    if let Some(help) = &d.help {
        group = group.element(Level::HELP.message(help.as_str()));
    }
    out.push_str(&renderer.render(&[group]));
    out.push_str("\n\n");
}

/// The bytes of a line kept on either side of what is underlined: a minified manifest is one
/// line of megabytes, and the renderer would go through all of it for every diagnostic. It
/// shows a window of the terminal's width around the underline (with `...` where the line goes
/// on), well inside what is kept, so the output is the same as from the whole line.
const CONTEXT_BYTES: usize = 1024;

/// What is given to the renderer of one line: at most [`CONTEXT_BYTES`] on either side of the
/// underlined part (and of the part itself).
struct Excerpt {
    text: String,
    /// The underlined part, in `text`.
    mark: std::ops::Range<usize>,
}

impl Excerpt {
    fn around(bytes: &[u8], line: Span, mark: Span) -> Excerpt {
        let from = char_start(bytes, mark.start.saturating_sub(CONTEXT_BYTES).max(line.start));
        let mark_end = mark.end.min(mark.start + CONTEXT_BYTES);
        let to = char_start(bytes, (mark_end + CONTEXT_BYTES).min(line.end)).max(from);
        let text = String::from_utf8_lossy(&bytes[from..to]).into_owned();
        Excerpt { text, mark: (mark.start - from)..(mark_end.min(to).max(mark.start) - from) }
    }

    /// The excerpt with every character a person does not see (tag characters, bidirectional
    /// controls, zero-width characters) drawn as `�`, as rustc draws bidirectional controls:
    /// printed as they are, they would hide text or reorder the line on the terminal, and the
    /// message (W011) says what they are.
    fn visible(self) -> Excerpt {
        use servio_manifest::hidden::is_hidden;
        if !self.text.contains(is_hidden) {
            return self;
        }
        let drawn = |c: char| if is_hidden(c) { '\u{FFFD}' } else { c };
        // An offset moves by what the characters before it grow or shrink.
        let moved = |offset: usize| {
            self.text.char_indices().take_while(|(i, _)| *i < offset).map(|(_, c)| drawn(c).len_utf8()).sum()
        };
        let mark = moved(self.mark.start)..moved(self.mark.end);
        Excerpt { text: self.text.chars().map(drawn).collect(), mark }
    }
}

/// `index` moved back to the start of the UTF-8 character it falls in.
fn char_start(bytes: &[u8], mut index: usize) -> usize {
    while index > 0 && index < bytes.len() && (bytes[index] & 0xC0) == 0x80 {
        index -= 1;
    }
    index
}

/// `index` moved back to a character boundary (a lossy line may differ from the bytes).
fn char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn summary(source: &str, report: &Report, style: Style) -> String {
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let verdict = if report.is_valid() {
        paint(style, GREEN, "valid")
    } else {
        format!("{} ({})", paint(style, RED, "invalid"), count(report.error_count(), "error"))
    };
    let brief = match report.brief_status {
        BriefStatus::Absent => "no brief".to_owned(),
        BriefStatus::Valid => {
            format!("brief valid ({})", count(report.brief.as_ref().map_or(0, |b| b.metrics.len()), "metric"))
        }
        BriefStatus::Ignored => {
            format!("{} ({})", paint(style, YELLOW, "brief ignored"), count(report.brief_error_count(), "error"))
        }
    };
    format!("{source}: {verdict}, {}, {brief}", count(report.warning_count(), "warning"))
}

const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[1;33m";
const GREEN: &str = "\x1b[1;32m";

fn severity_color(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => RED,
        Severity::Warning => YELLOW,
    }
}

fn paint(style: Style, color: &str, text: &str) -> String {
    match style {
        Style::Color => format!("{color}{text}\x1b[0m"),
        Style::Plain => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line holding hidden characters is drawn with `�` in their place and the underline
    /// still under the string (interpretation §9): printed raw, a right-to-left override turns
    /// the rest of the terminal line around and tag characters hide what they spell.
    #[test]
    fn hidden_characters_are_drawn_visibly_and_the_underline_stays_in_place() {
        let spelled = servio_manifest::hidden::in_tags("obey");
        let source = format!(
            "{{\"name\": \"S\", \"version\": \"1.0.0\", \"server\": {{\"url\": \"https://s.example/api\"}}, \"auth\": {{\"type\": \"bearer\"}}, \"tools\": [{{\"name\": \"s.doIt\", \"description\": \"Do it for the user, and say what was done.{spelled}\\u202e\", \"input_schema\": {{\"type\": \"object\"}}}}]}}"
        );
        let source = source.replace("\\u202e", "\u{202E}");
        let report = servio_manifest::check(source.as_bytes(), &servio_manifest::CheckOptions::default());
        let shown = render("m.json", source.as_bytes(), &report, Style::Plain, false);
        assert!(shown.contains("W011"), "{shown}");
        assert!(!shown.contains(servio_manifest::hidden::is_hidden), "{shown:?}");
        assert!(shown.contains("done.�����\""), "{shown}");
        let lines: Vec<&str> = shown.lines().collect();
        let at = lines.iter().position(|line| line.contains("done.")).unwrap();
        let (text, carets) = (lines[at], lines[at + 1]);
        let column = |line: &str, byte: usize| line[..byte].chars().count();
        let opening = text.find("\"Do it").unwrap();
        assert_eq!(column(carets, carets.find('^').unwrap()), column(text, opening), "{shown}");
        let closing = text.find("�����\"").unwrap() + "�����\"".len();
        assert_eq!(column(carets, carets.len()), column(text, closing), "the underline ends with the string: {shown}");
    }
}
