//! A strict, allocation-light JSON scanner over raw bytes, for what a value tree forgets.
//!
//! A [`serde_json::Value`] has no byte positions and keeps one of two repeated member names.
//! This scanner walks the source text instead: it finds the byte span of the values that
//! diagnostics point at (descending only where something is wanted and skipping the rest),
//! reports every repeated member name, and walks a `valuePath` through a tool response
//! without building a tree. Every walk is bounded by [`MAX_SCAN_DEPTH`].

use std::collections::HashSet;

use crate::diagnostic::Span;

/// Deepest nesting the scanner follows; callers parse with a lower limit first.
pub const MAX_SCAN_DEPTH: usize = 512;

/// Why the scanner stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What was wrong.
    pub message: &'static str,
}

/// What a walk over an object or array reports, and where it wants to go.
pub trait Visit {
    /// Whether to descend into the container at `pointer`; otherwise it is skipped.
    fn wants(&self, pointer: &str) -> bool;
    /// The value at `pointer` spans `span`.
    fn value(&mut self, _pointer: &str, _span: Span) {}
    /// The member at `pointer` has its name at `span`.
    fn key(&mut self, _pointer: &str, _span: Span) {}
    /// The member at `pointer` repeats a name seen earlier in the same object.
    fn duplicate(&mut self, _pointer: &str, _span: Span) {}
}

/// Walks the whole document, reporting to `visit`.
pub fn walk(bytes: &[u8], visit: &mut dyn Visit) -> Result<(), ScanError> {
    let mut scanner = Scanner { bytes, pos: 0 };
    let mut pointer = String::new();
    scanner.skip_ws();
    scanner.visit_value(&mut pointer, 0, visit)?;
    scanner.skip_ws();
    if scanner.pos != bytes.len() {
        return Err(scanner.error("trailing characters after the document"));
    }
    Ok(())
}

