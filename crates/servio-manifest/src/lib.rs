//! The Servio manifest format as a pure library: parsing, validation, the brief, tool
//! addressing, periods and values. It does no I/O and knows nothing of HTTP, SQL or terminals.
//!
//! ```
//! use servio_manifest::{check, CheckOptions};
//!
//! let source = br#"{
//!   "name": "Forum", "version": "1.0.0",
//!   "server": { "url": "https://forum.example.com/api/servio" },
//!   "auth": { "type": "bearer" },
//!   "tools": [{
//!     "name": "forum.searchThreads",
//!     "description": "Search forum threads by keyword and return the matching titles.",
//!     "input_schema": { "type": "object", "properties": {
//!       "query": { "type": "string", "description": "Words to look for" } } }
//!   }]
//! }"#;
//! let report = check(source, &CheckOptions::default());
//! assert!(report.is_valid());
//! let manifest = report.manifest.unwrap();
//! assert_eq!(manifest.tools[0].name, "forum.searchThreads");
//! assert_eq!(manifest.tools[0].input_schema["type"], "object");
//! ```
//!
//! # Overview
//! - [`check`] returns a [`Report`]: every [`Diagnostic`] at once (stable [`Code`], JSON
//!   [`Pointer`], byte [`Span`], line, column, message, help), the typed [`Manifest`] when
//!   valid, and the brief's own status and errors.
//! - [`schema`] checks input schemas and tool arguments with the `jsonschema` crate.
//! - [`address`] turns sites and tool names into prefixed names.
//! - [`period`] resolves periods in a user's zone and fills placeholders.
//! - [`value`] walks a `valuePath` through a response and reduces the value to a number.
//! - [`fix`] applies the mechanical fixes diagnostics carry ([`Fix`]); [`starter`] writes a
//!   starting manifest.
#![deny(missing_docs)]

pub mod additivity;
pub mod address;
pub mod brief;
mod brief_errors;
pub mod diagnostic;
pub mod diff;
mod errors;
mod fields;
pub mod fix;
pub mod hidden;
pub mod json;
mod lints;
pub mod locate;
pub mod manifest;
pub mod period;
pub mod pointer;
pub mod report_json;
pub mod rules;
pub mod scan;
pub mod schema;
pub mod starter;
pub mod suggest;
mod validate;
pub mod value;

pub use address::Site;
pub use brief::{Brief, BriefStatus, Metric};
pub use diagnostic::{Anchor, Diagnostic, Fix, Severity, Span, merge_missing_members};
pub use manifest::{Auth, Manifest, Tool};
pub use period::{Granularity, Period, PeriodError, PlaceholderValues};
pub use pointer::Pointer;
pub use rules::Code;
pub use value::{Dropped, Extracted, ValuePath};

use json::ParseError;

/// Settings for [`check`].
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The site the manifest was fetched from; for the prefixed-name lint. When `None`, the
    /// origin of `server.url` stands in.
    pub site: Option<Site>,
    /// Lint codes to leave out of the report.
    pub allow: Vec<Code>,
    /// Ends the check early when set ([`check_or_abandon`]); never set by default.
    pub abandon: Abandon,
}

/// A way to end a check under way: whoever waits for it sets it when they give up, or it sets
/// itself at a deadline. The check looks at it between tools and between metrics, so it ends
/// within one tool's or one metric's work (each bounded on its own) of being abandoned.
#[derive(Debug, Clone, Default)]
pub struct Abandon {
    given_up: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    deadline: Option<std::time::Instant>,
}

impl Abandon {
    /// Never set: a check that runs to its end (the CLI's, and the default).
    pub fn never() -> Abandon {
        Abandon::default()
    }

    /// Set by [`Abandon::give_up`] on it or on a clone, or once `deadline` passes.
    pub fn at(deadline: std::time::Instant) -> Abandon {
        Abandon { given_up: Some(Default::default()), deadline: Some(deadline) }
    }

    /// Ends the check (and every check holding a clone of this).
    pub fn give_up(&self) {
        if let Some(flag) = &self.given_up {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether the check should end now.
    pub fn is_set(&self) -> bool {
        self.given_up.as_ref().is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed))
            || self.deadline.is_some_and(|deadline| std::time::Instant::now() >= deadline)
    }
}

/// A check that was abandoned before its end ([`Abandon`]): it found nothing that can be
/// reported, and its partial findings are not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the manifest's check was abandoned before its end (it took too long, or nobody waited for it any more)")]
pub struct Abandoned;

