//! Reading a metric's number out of a tool response (interpretation §7).
//!
//! A [`ValuePath`] is a dotted path, deliberately not JSONPath. [`extract`] walks it through
//! the raw response text (so a member name that repeats on the path is noticed, and a number
//! too large for `f64` is seen as written) and [`reduce`] turns the value found into a finite
//! number, or says why the value is dropped. Dropped values are never zero.

use std::fmt;

use crate::scan::{self, PathMiss};

/// A parsed `valuePath`: non-empty segments separated by `.`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuePath {
    text: String,
}

/// Why a `valuePath` is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", help.as_ref().map(|help| format!(" ({help})")).unwrap_or_default())]
pub struct ValuePathError {
    /// What is wrong.
    pub message: String,
    /// The path as it should probably be written.
    pub help: Option<String>,
    /// The path rewritten, when the rewrite is mechanical (JSONPath's `$.a[0].b` is `a.0.b`, an
    /// empty segment dropped) and gives a path that parses.
    pub rewrite: Option<String>,
}

impl ValuePath {
    /// Parses a dotted path such as `data.rows.0.count`.
    pub fn parse(text: &str) -> Result<ValuePath, ValuePathError> {
        let problem = |message: &str, rewrite: Option<String>| ValuePathError {
            message: message.to_owned(),
            help: Some(rewrite.as_ref().map_or_else(
                || "write a dotted path to one value, such as data.rows.0.count".to_owned(),
                |path| format!("write {path}"),
            )),
            rewrite,
        };
        if text.is_empty() {
            return Err(ValuePathError {
                help: Some("write a dotted path such as data.totals.revenue".into()),
                ..problem("valuePath is empty", None)
            });
        }
        if text.starts_with('$') {
            return Err(problem("valuePath is not JSONPath: it has no leading `$`", rewrite_jsonpath(text)));
        }
        if text.contains(['[', ']']) {
            return Err(problem(
                "valuePath has no brackets: array indexes are segments of their own",
                rewrite_jsonpath(text),
            ));
        }
        if text.contains('*') {
            return Err(ValuePathError {
                help: Some("name the one value to collect, with an index such as rows.0.count".into()),
                ..problem("valuePath has no wildcards: it selects exactly one value", None)
            });
        }
        if text.split('.').any(str::is_empty) {
            let joined = text.split('.').filter(|s| !s.is_empty()).collect::<Vec<_>>().join(".");
            return Err(problem("valuePath has an empty segment", Some(joined).filter(|path| !path.is_empty())));
        }
        Ok(ValuePath { text: text.to_owned() })
    }

    /// The segments, in order.
    pub fn segments(&self) -> Vec<&str> {
        self.text.split('.').collect()
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for ValuePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The dotted form of a JSONPath such as `$.data.rows[0]['count']`, when it has one: a
/// wildcard, a filter or anything else that is not a plain name or index has none.
fn rewrite_jsonpath(text: &str) -> Option<String> {
    let mut out = String::new();
    for ch in text.trim_start_matches('$').chars() {
        match ch {
            '[' => out.push('.'),
            ']' | '\'' | '"' => {}
            _ => out.push(ch),
        }
    }
    let segments: Vec<&str> = out.split('.').filter(|s| !s.is_empty()).collect();
    let path = segments.join(".");
    ValuePath::parse(&path).ok().map(|_| path)
}

/// A value found and reduced.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// The finite number.
    pub value: f64,
    /// The value exactly as the response had it (JSON text), kept for audit.
    pub raw: String,
}

/// Why no value was stored for a period.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Dropped {
    /// A reason a site owner can act on.
    pub reason: String,
    /// The raw value found at the path, when the path led to one.
    pub raw: Option<String>,
}

/// The most bytes of JSON text a value may take: its raw text is kept beside the number for
/// audit, so a site could otherwise have the platform store megabytes per period (a number
/// written with two million zeros is still a finite number). A real figure, even a currency
/// string, takes a few dozen bytes.
pub const MAX_RAW_BYTES: usize = 1024;