/// The offset of the bracket that opens nesting level `limit + 1`, if there is one.
pub fn find_depth_excess(bytes: &[u8], limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Where a path walk ended without a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMiss {
    /// The named member is missing from an object; `depth` is the step's index.
    MissingMember {
        /// Index of the failing step.
        depth: usize,
    },
    /// The named member appears more than once.
    RepeatedMember {
        /// Index of the failing step.
        depth: usize,
    },
    /// The array has fewer elements.
    IndexOutOfRange {
        /// Index of the failing step.
        depth: usize,
        /// How many elements there are.
        len: usize,
    },
    /// The step does not fit the value found: a segment that is not an index on an array,
    /// or any step on a scalar; `found` names the JSON type there.
    WrongKind {
        /// Index of the failing step.
        depth: usize,
        /// The JSON type found.
        found: &'static str,
    },
}

/// Follows `segments` from the root of `bytes` (a document already known to be valid JSON)
/// and returns the span of the value reached. On an object a segment is a member name; on an
/// array it must be an index: ASCII digits without a leading zero, or exactly `0`.
pub fn follow(bytes: &[u8], segments: &[&str]) -> Result<Result<Span, PathMiss>, ScanError> {
    let mut scanner = Scanner { bytes, pos: 0 };
    scanner.skip_ws();
    for (depth, segment) in segments.iter().enumerate() {
        let found = scanner.peek_kind();
        let next = match (scanner.peek(), parse_index(segment)) {
            (Some(b'{'), _) => scanner.find_member(segment, depth)?,
            (Some(b'['), Some(index)) => scanner.find_element(index, depth)?,
            _ => Err(PathMiss::WrongKind { depth, found }),
        };
        if let Err(miss) = next {
            return Ok(Err(miss));
        }
    }
    let start = scanner.pos;
    scanner.skip_value(0)?;
    Ok(Ok(Span::new(start, scanner.pos)))
}

/// An array index as a path segment: digits, no leading zero unless it is `0`.
pub fn parse_index(segment: &str) -> Option<usize> {
    let digits = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    if !digits || (segment.len() > 1 && segment.starts_with('0')) {
        return None;
    }
    segment.parse().ok()
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn error(&self, message: &'static str) -> ScanError {
        ScanError { offset: self.pos, message }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_kind(&self) -> &'static str {
        match self.peek() {
            Some(b'{') => "object",
            Some(b'[') => "array",
            Some(b'"') => "string",
            Some(b't' | b'f') => "boolean",
            Some(b'n') => "null",
            _ => "number",
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, message: &'static str) -> Result<(), ScanError> {
        self.skip_ws();
        if self.peek() != Some(byte) {
            return Err(self.error(message));
        }
        self.pos += 1;
        Ok(())
    }

    /// At `{` or `[`: checks the depth, steps in, and returns true when the container is
    /// empty and already closed again.
    fn open(&mut self, close: u8, depth: usize) -> Result<bool, ScanError> {
        if depth > MAX_SCAN_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.pos += 1;
        Ok(self.close_if_empty(close))
    }

    /// After `{` or `[` (and white space): true when the container is empty and now closed.
    fn close_if_empty(&mut self, close: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(close) {
            self.pos += 1;
            return true;
        }
        false
    }

    /// After a member or element: true when the container closed, false after a comma.
    fn comma_or_close(&mut self, close: u8) -> Result<bool, ScanError> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.skip_ws();
                Ok(false)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(true)
            }
            _ => Err(self.error("expected `,` or a closing bracket")),
        }
    }

    fn visit_value(&mut self, pointer: &mut String, depth: usize, visit: &mut dyn Visit) -> Result<(), ScanError> {
        let start = self.pos;
        let descend = matches!(self.peek(), Some(b'{' | b'[')) && visit.wants(pointer);
        match self.peek() {
            Some(b'{') if descend => self.visit_object(pointer, depth + 1, visit)?,
            Some(b'[') if descend => self.visit_array(pointer, depth + 1, visit)?,
            _ => self.skip_value(depth)?,
        }
        visit.value(pointer, Span::new(start, self.pos));
        Ok(())
    }

    fn visit_object(&mut self, pointer: &mut String, depth: usize, visit: &mut dyn Visit) -> Result<(), ScanError> {
        if self.open(b'}', depth)? {
            return Ok(());
        }
        let mut seen = HashSet::new();
        loop {
            let key_start = self.pos;
            let key = self.read_string()?;
            let key_span = Span::new(key_start, self.pos);
            let parent_len = pointer.len();
            crate::pointer::push_escaped(pointer, &key);
            visit.key(pointer, key_span);
            if !seen.insert(key) {
                visit.duplicate(pointer, key_span);
            }
            self.expect(b':', "expected `:` after a member name")?;
            self.skip_ws();
            self.visit_value(pointer, depth, visit)?;
            pointer.truncate(parent_len);
            if self.comma_or_close(b'}')? {
                return Ok(());
            }
        }
    }

    fn visit_array(&mut self, pointer: &mut String, depth: usize, visit: &mut dyn Visit) -> Result<(), ScanError> {
        if self.open(b']', depth)? {
            return Ok(());
        }
        let mut index = 0usize;
        loop {
            let parent_len = pointer.len();
            pointer.push('/');
            pointer.push_str(&index.to_string());
            self.visit_value(pointer, depth, visit)?;
            pointer.truncate(parent_len);
            index += 1;
            if self.comma_or_close(b']')? {
                return Ok(());
            }
        }
    }

    /// Inside an object at the cursor, moves to the value of member `name`.
    fn find_member(&mut self, name: &str, depth: usize) -> Result<Result<(), PathMiss>, ScanError> {
        self.pos += 1;
        if self.close_if_empty(b'}') {
            return Ok(Err(PathMiss::MissingMember { depth }));
        }
        let mut found = None;
        loop {
            let key = self.read_string()?;
            self.expect(b':', "expected `:` after a member name")?;
            self.skip_ws();
            if key == name {
                if found.is_some() {
                    return Ok(Err(PathMiss::RepeatedMember { depth }));
                }
                found = Some(self.pos);
            }
            self.skip_value(0)?;
            if self.comma_or_close(b'}')? {
                break;
            }
        }
        // The whole object was read so that a repetition after the first match is noticed.
        match found {
            Some(pos) => {
                self.pos = pos;
                Ok(Ok(()))
            }
            None => Ok(Err(PathMiss::MissingMember { depth })),
        }
    }

    /// Inside an array at the cursor, moves to element `index`.
    fn find_element(&mut self, index: usize, depth: usize) -> Result<Result<(), PathMiss>, ScanError> {
        self.pos += 1;
        if self.close_if_empty(b']') {
            return Ok(Err(PathMiss::IndexOutOfRange { depth, len: 0 }));
        }
        let mut len = 0;
        loop {
            if len == index {
                return Ok(Ok(()));
            }
            self.skip_value(0)?;
            len += 1;
            if self.comma_or_close(b']')? {
                return Ok(Err(PathMiss::IndexOutOfRange { depth, len }));
            }
        }
    }

    fn skip_value(&mut self, depth: usize) -> Result<(), ScanError> {
        if depth > MAX_SCAN_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                if self.close_if_empty(b'}') {
                    return Ok(());
                }
                loop {
                    self.skip_string()?;
                    self.expect(b':', "expected `:` after a member name")?;
                    self.skip_ws();
                    self.skip_value(depth + 1)?;
                    if self.comma_or_close(b'}')? {
                        return Ok(());
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                if self.close_if_empty(b']') {
                    return Ok(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if self.comma_or_close(b']')? {
                        return Ok(());
                    }
                }
            }
            Some(b'"') => self.skip_string(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("expected a JSON value")),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), ScanError> {
        if !self.bytes[self.pos..].starts_with(word) {
            return Err(self.error("invalid literal"));
        }
        self.pos += word.len();
        Ok(())
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<(), ScanError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        Ok(())
    }

    fn skip_string(&mut self) -> Result<(), ScanError> {
        self.scan_string(None)
    }

    fn read_string(&mut self) -> Result<String, ScanError> {
        let mut out = String::new();
        self.scan_string(Some(&mut out))?;
        Ok(out)
    }

    /// Reads a string at the cursor, decoding it into `out` when given.
    fn scan_string(&mut self, mut out: Option<&mut String>) -> Result<(), ScanError> {
        if self.peek() != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        self.pos += 1;
        let mut run_start = self.pos;
        loop {
            let Some(b) = self.peek() else {
                return Err(self.error("unterminated string"));
            };
            match b {
                b'"' | b'\\' => {
                    if let Some(out) = out.as_deref_mut() {
                        out.push_str(self.utf8(run_start, self.pos)?);
                    }
                    self.pos += 1;
                    if b == b'"' {
                        return Ok(());
                    }
                    let ch = self.escape()?;
                    if let Some(out) = out.as_deref_mut() {
                        out.push(ch);
                    }
                    run_start = self.pos;
                }
                0x00..=0x1f => return Err(self.error("control character in a string")),
                _ => self.pos += 1,
            }
        }
    }

    fn utf8(&self, start: usize, end: usize) -> Result<&str, ScanError> {
        std::str::from_utf8(&self.bytes[start..end]).map_err(|_| ScanError { offset: start, message: "invalid UTF-8" })
    }

    /// After a backslash: the escaped character (a lone surrogate decodes to U+FFFD).
    fn escape(&mut self) -> Result<char, ScanError> {
        let b = self.peek().ok_or_else(|| self.error("unterminated escape"))?;
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                if (0xD800..0xDC00).contains(&high) && self.bytes[self.pos..].starts_with(b"\\u") {
                    let save = self.pos;
                    self.pos += 2;
                    let low = self.hex4()?;
                    if (0xDC00..0xE000).contains(&low) {
                        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        return Ok(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    self.pos = save;
                }
                char::from_u32(high).unwrap_or('\u{FFFD}')
            }
            _ => return Err(self.error("invalid escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, ScanError> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or_else(|| self.error("short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.error("invalid \\u escape"))?;
        let value = u32::from_str_radix(text, 16).map_err(|_| self.error("invalid \\u escape"))?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.error("invalid \\u escape"));
        }
        self.pos += 4;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Record {
        values: Vec<(String, Span)>,
        duplicates: Vec<String>,
    }

    impl Visit for Record {
        fn wants(&self, _: &str) -> bool {
            true
        }
        fn value(&mut self, pointer: &str, span: Span) {
            self.values.push((pointer.to_owned(), span));
        }
        fn duplicate(&mut self, pointer: &str, _: Span) {
            self.duplicates.push(pointer.to_owned());
        }
    }

    fn spans(text: &str) -> Record {
        let mut record = Record::default();
        walk(text.as_bytes(), &mut record).unwrap();
        record
    }

    #[test]
    fn walk_reports_every_value_with_its_span() {
        let text = r#"{"a": [1, {"b~/": "x"}], "c": null}"#;
        let got: Vec<_> = spans(text).values.iter().map(|(p, s)| format!("{p}={}", &text[s.start..s.end])).collect();
        assert_eq!(
            got,
            [
                "/a/0=1",
                "/a/1/b~0~1=\"x\"",
                r#"/a/1={"b~/": "x"}"#,
                r#"/a=[1, {"b~/": "x"}]"#,
                "/c=null",
                format!("={text}").as_str(),
            ]
        );
    }

    #[test]
    fn walk_reports_repeated_names_after_the_first() {
        let record = spans(r#"{"a": 1, "a": 2, "b": {"x": 1, "\u0078": 2}, "a": 3}"#);
        assert_eq!(record.duplicates, ["/a", "/b/x", "/a"]);
    }

    #[test]
    fn follow_finds_members_and_elements() {
        let text = br#"{"rows": [{"count": 12}, {"count": "7"}], "dup": {"k": 1, "k": 2}}"#;
        let span = follow(text, &["rows", "1", "count"]).unwrap().unwrap();
        assert_eq!(&text[span.start..span.end], br#""7""#);
        assert_eq!(follow(text, &["rows", "2"]).unwrap(), Err(PathMiss::IndexOutOfRange { depth: 1, len: 2 }));
        assert_eq!(follow(text, &["rows", "01"]).unwrap(), Err(PathMiss::WrongKind { depth: 1, found: "array" }));
        assert_eq!(follow(text, &["dup", "k"]).unwrap(), Err(PathMiss::RepeatedMember { depth: 1 }));
        assert_eq!(
            follow(text, &["rows", "0", "count", "x"]).unwrap(),
            Err(PathMiss::WrongKind { depth: 3, found: "number" })
        );
        assert_eq!(follow(b"[5]", &["0"]).unwrap().unwrap(), Span::new(1, 2));
    }

    #[test]
    fn depth_excess_ignores_brackets_in_strings() {
        assert_eq!(find_depth_excess(br#"["[[[", [[1]]]"#, 2), Some(9));
        assert_eq!(find_depth_excess(br#"["\"[[[", [1]]"#, 2), None);
    }
}
