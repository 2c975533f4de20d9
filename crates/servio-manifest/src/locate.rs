//! Fills in byte spans, lines and columns of diagnostics from the source text.
//!
//! Runs once per document and only when there is something to locate: one scan that descends
//! only into containers on the way to a wanted pointer and skips everything else.

use std::collections::{HashMap, HashSet};

use crate::diagnostic::{Anchor, Diagnostic, Span};
use crate::pointer::Pointer;
use crate::scan::{self, Visit};

/// Sets `span`, `line` and `column` of every diagnostic from `source`.
pub fn locate(source: &[u8], diagnostics: &mut [Diagnostic]) {
    locate_all(source, &mut [diagnostics]);
}

/// [`locate`] for several lists at once: one scan of the source and one line index for all.
pub fn locate_all(source: &[u8], lists: &mut [&mut [Diagnostic]]) {
    if lists.iter().all(|list| list.is_empty()) {
        return;
    }
    let mut finder = Finder::default();
    for diagnostic in lists.iter().flat_map(|list| list.iter()) {
        let pointer = match &diagnostic.anchor {
            Anchor::Value(p) => p,
            Anchor::Key(p) => p,
            Anchor::Offset(_) => continue,
        };
        finder.want(pointer);
    }
    if !finder.wanted.is_empty() {
        // The document parsed before validation ran, so the scan cannot fail; if it somehow
        // does, diagnostics keep the spans found so far and fall back to the start.
        let _ = scan::walk(source, &mut finder);
    }
    let lines = LineIndex::new(source);
    for diagnostic in lists.iter_mut().flat_map(|list| list.iter_mut()) {
        let span = match &diagnostic.anchor {
            Anchor::Offset(span) => Some(*span),
            Anchor::Value(p) => finder.values.get(p.as_str()).copied(),
            Anchor::Key(p) => finder.keys.get(p.as_str()).or_else(|| finder.values.get(p.as_str())).copied(),
        };
        diagnostic.span = span.unwrap_or_default();
        (diagnostic.line, diagnostic.column) = lines.line_column(source, diagnostic.span.start);
    }
}

/// Every member name that repeats an earlier one in the same object: pointer and name span.
pub fn find_duplicates(source: &[u8]) -> Vec<(Pointer, Span)> {
    struct Duplicates(Vec<(Pointer, Span)>);
    impl Visit for Duplicates {
        fn wants(&self, _: &str) -> bool {
            true
        }
        fn duplicate(&mut self, pointer: &str, span: Span) {
            self.0.push((Pointer::parse(pointer).unwrap_or_default(), span));
        }
    }
    let mut found = Duplicates(Vec::new());
    let _ = scan::walk(source, &mut found);
    found.0
}

#[derive(Default)]
struct Finder {
    /// Every wanted pointer and every prefix of one: the containers worth entering.
    wanted: HashSet<String>,
    values: HashMap<String, Span>,
    keys: HashMap<String, Span>,
}

impl Finder {
    fn want(&mut self, pointer: &Pointer) {
        let text = pointer.as_str();
        if !self.wanted.insert(text.to_owned()) {
            return;
        }
        // Prefixes from the longest: once one is known, so are all shorter ones.
        for (i, _) in text.rmatch_indices('/') {
            if !self.wanted.insert(text[..i].to_owned()) {
                break;
            }
        }
    }
}

impl Visit for Finder {
    fn wants(&self, pointer: &str) -> bool {
        self.wanted.contains(pointer)
    }

    // With repeated member names the later one wins, as it does in the parsed value.
    fn value(&mut self, pointer: &str, span: Span) {
        if self.wanted.contains(pointer) {
            self.values.insert(pointer.to_owned(), span);
        }
    }

    fn key(&mut self, pointer: &str, span: Span) {
        if self.wanted.contains(pointer) {
            self.keys.insert(pointer.to_owned(), span);
        }
    }
}

