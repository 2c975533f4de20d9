//! `pattern` and `patternProperties` as the platform matches them: with the `regex` crate's
//! engine, which never backtracks (the `jsonschema` crate's default, `fancy-regex`, backtracks
//! once a pattern has a look-around or a backreference: one such pattern held a validation for
//! 44 s), each pattern compiled within [`MAX_COMPILED_PATTERN`] bytes, and each match counted
//! before it is done.
//!
//! The engine is linear in the string, but times the pattern: it runs the pattern's positions
//! side by side, so `a[ab]{400}[^ab]`, 17 bytes, takes 3.4 s on a 1 MiB string in a release
//! build. So every match is counted as the string's length times [`steps_per_byte`] (the
//! pattern's positions with its counted repetitions unrolled, plus [`STEPS_PER_BYTE_BASE`]), and
//! one validation may take at most [`MAX_PATTERN_STEPS`] of them (`graph.rs` counts them with
//! the evaluations). What the engine cannot match at all, E055 reports
//! (`crate::errors::schema_linear_pattern`): look-around, backreferences, a pattern longer than
//! [`MAX_PATTERN_BYTES`], or one that does not compile within the size bound.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use jsonschema::{PatternOptions, Validator};
use serde_json::{Value, json};

/// The longest `pattern` (or `patternProperties` key) the platform compiles, in bytes. Real
/// patterns take tens or hundreds; the bound keeps what is quadratic in a pattern's length in
/// the crates that read it (named groups checked against each other, `\c` escapes each parsed
/// again from the start) to a few milliseconds a pattern.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// The most a pattern may compile to, in bytes (the `regex` crate's size limit), so that
/// compiling one is bounded too: about 2 ms in a release build. Enough for patterns with a few
/// Unicode property classes (`^[\p{L}\p{N}][\p{L}\p{N}_.-]*[\p{L}\p{N}]$` takes 256 KiB); a
/// counted repetition of a large class is not (`\p{L}{1,64}` written inside a longer pattern
/// copies the class 64 times), and `maxLength` says the same for nothing.
pub const MAX_COMPILED_PATTERN: usize = 256 * 1024;

/// The memory each compiled pattern's lazy DFA may use while matching, per thread (the `regex`
/// crate's default is 2 MiB). Past it the engine falls back to its slower automaton, whose time
/// [`MAX_PATTERN_STEPS`] bounds.
const DFA_CACHE_BYTES: usize = 256 * 1024;

/// The most pattern steps one validation may take: the length of every string matched against
/// a pattern times that pattern's steps a byte (its positions, each character, escape or class
/// once per repetition a counted quantifier asks for, plus [`STEPS_PER_BYTE_BASE`]), summed.
/// About half a second of the engine's slowest matching in a release build, and far more than
/// real arguments take: a 1 MiB string against a pattern of 48 positions. A check shares one
/// such budget among the values of the manifest itself that it matches (defaults and the
/// brief's arguments).
pub const MAX_PATTERN_STEPS: u64 = 1 << 26;

/// What every byte matched against a pattern costs besides the pattern's positions: what the
/// engine's slower automaton spends on a byte whatever the pattern.
pub const STEPS_PER_BYTE_BASE: u64 = 16;

/// The linear-time engine with its bounds, for every validator built over a schema a site
/// wrote (argument validation, the default lint) and for the meta-schema's own patterns.
pub(crate) fn engine() -> PatternOptions<jsonschema::Regex> {
    PatternOptions::regex().size_limit(MAX_COMPILED_PATTERN).dfa_size_limit(DFA_CACHE_BYTES)
}

/// What the linear-time engine cannot match, as a pattern writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Construct {
    /// `(?=`
    LookAhead,
    /// `(?!`
    NegativeLookAhead,
    /// `(?<=` or `(?<!`
    LookBehind,
    /// `\1` to `\9...`, or `\k<name>`
    Backreference,
}

/// Why the platform cannot match a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// Longer than [`MAX_PATTERN_BYTES`]; its length.
    TooLong(usize),
    /// It uses this construct, first written as the text given.
    Construct(Construct, String),
    /// It does not compile within [`MAX_COMPILED_PATTERN`].
    TooLarge,
}

/// What a pattern's text says, read once: its positions and the first construct the engine
/// cannot match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Characters, escapes and classes, each counted once per repetition a counted quantifier
    /// asks for (`(ab){3}` is 6, `a+` is 1), saturating: an upper bound of the positions the
    /// engine runs side by side.
    pub(crate) positions: u64,
    /// The first look-around or backreference, and its text.
    pub(crate) unsupported: Option<(Construct, String)>,
}