/// Everything [`check`] found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Errors: the manifest is invalid when there is any.
    pub errors: Vec<Diagnostic>,
    /// Lints.
    pub warnings: Vec<Diagnostic>,
    /// Whether the brief is used, and why not.
    pub brief_status: BriefStatus,
    /// The brief's errors; when there is any, the brief is ignored.
    pub brief_errors: Vec<Diagnostic>,
    /// The manifest, when valid.
    pub manifest: Option<Manifest>,
    /// The brief, when valid.
    pub brief: Option<Brief>,
    /// Diagnostics found but not listed: a report lists at most [`MAX_LISTED`].
    pub omitted: Omitted,
}

/// The most diagnostics a [`Report`] lists, errors first, then the brief's errors, then
/// warnings. A thousand is more than anyone reads, and enough for every error of a manifest
/// written by hand; beyond it each diagnostic only costs memory and rendering time (a valid
/// manifest of 100,000 small tools has 200,000 warnings). Verdicts count everything found.
pub const MAX_LISTED: usize = 1_000;

/// How many diagnostics of each list a [`Report`] leaves out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Omitted {
    /// Errors not listed.
    pub errors: usize,
    /// Brief errors not listed.
    pub brief_errors: usize,
    /// Warnings not listed.
    pub warnings: usize,
}

impl Omitted {
    /// All diagnostics not listed.
    pub fn total(&self) -> usize {
        self.errors + self.brief_errors + self.warnings
    }
}

impl Report {
    /// True when the manifest has no errors (warnings and brief errors do not count).
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty() && self.omitted.errors == 0
    }

    /// Every error found, listed or not.
    pub fn error_count(&self) -> usize {
        self.errors.len() + self.omitted.errors
    }

    /// Every brief error found, listed or not.
    pub fn brief_error_count(&self) -> usize {
        self.brief_errors.len() + self.omitted.brief_errors
    }

    /// Every warning found, listed or not.
    pub fn warning_count(&self) -> usize {
        self.warnings.len() + self.omitted.warnings
    }

    fn failed(error: Diagnostic) -> Report {
        Report {
            errors: vec![error],
            warnings: Vec::new(),
            brief_status: BriefStatus::Absent,
            brief_errors: Vec::new(),
            manifest: None,
            brief: None,
            omitted: Omitted::default(),
        }
    }
}

/// Parses and validates a manifest from its bytes, to the end whatever `options.abandon` says.
pub fn check(source: &[u8], options: &CheckOptions) -> Report {
    let options = CheckOptions { abandon: Abandon::never(), ..options.clone() };
    check_or_abandon(source, &options).unwrap_or_else(|Abandoned| unreachable!("a check that is never abandoned"))
}

/// [`check`], ended early when `options.abandon` is set: the platform's checks of site texts,
/// which it gives up when nobody waits any more or when they run past their time.
pub fn check_or_abandon(source: &[u8], options: &CheckOptions) -> Result<Report, Abandoned> {
    let parsed = match json::parse(source) {
        Ok(parsed) => parsed,
        Err(error) => return Ok(Report::failed(parse_error(source, error))),
    };
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if parsed.has_duplicates {
        for (pointer, span) in locate::find_duplicates(source) {
            errors.push(errors::duplicate_member::diagnostic(pointer, span));
        }
    }
    let mut document = parsed.value;
    let mut pattern_steps = schema::PatternSteps::of_a_check(options.abandon.clone());
    let validate::Validated { manifest, tools } =
        validate::validate(&document, options.site.as_ref(), &mut errors, &mut warnings, &mut pattern_steps);
    lints::hidden_text::check(&document, &options.abandon, &mut warnings);
    let mut brief_errors = Vec::new();
    let (brief_status, brief) = match document.get("brief") {
        None => (BriefStatus::Absent, None),
        Some(value) => match brief::check(value, &tools, &mut brief_errors, &mut warnings, pattern_steps) {
            Some(brief) if brief_errors.is_empty() => (BriefStatus::Valid, Some(brief)),
            _ => (BriefStatus::Ignored, None),
        },
    };
    drop(tools);
    if options.abandon.is_set() {
        return Err(Abandoned);
    }
    // Before lints are left out, so that an allowed W007 still leaves its rename with the error.
    errors::required_member::join_near_misses([&mut errors, &mut brief_errors], &mut warnings);
    warnings.retain(|w| !options.allow.contains(&w.code));
    locate::locate_all(source, &mut [&mut errors[..], &mut brief_errors[..], &mut warnings[..]]);
    let mut room = MAX_LISTED;
    let mut omitted = [0; 3];
    for (list, left_out) in [&mut errors, &mut brief_errors, &mut warnings].into_iter().zip(&mut omitted) {
        list.sort_by_key(|d| d.span.start);
        *left_out = list.len().saturating_sub(room);
        list.truncate(room);
        room -= list.len();
    }
    let [errors_omitted, brief_errors_omitted, warnings_omitted] = omitted;
    let omitted = Omitted { errors: errors_omitted, brief_errors: brief_errors_omitted, warnings: warnings_omitted };
    let manifest = if errors.is_empty() { manifest.map(|m| move_schemas(m, &mut document)) } else { None };
    Ok(Report { errors, warnings, brief_status, brief_errors, manifest, brief, omitted })
}