/// The bytes of a raw value kept when it is dropped for being longer than [`MAX_RAW_BYTES`].
const KEPT_OF_LONG_RAW: usize = 64;

/// Walks `path` through the JSON `response` and reduces what it finds. A value whose JSON text
/// is longer than [`MAX_RAW_BYTES`] is dropped unread, its first bytes kept with its length.
pub fn extract(response: &[u8], path: &ValuePath) -> Result<Extracted, Dropped> {
    if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(response) {
        return Err(Dropped { reason: format!("the response is not valid JSON: {error}"), raw: None });
    }
    let segments = path.segments();
    let span = match scan::follow(response, &segments) {
        Ok(Ok(span)) => span,
        Ok(Err(miss)) => {
            return Err(Dropped { reason: describe_miss(&miss, &segments), raw: None });
        }
        Err(error) => {
            return Err(Dropped { reason: format!("the response could not be read: {}", error.message), raw: None });
        }
    };
    let found = &response[span.start..span.end];
    if found.len() > MAX_RAW_BYTES {
        return Err(Dropped {
            reason: format!(
                "the value is {} bytes of JSON, more than the {} a value may take",
                crate::schema::grouped(found.len()),
                crate::schema::grouped(MAX_RAW_BYTES)
            ),
            raw: Some(format!("{}… ({} bytes)", lossy_prefix(found, KEPT_OF_LONG_RAW), found.len())),
        });
    }
    // The span lies on value boundaries of a document that parsed as UTF-8 JSON.
    let raw = String::from_utf8_lossy(found).into_owned();
    match reduce_raw(&raw) {
        Ok(value) => Ok(Extracted { value, raw }),
        Err(reason) => Err(Dropped { reason, raw: Some(raw) }),
    }
}

/// The first `at_most` bytes of `text`, cut back to a character boundary.
fn lossy_prefix(text: &[u8], at_most: usize) -> String {
    let text = String::from_utf8_lossy(&text[..at_most.min(text.len())]).into_owned();
    text.trim_end_matches(char::REPLACEMENT_CHARACTER).to_owned()
}

fn describe_miss(miss: &PathMiss, segments: &[&str]) -> String {
    let upto = |depth: usize| {
        if depth == 0 { "the response".to_owned() } else { format!("`{}`", segments[..depth].join(".")) }
    };
    match *miss {
        PathMiss::MissingMember { depth } => {
            format!("no member `{}` in {}", segments[depth], upto(depth))
        }
        PathMiss::RepeatedMember { depth } => {
            format!("member `{}` appears more than once in {}", segments[depth], upto(depth))
        }
        PathMiss::IndexOutOfRange { depth, len } => {
            format!(
                "index {} is out of range: {} has {len} element{}",
                segments[depth],
                upto(depth),
                if len == 1 { "" } else { "s" }
            )
        }
        PathMiss::WrongKind { depth, found: "array" } => {
            format!("{} is an array and `{}` is not an index (digits, no leading zero)", upto(depth), segments[depth])
        }
        PathMiss::WrongKind { depth, found } => {
            format!("{} is {}, so it has no `{}`", upto(depth), article(found), segments[depth])
        }
    }
}

fn article(kind: &str) -> String {
    match kind {
        "object" | "array" => format!("an {kind}"),
        "null" => "null".to_owned(),
        _ => format!("a {kind}"),
    }
}

/// Reduces a JSON value, given as its JSON text, to a finite number.
fn reduce_raw(raw: &str) -> Result<f64, String> {
    match raw.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => match raw.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(n),
            _ => Err(format!("the number {raw} overflows to infinity")),
        },
        Some(b'"') => {
            let text: String = serde_json::from_str(raw).map_err(|e| format!("unreadable string: {e}"))?;
            reduce(&text).ok_or_else(|| format!("the string {raw} is not a number"))
        }
        Some(b'n') => Err("the value is null".to_owned()),
        Some(b't' | b'f') => Err(format!("the value is a boolean ({raw}), not a number")),
        Some(b'{') => Err("the value is an object, not a number".to_owned()),
        Some(b'[') => Err("the value is an array, not a number".to_owned()),
        _ => Err("no value".to_owned()),
    }
}