/// The steps one byte matched against `pattern` costs: its positions plus
/// [`STEPS_PER_BYTE_BASE`].
pub(crate) fn steps_per_byte(pattern: &str) -> u64 {
    scan(pattern).positions.saturating_add(STEPS_PER_BYTE_BASE)
}

/// Why `pattern` cannot be used, without compiling it: too long, or a construct the engine
/// lacks. A pattern that is not a regular expression at all is E050's; this does not judge it.
pub(crate) fn screen(pattern: &str) -> Option<Unusable> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Some(Unusable::TooLong(pattern.len()));
    }
    scan(pattern).unsupported.map(|(construct, text)| Unusable::Construct(construct, text))
}

/// Why `pattern` cannot be used: too long (said before anything reads it: the syntax check is
/// quadratic in the length), else, when it is a valid ECMA-262 regular expression at all (E050
/// reports the others), a construct the engine lacks or a compile that does not fit the
/// bound, as an argument validator would compile it. Remembered in [`VERDICTS`].
pub(crate) fn judge(pattern: &str) -> Option<Unusable> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Some(Unusable::TooLong(pattern.len()));
    }
    if let Some(verdict) = VERDICTS.lock().unwrap_or_else(PoisonError::into_inner).get(pattern) {
        return verdict.clone();
    }
    let verdict = if is_regex(pattern) {
        screen(pattern).or_else(|| (!compiles(pattern)).then_some(Unusable::TooLarge))
    } else {
        None
    };
    let mut verdicts = VERDICTS.lock().unwrap_or_else(PoisonError::into_inner);
    if verdicts.len() >= VERDICTS_KEPT {
        verdicts.clear();
    }
    verdicts.insert(pattern.into(), verdict.clone());
    verdict
}

/// The verdicts of [`judge`] by pattern, shared by every check of the process: compiling a
/// pattern to judge it costs tens of microseconds, and a manifest's tools repeat their patterns
/// as manifests repeat each other's. Bounded: at most [`VERDICTS_KEPT`] patterns of at most
/// [`MAX_PATTERN_BYTES`] each (4 MiB), all forgotten when full. Never stale: a verdict depends on
/// the pattern's text alone.
static VERDICTS: LazyLock<Mutex<HashMap<Box<str>, Option<Unusable>>>> = LazyLock::new(Mutex::default);

/// How many patterns [`VERDICTS`] holds at most.
const VERDICTS_KEPT: usize = 4096;

/// Whether `pattern` compiles as argument validation compiles it.
fn compiles(pattern: &str) -> bool {
    jsonschema::draft202012::options().with_pattern_options(engine()).build(&json!({ "pattern": pattern })).is_ok()
}

/// Whether `pattern` is a valid ECMA-262 regular expression, as the meta-schema's `format:
/// "regex"` judges it (the `jsonschema` crate's own check, a parser that does not backtrack).
pub(crate) fn is_regex(pattern: &str) -> bool {
    static REGEX_FORMAT: LazyLock<Validator> = LazyLock::new(|| {
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&json!({ "format": "regex" }))
            .expect("a format schema compiles")
    });
    REGEX_FORMAT.is_valid(&Value::String(pattern.to_owned()))
}

/// `format: "regex"` for the meta-schema: a pattern longer than [`MAX_PATTERN_BYTES`] is not
/// read here (the crate's check compares named groups pairwise, quadratic in the length), and
/// E055 reports it instead.
pub(crate) fn is_regex_format(pattern: &str) -> bool {
    pattern.len() > MAX_PATTERN_BYTES || is_regex(pattern)
}

/// One group being read: the positions of its finished alternatives and of the current one.
#[derive(Default)]
struct Group {
    alternatives: u64,
    current: u64,
}