/// Byte offsets to 1-based lines and character columns, each answered in time independent of
/// the length of the line: a minified manifest is one line of megabytes, and counting its
/// characters up to each of 40,000 diagnostics took minutes.
pub struct LineIndex {
    starts: Vec<usize>,
    /// The characters before each block of [`BLOCK`] bytes.
    chars_before_block: Vec<usize>,
}

/// The bytes between two checkpoints of the character count.
const BLOCK: usize = 256;

impl LineIndex {
    /// Indexes the line starts of `source`, and its characters every `BLOCK` bytes.
    pub fn new(source: &[u8]) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(line_breaks(source));
        let mut chars_before_block = Vec::with_capacity(source.len() / BLOCK + 1);
        let mut chars = 0;
        for block in source.chunks(BLOCK) {
            chars_before_block.push(chars);
            chars += count_chars(block);
        }
        LineIndex { starts, chars_before_block }
    }

    /// The 1-based line and column (in characters) of `offset`.
    pub fn line_column(&self, source: &[u8], offset: usize) -> (usize, usize) {
        let offset = offset.min(source.len());
        let line = self.starts.partition_point(|&start| start <= offset);
        let start = self.starts[line - 1];
        let chars = self.chars_before(source, offset) - self.chars_before(source, start);
        (line, chars + 1)
    }

    /// The characters of `source` before byte `offset`.
    fn chars_before(&self, source: &[u8], offset: usize) -> usize {
        let block = offset / BLOCK;
        let Some(&before) = self.chars_before_block.get(block) else { return count_chars(source) };
        before + count_chars(&source[block * BLOCK..offset])
    }

    /// The byte range of 1-based `line`, without its line break.
    pub fn line_span(&self, source: &[u8], line: usize) -> Span {
        let start = self.starts[line - 1];
        let mut end = self.starts.get(line).map_or(source.len(), |next| next - 1);
        if end > start && source[end - 1] == b'\r' {
            end -= 1;
        }
        Span::new(start, end)
    }
}

/// The offsets just after each line feed.
fn line_breaks(source: &[u8]) -> impl Iterator<Item = usize> + '_ {
    source.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1)
}

/// The UTF-8 characters in `bytes`: every byte that does not continue a character.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Code;

    #[test]
    fn locates_values_keys_and_missing_members() {
        let text = "{\n  \"server\": {},\n  \"ñame\": \"x\"\n}";
        let mut diagnostics = vec![
            Diagnostic::missing(Code::RequiredMember, &Pointer::root().child("server"), "url", "missing"),
            Diagnostic::at_key(Code::UnknownField, Pointer::root().child("ñame"), "unknown"),
            Diagnostic::at(Code::MemberType, Pointer::root().child("ñame"), "wrong"),
        ];
        locate(text.as_bytes(), &mut diagnostics);
        let got: Vec<_> = diagnostics.iter().map(|d| (d.pointer.as_str(), d.line, d.column)).collect();
        assert_eq!(got, [("/server/url", 2, 13), ("/ñame", 3, 3), ("/ñame", 3, 11)]);
        assert_eq!(&text[diagnostics[2].span.start..diagnostics[2].span.end], "\"x\"");
    }

    #[test]
    fn columns_on_a_long_line_count_characters() {
        let text = format!("{{\"a\": \"{}\", \"b\": 1}}", "é".repeat(1000));
        let lines = LineIndex::new(text.as_bytes());
        let b = text.find("\"b\"").unwrap();
        assert_eq!(lines.line_column(text.as_bytes(), b), (1, 1 + text[..b].chars().count()));
        assert_eq!(lines.line_column(text.as_bytes(), text.len()), (1, 1 + text.chars().count()));
    }

    #[test]
    fn duplicates_are_found_with_their_pointers() {
        let found = find_duplicates(br#"{"tools": [{"name": "a", "name": "b"}]}"#);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.as_str(), "/tools/0/name");
        assert_eq!(found[0].1, Span::new(25, 31));
    }
}