/// Reduces a string to a finite number by the grammar of interpretation §7, or `None`.
///
/// Accepted: white space around; an optional sign; an optional currency symbol (one character
/// of Unicode category Sc) before the number (on either side of the sign) or after it, at most
/// one space between symbol and number; digits, or groups of three after a first group of one
/// to three digits not starting with 0; an optional fraction.
pub fn reduce(text: &str) -> Option<f64> {
    let chars: Vec<char> = text.trim().chars().collect();
    let mut at = 0;
    let peek = |at: usize| chars.get(at).copied();
    let mut sign = None;
    let mut currency = false;
    if let Some(c @ ('-' | '+')) = peek(at) {
        sign = Some(c);
        at += 1;
    }
    if peek(at).is_some_and(is_currency) {
        currency = true;
        at += 1;
        if peek(at).is_some_and(is_space) {
            at += 1;
        }
        if let (None, Some(c @ ('-' | '+'))) = (sign, peek(at)) {
            sign = Some(c);
            at += 1;
        }
    }
    let (digits, used) = number(&chars[at..])?;
    at += used;
    if !currency {
        let spaced = peek(at).is_some_and(is_space);
        let symbol_at = at + usize::from(spaced);
        if peek(symbol_at).is_some_and(is_currency) {
            at = symbol_at + 1;
        }
    }
    if at != chars.len() {
        return None;
    }
    let magnitude: f64 = digits.parse().ok()?;
    let value = if sign == Some('-') { -magnitude } else { magnitude };
    value.is_finite().then_some(value)
}