/// Reads `pattern` once, left to right, with an explicit stack of open groups (so that no
/// nesting can exhaust the call stack). It follows ECMA-262's syntax only as far as counting
/// needs: escapes, classes, groups, alternatives and quantifiers.
pub(crate) fn scan(pattern: &str) -> Scan {
    let bytes = pattern.as_bytes();
    let mut groups = vec![Group::default()];
    let mut unsupported = None;
    // The positions of the last atom or group, which a quantifier repeats.
    let mut last = 0u64;
    let mut i = 0;
    let mut note = |construct: Construct, start: usize, end: usize| {
        if unsupported.is_none() {
            unsupported = Some((construct, pattern[start..end.min(pattern.len())].to_owned()));
        }
    };
    while i < bytes.len() {
        let start = i;
        let group = groups.last_mut().expect("the pattern itself is the outermost group");
        match bytes[i] {
            b'\\' => {
                let (end, atom) = escape(bytes, i);
                if atom == Atom::Backreference {
                    note(Construct::Backreference, start, end);
                }
                i = end;
                last = u64::from(atom != Atom::Assertion);
                group.current = group.current.saturating_add(last);
            }
            b'[' => {
                i = class_end(bytes, i);
                last = 1;
                group.current = group.current.saturating_add(1);
            }
            b'(' => {
                i += 1;
                if bytes.get(i) == Some(&b'?') {
                    let rest = &bytes[i + 1..];
                    let construct = if rest.starts_with(b"=") {
                        Some(Construct::LookAhead)
                    } else if rest.starts_with(b"!") {
                        Some(Construct::NegativeLookAhead)
                    } else if rest.starts_with(b"<=") || rest.starts_with(b"<!") {
                        Some(Construct::LookBehind)
                    } else {
                        None
                    };
                    if let Some(construct) = construct {
                        let length = if construct == Construct::LookBehind { 4 } else { 3 };
                        note(construct, start, start + length);
                    }
                    // `(?:`, `(?=`, `(?<name>`, `(?i:` and the like: the group's own syntax
                    // ends at its first `:`, `=`, `!` or `>`.
                    while i < bytes.len() && !matches!(bytes[i], b':' | b'=' | b'!' | b'>') {
                        i += 1;
                    }
                    i += 1;
                }
                groups.push(Group::default());
                last = 0;
            }
            b')' => {
                i += 1;
                if groups.len() > 1 {
                    let closed = groups.pop().expect("a nested group is open");
                    last = closed.alternatives.saturating_add(closed.current);
                    let parent = groups.last_mut().expect("the pattern itself is the outermost group");
                    parent.current = parent.current.saturating_add(last);
                }
            }
            b'|' => {
                i += 1;
                group.alternatives = group.alternatives.saturating_add(group.current);
                group.current = 0;
                last = 0;
            }
            b'{' => match braced_quantifier(bytes, i) {
                Some((end, most)) => {
                    i = end;
                    // The atom is there once already; the quantifier adds the other copies.
                    let copies = most.max(1);
                    group.current = group.current.saturating_add(last.saturating_mul(copies - 1));
                    last = last.saturating_mul(copies);
                }
                None => {
                    i += 1;
                    last = 1;
                    group.current = group.current.saturating_add(1);
                }
            },
            b'*' | b'+' | b'?' | b'^' | b'$' => i += 1,
            _ => {
                i += utf8_length(bytes[i]);
                last = 1;
                group.current = group.current.saturating_add(1);
            }
        }
    }
    let positions = groups.iter().fold(0u64, |sum, g| sum.saturating_add(g.alternatives).saturating_add(g.current));
    Scan { positions, unsupported }
}

/// What an escape stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atom {
    /// A character or a class of them.
    Character,
    /// `\b` or `\B`: a position, not a character.
    Assertion,
    Backreference,
}

/// The end of the escape at `start` (a backslash) and what it is.
fn escape(bytes: &[u8], start: usize) -> (usize, Atom) {
    let Some(&kind) = bytes.get(start + 1) else {
        return (bytes.len(), Atom::Character);
    };
    let after = start + 2;
    let (end, atom) = match kind {
        b'b' | b'B' => (after, Atom::Assertion),
        b'1'..=b'9' => (after + bytes[after..].iter().take_while(|b| b.is_ascii_digit()).count(), Atom::Backreference),
        b'k' if bytes.get(after) == Some(&b'<') => (through(bytes, after, b'>'), Atom::Backreference),
        b'p' | b'P' | b'u' if bytes.get(after) == Some(&b'{') => (through(bytes, after, b'}'), Atom::Character),
        b'u' => (after + 4, Atom::Character),
        b'x' => (after + 2, Atom::Character),
        b'c' => (after + 1, Atom::Character),
        other => (start + 1 + utf8_length(other), Atom::Character),
    };
    (end.min(bytes.len()), atom)
}

