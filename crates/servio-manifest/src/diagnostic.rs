//! Diagnostics as data: what is wrong, where, and how to fix it.
//!
//! Validation passes produce [`Diagnostic`]s that know their JSON Pointer and which node of
//! the source to point at ([`Anchor`]); byte spans, lines and columns are filled in afterwards
//! by [`crate::locate`], once per document, so that a clean manifest never pays for them.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::pointer::Pointer;
use crate::rules::Code;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A lint: the manifest is still valid.
    Warning,
    /// The manifest (or, for brief diagnostics, the brief) is invalid.
    Error,
}

impl Severity {
    /// The lowercase name used in reports: `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A half-open byte range `[start, end)` in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
}

/// Which part of the source a diagnostic points at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// The value at this pointer (for a missing member: the object that lacks it).
    Value(Pointer),
    /// The member name of the member at this pointer (for unknown and duplicate members).
    Key(Pointer),
    /// A byte offset known directly, as for syntax errors.
    Offset(Span),
}

/// One problem found in a manifest, a brief or a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// The stable rule code, such as `E020`.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// Where the problem is, as a JSON Pointer (`/tools/2/input_schema/type`).
    pub pointer: Pointer,
    /// What the caret goes under.
    pub anchor: Anchor,
    /// Byte range in the source; filled in by [`crate::locate`].
    pub span: Span,
    /// 1-based line of `span.start`; filled in by [`crate::locate`].
    pub line: usize,
    /// 1-based column, in characters, of `span.start`; filled in by [`crate::locate`].
    pub column: usize,
    /// What is missing or malformed: lowercase, no trailing period.
    pub message: String,
    /// How to fix it, where we can say.
    pub help: Option<String>,
    /// For a missing member: its name, so that several missing from one object can be shown
    /// as one problem ([`merge_missing_members`]).
    pub missing: Option<String>,
    /// The mechanical fix, when there is exactly one: an edit of the bytes under `span` that
    /// `servio check --fix` (and an editor's quick fix) may apply without asking.
    pub fix: Option<Fix>,
}

/// An edit that repairs a diagnostic, made on the bytes under the diagnostic's span, so that
/// the rest of the text stays as its author wrote it.
#[derive(Debug, Clone, PartialEq)]
pub enum Fix {
    /// The member name under the span (quotes included) becomes this name.
    Rename(String),
    /// The value under the span becomes this value.
    Replace(serde_json::Value),
    /// The bytes under the span go (a trailing comma).
    Delete,
}

impl Fix {
    /// The text that takes the span's place.
    pub fn replacement(&self) -> String {
        match self {
            Fix::Rename(name) => serde_json::Value::String(name.clone()).to_string(),
            Fix::Replace(value) => value.to_string(),
            Fix::Delete => String::new(),
        }
    }

    /// What the fix does to `original`, the text under the span, for people: "renamed
    /// `inputSchema` to `input_schema`".
    pub fn describe(&self, original: &str) -> String {
        match self {
            Fix::Rename(name) => format!("renamed {} to `{name}`", quoted_name(original)),
            Fix::Replace(value) => format!("replaced {original} with {value}"),
            Fix::Delete => format!("removed {}", original.trim()),
        }
    }
}

/// A member name as written, `"inputSchema"`, shown as `` `inputSchema` ``.
fn quoted_name(original: &str) -> String {
    match serde_json::from_str::<String>(original) {
        Ok(name) => format!("`{name}`"),
        Err(_) => original.to_owned(),
    }
}

impl Diagnostic {
    /// A diagnostic for the value at `pointer`, with the code's default severity.
    pub fn at(code: Code, pointer: Pointer, message: impl Into<String>) -> Diagnostic {
        let anchor = Anchor::Value(pointer.clone());
        Diagnostic::new(code, pointer, anchor, message)
    }

    /// A diagnostic for a member that is missing from the object at `parent`.
    pub fn missing(code: Code, parent: &Pointer, member: &str, message: impl Into<String>) -> Diagnostic {
        let mut diagnostic = Diagnostic::new(code, parent.child(member), Anchor::Value(parent.clone()), message);
        diagnostic.missing = Some(member.to_owned());
        diagnostic
    }

    /// A diagnostic whose caret goes under the member name at `pointer`.
    pub fn at_key(code: Code, pointer: Pointer, message: impl Into<String>) -> Diagnostic {
        let anchor = Anchor::Key(pointer.clone());
        Diagnostic::new(code, pointer, anchor, message)
    }

    /// A diagnostic with an explicit anchor.
    pub fn new(code: Code, pointer: Pointer, anchor: Anchor, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            pointer,
            anchor,
            span: Span::default(),
            line: 0,
            column: 0,
            message: message.into(),
            help: None,
            missing: None,
            fix: None,
        }
    }

    /// Adds a help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Adds a help text when there is one.
    pub fn with_help_opt(mut self, help: Option<String>) -> Diagnostic {
        self.help = help;
        self
    }

    /// Adds the mechanical fix.
    pub fn with_fix(mut self, fix: Fix) -> Diagnostic {
        self.fix = Some(fix);
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// `list` with the required members missing from one object shown as one diagnostic: "missing
/// required members `description` and `input_schema`", with one example of what to add. Each
/// stays its own diagnostic in the report (every missing member has its own pointer); this is
/// for people reading them, who would otherwise read the same advice once per member.
pub fn merge_missing_members(list: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut merged: Vec<(Diagnostic, Vec<String>)> = Vec::with_capacity(list.len());
    // The group of each (code, object lacking members), so that finding it costs no scan.
    let mut groups: HashMap<(Code, &Anchor), usize> = HashMap::new();
    for diagnostic in list {
        let Some(member) = &diagnostic.missing else {
            merged.push((diagnostic.clone(), Vec::new()));
            continue;
        };
        match groups.entry((diagnostic.code, &diagnostic.anchor)) {
            Entry::Occupied(group) => merged[*group.get()].1.push(member.clone()),
            Entry::Vacant(group) => {
                group.insert(merged.len());
                merged.push((diagnostic.clone(), vec![member.clone()]));
            }
        }
    }
    merged
        .into_iter()
        .map(|(mut diagnostic, members)| {
            if members.len() > 1 {
                diagnostic.message = format!("missing required members {}", crate::fields::and_list(&members));
                diagnostic.help = Some(crate::fields::example_to_add(&members));
            }
            diagnostic
        })
        .collect()
}