/// Moves each tool's `input_schema` out of the parsed document into the manifest. In a valid
/// manifest every tool is valid, so manifest tools and document tools correspond one to one.
fn move_schemas(mut manifest: Manifest, document: &mut serde_json::Value) -> Manifest {
    if let Some(serde_json::Value::Array(items)) = document.get_mut("tools") {
        for (tool, item) in manifest.tools.iter_mut().zip(items) {
            if let Some(schema) = item.get_mut("input_schema") {
                tool.input_schema = schema.take();
            }
        }
    }
    manifest
}

fn parse_error(source: &[u8], error: ParseError) -> Diagnostic {
    let (code, message, offset, help) = match error {
        ParseError::Syntax { message, offset } => {
            let help = errors::json_syntax::help(&message);
            (Code::JsonSyntax, format!("invalid JSON: {message}"), offset, help)
        }
        ParseError::TooDeep { offset } => (
            Code::NestingDepth,
            format!("nesting is deeper than {} levels", json::MAX_DEPTH),
            offset,
            Some("flatten the structure; schemas can use $defs and $ref".to_owned()),
        ),
    };
    let end = (offset + 1).min(source.len()).max(offset);
    let mut diagnostic =
        Diagnostic::new(code, Pointer::root(), Anchor::Offset(Span::new(offset, end)), message).with_help_opt(help);
    // The parser places a trailing comma's error on the comma itself (`json::parse`).
    if diagnostic.message == "invalid JSON: trailing comma" && source.get(offset) == Some(&b',') {
        diagnostic.fix = Some(Fix::Delete);
    }
    locate::locate(source, std::slice::from_mut(&mut diagnostic));
    diagnostic
}

/// A metric with its period resolved and its arguments filled.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedMetric {
    /// The metric's key.
    pub key: String,
    /// The tool to call.
    pub tool: String,
    /// The metric's granularity.
    pub granularity: Granularity,
    /// The period.
    pub period: Period,
    /// The arguments, placeholders filled.
    pub args: serde_json::Value,
}

/// What [`resolve_brief`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// The metrics whose period occurs, in brief order.
    pub metrics: Vec<ResolvedMetric>,
    /// The metrics left out, by key, with the reason (a skipped hour or date).
    pub skipped: Vec<(String, PeriodError)>,
}

/// Resolves the brief's metrics for local `date` (and `hour`, for hourly metrics) in the zone
/// named `zone_name`. A metric whose period does not occur (a skipped hour or date) is left
/// out and listed in [`Resolution::skipped`] with the reason.
pub fn resolve_brief(
    brief: &Brief,
    date: jiff::civil::Date,
    hour: u8,
    zone_name: &str,
) -> Result<Resolution, PeriodError> {
    let zone = period::zone(zone_name)?;
    let mut resolved = Vec::new();
    let mut skipped = Vec::new();
    for metric in &brief.metrics {
        match period::resolve(metric.granularity, date, hour, &zone) {
            Ok(period) => {
                let args = metric.args_for(&PlaceholderValues::for_period(&period, zone_name));
                resolved.push(ResolvedMetric {
                    key: metric.key.clone(),
                    tool: metric.tool.clone(),
                    granularity: metric.granularity,
                    period,
                    args,
                });
            }
            Err(error @ (PeriodError::SkippedHour { .. } | PeriodError::SkippedDate(_))) => {
                skipped.push((metric.key.clone(), error))
            }
            Err(error) => return Err(error),
        }
    }
    Ok(Resolution { metrics: resolved, skipped })
}