/// The index after the first `close` at or after `from`, or the end of the pattern.
fn through(bytes: &[u8], from: usize, close: u8) -> usize {
    bytes[from..].iter().position(|&b| b == close).map_or(bytes.len(), |offset| from + offset + 1)
}

/// The index after the class that starts at `start` (a `[`): its first unescaped `]`.
fn class_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b']' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// `{n}`, `{n,}` or `{n,m}` at `start`: the index after it and the most copies it asks for
/// (`n` when unbounded: the engine loops over one copy beyond those). `None` when the brace
/// is not a quantifier.
fn braced_quantifier(bytes: &[u8], start: usize) -> Option<(usize, u64)> {
    let digits = |from: usize| -> (usize, Option<u64>) {
        let count = bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
        let text = std::str::from_utf8(&bytes[from..from + count]).unwrap_or_default();
        // A number too large for u64 is as large as the count can say.
        (from + count, (count > 0).then(|| text.parse().unwrap_or(u64::MAX)))
    };
    let (after_least, least) = digits(start + 1);
    let least = least?;
    match bytes.get(after_least) {
        Some(b'}') => Some((after_least + 1, least)),
        Some(b',') => match digits(after_least + 1) {
            (end, Some(most)) if bytes.get(end) == Some(&b'}') => Some((end + 1, most)),
            (end, None) if bytes.get(end) == Some(&b'}') => Some((end + 1, least)),
            _ => None,
        },
        _ => None,
    }
}

/// The length of the UTF-8 sequence that starts with `first`.
fn utf8_length(first: u8) -> usize {
    match first {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_unroll_counted_repetitions() {
        let cases = [
            ("", 0),
            ("^abc$", 3),
            ("^(a+)+$", 1),
            ("(a|b|ab)", 4),
            ("(ab){3}", 6),
            ("a{2,5}", 5),
            ("a{7,}", 7),
            ("a{0}", 1),
            ("(a{10}){10}", 100),
            ("a[ab]{400}[^ab]", 402),
            (r"\d{4}-\d{2}-\d{2}", 10),
            (r"^\p{L}{3}\u{1F600}\x41\u0041\cA\b$", 7),
            (r"[\]a-z{}]{2}", 2),
            ("é{2}", 2),
            ("a{,5}", 5),
            ("a{99999999999999999999999}", u64::MAX),
        ];
        for (pattern, positions) in cases {
            assert_eq!(scan(pattern).positions, positions, "{pattern}");
        }
    }

    #[test]
    fn look_around_and_backreferences_are_found_outside_classes() {
        let cases = [
            ("^(a+)+$", None),
            ("(?=a)b", Some((Construct::LookAhead, "(?="))),
            ("a(?!b)", Some((Construct::NegativeLookAhead, "(?!"))),
            ("(?<=a)b", Some((Construct::LookBehind, "(?<="))),
            ("(?<!a)b", Some((Construct::LookBehind, "(?<!"))),
            (r"(a)\1", Some((Construct::Backreference, r"\1"))),
            (r"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10", Some((Construct::Backreference, r"\10"))),
            (r"(?<q>')\k<q>", Some((Construct::Backreference, r"\k<q>"))),
            ("(?<name>a)", None),
            (r"[(?=]\(?=", None),
            (r"\\1", None),
            (r"[\1]", None),
            ("(?:a)(?i:b)", None),
        ];
        for (pattern, found) in cases {
            let got = scan(pattern).unsupported;
            assert_eq!(got.as_ref().map(|(c, t)| (*c, t.as_str())), found, "{pattern}");
        }
    }

    #[test]
    fn patterns_are_judged_as_they_would_compile() {
        assert_eq!(judge("^(a+)+$"), None);
        assert_eq!(judge("(?=["), None, "not a regular expression: E050's");
        assert_eq!(judge(r"^[\p{L}\p{N}][\p{L}\p{N}_.-]*[\p{L}\p{N}]$"), None);
        assert_eq!(judge(r"(a)\1"), Some(Unusable::Construct(Construct::Backreference, r"\1".into())));
        assert_eq!(judge(r"^\p{L}[\p{L}\p{N} ]{0,63}$"), Some(Unusable::TooLarge));
        assert_eq!(judge("a[ab]{5000}"), Some(Unusable::TooLarge));
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        assert_eq!(judge(&long), Some(Unusable::TooLong(MAX_PATTERN_BYTES + 1)));
        assert!(is_regex_format(&long) && is_regex("(a)\\1") && !is_regex("["));
    }
}