/// The number at the start of `chars`: its plain digits (commas removed) and its length.
fn number(chars: &[char]) -> Option<(String, usize)> {
    let run = |from: usize| chars[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let first = run(0);
    if first == 0 {
        return None;
    }
    let mut at = first;
    let mut digits: String = chars[..first].iter().collect();
    if chars.get(at) == Some(&',') {
        if first > 3 || chars[0] == '0' {
            return None;
        }
        while chars.get(at) == Some(&',') {
            if run(at + 1) != 3 {
                return None;
            }
            digits.extend(&chars[at + 1..at + 4]);
            at += 4;
        }
    }
    if chars.get(at) == Some(&'.') {
        let fraction = run(at + 1);
        if fraction == 0 {
            return None;
        }
        digits.push('.');
        digits.extend(&chars[at + 1..at + 1 + fraction]);
        at += 1 + fraction;
    }
    Some((digits, at))
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\u{00A0}' | '\u{202F}')
}

/// Unicode general category Sc (currency symbol), from the Unicode 17 character database.
fn is_currency(c: char) -> bool {
    matches!(c,
        '$' | '\u{A2}'..='\u{A5}' | '\u{58F}' | '\u{60B}' | '\u{7FE}'..='\u{7FF}' | '\u{9F2}'..='\u{9F3}'
        | '\u{9FB}' | '\u{AF1}' | '\u{BF9}' | '\u{E3F}' | '\u{17DB}' | '\u{20A0}'..='\u{20C1}'
        | '\u{A838}' | '\u{FDFC}' | '\u{FE69}' | '\u{FF04}' | '\u{FFE0}'..='\u{FFE1}' | '\u{FFE5}'..='\u{FFE6}'
        | '\u{11FDD}'..='\u{11FE0}' | '\u{1E2FF}' | '\u{1ECB0}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_of_section_7() {
        let accepted = [
            ("2340", 2340.0),
            ("$2,340.00", 2340.0),
            ("-€12.5", -12.5),
            ("12 ₪", 12.0),
            ("007", 7.0),
            ("-$5", -5.0),
            ("$-5", -5.0),
            ("+5", 5.0),
            ("  42\u{2003}", 42.0),
            ("1,234,567.5", 1234567.5),
            ("€\u{A0}5", 5.0),
            ("5\u{202F}€", 5.0),
            ("0.5", 0.5),
            ("¥1000", 1000.0),
        ];
        for (text, want) in accepted {
            assert_eq!(reduce(text), Some(want), "{text:?}");
        }
        let rejected = [
            "2 340", "5.", "0,123", "R$ 5", "CHF 5", "no sales", "", "NaN", "Infinity", "1.234,56", "12%", "(5)", "$",
            "-", "$$5", "5$$", "$5$", "--5", "$  5", ".5", "1,23", "1,2345", "1234,567", "- 5", "5-", "1e5", "0x10",
            "١٢",
        ];
        for text in rejected {
            assert_eq!(reduce(text), None, "{text:?}");
        }
        assert_eq!(reduce(&"9".repeat(400)), None, "overflow");
    }

    /// Issue 41, finding 8: a number written with two million zeros (a finite number) was kept
    /// whole as the raw value of every period (60 values: +387 MiB).
    #[test]
    fn a_value_longer_than_the_bound_is_dropped_with_its_length_and_a_prefix() {
        let zeros = format!("0.{}1", "0".repeat(2_000_000));
        for text in [zeros.clone(), format!("\"{zeros}\""), format!("[{}]", "1,".repeat(600) + "1")] {
            let response = format!(r#"{{"total": {text}}}"#);
            let dropped = extract(response.as_bytes(), &ValuePath::parse("total").unwrap()).unwrap_err();
            assert!(dropped.reason.contains("more than the 1,024 a value may take"), "{}", dropped.reason);
            let raw = dropped.raw.unwrap();
            assert!(raw.len() < 100 && raw.ends_with(&format!("… ({} bytes)", text.len())), "{raw}");
        }
        let longest = format!("\"{}1\"", " ".repeat(MAX_RAW_BYTES - 3));
        let response = format!(r#"{{"total": {longest}}}"#);
        assert!(extract(response.as_bytes(), &ValuePath::parse("total").unwrap()).is_ok(), "at the bound");
    }

    #[test]
    fn extraction_keeps_the_raw_value_and_explains_drops() {
        let response =
            br#"{"data": {"totals": {"revenue": "$2,340.00", "orders": null, "n": 1e400}}, "rows": [{"count": 12}]}"#;
        let path = |p: &str| ValuePath::parse(p).unwrap();
        assert_eq!(
            extract(response, &path("data.totals.revenue")),
            Ok(Extracted { value: 2340.0, raw: "\"$2,340.00\"".into() })
        );
        assert_eq!(extract(response, &path("rows.0.count")).unwrap().value, 12.0);
        let reason = |p: &str| extract(response, &path(p)).unwrap_err().reason;
        assert_eq!(reason("data.totals.orders"), "the value is null");
        assert_eq!(reason("data.totals.n"), "the number 1e400 overflows to infinity");
        assert_eq!(reason("data.total"), "no member `total` in `data`");
        assert_eq!(reason("rows.1"), "index 1 is out of range: `rows` has 1 element");
        assert_eq!(reason("rows.x"), "`rows` is an array and `x` is not an index (digits, no leading zero)");
        assert!(extract(b"{", &path("a")).unwrap_err().reason.starts_with("the response is not valid JSON"));
    }

    #[test]
    fn value_paths_are_not_jsonpath() {
        assert!(ValuePath::parse("data.rows.0.count").is_ok());
        let err = ValuePath::parse("$.data.rows[0].count").unwrap_err();
        assert_eq!(err.help.as_deref(), Some("write data.rows.0.count"));
        for bad in ["", "a..b", ".a", "a.", "rows.*.count", "rows[0]"] {
            assert!(ValuePath::parse(bad).is_err(), "{bad:?}");
        }
    }
}
