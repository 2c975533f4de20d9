//! Text from sites made storable: the one rule every text column written from a site's data
//! passes through (error bodies, attempt reasons, raw values, listing names and descriptions,
//! stale errors, tool names and arguments in the call log).
//!
//! PostgreSQL refuses NUL in `TEXT`; SQLite keeps it. A site decides what its answers and
//! manifest strings hold, so without this rule one NUL failed a whole statement on PostgreSQL
//! (a commit group of many users' results) and was kept as-is on SQLite. With it, both stores
//! keep the same text: each NUL becomes U+FFFD, the replacement character, which says that
//! something unreadable was there without inventing what. Anything else a Rust `&str` holds
//! is valid UTF-8 already, which both stores take.

use std::borrow::Cow;

/// What NUL becomes in stored text.
pub const NUL_STORED_AS: char = '\u{FFFD}';

/// `text` as the store keeps it: unchanged (and not copied) unless it holds NUL, whose every
/// occurrence becomes [`NUL_STORED_AS`].
pub fn storable(text: &str) -> Cow<'_, str> {
    if text.contains('\0') { Cow::Owned(text.replace('\0', "\u{FFFD}")) } else { Cow::Borrowed(text) }
}

/// `text` in at most `max_bytes`: whole when it fits, otherwise cut (at a character boundary)
/// and followed by `… (N bytes)` saying how long it was, the note included in the bound, so
/// that clipping again changes nothing. For logged texts a client chooses, whose length must
/// not decide how much the log holds.
pub fn clipped(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let note = format!("… ({} bytes)", text.len());
    let mut end = max_bytes.saturating_sub(note.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}{note}", &text[..end]))
}

/// `arguments` (JSON) as the call log keeps them: whole up to [`LOGGED_ARGUMENTS_BYTES`](crate::LOGGED_ARGUMENTS_BYTES),
/// beyond that a JSON string saying how large they were (arguments are always an object, so
/// the two cannot be mistaken).
pub fn logged_arguments(arguments: &str) -> Cow<'_, str> {
    if arguments.len() <= crate::LOGGED_ARGUMENTS_BYTES {
        return arguments.into();
    }
    let note =
        format!("not kept: {} bytes of arguments, over the log's {}", arguments.len(), crate::LOGGED_ARGUMENTS_BYTES);
    serde_json::Value::String(note).to_string().into()
}

/// [`storable`] over an optional text.
pub(crate) fn storable_opt(text: Option<&str>) -> Option<Cow<'_, str>> {
    text.map(storable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nul_changes() {
        assert!(matches!(storable("the tool answered 500: ü\t\u{1}"), Cow::Borrowed(_)));
        assert_eq!(storable("data.to\0tal\0"), "data.to\u{FFFD}tal\u{FFFD}");
        assert_eq!(storable(""), "");
    }

    #[test]
    fn clipped_texts_say_how_long_they_were() {
        assert!(matches!(clipped("abc", 3), Cow::Borrowed("abc")));
        // "… (20 bytes)" is 14 bytes: 16 leaves two of the text.
        let cut = clipped("abcdefghijklmnopqrst", 16);
        assert_eq!(cut, "ab… (20 bytes)");
        assert!(matches!(clipped(&cut, 16), Cow::Borrowed(_)), "clipping again changes nothing");
        // Never inside a character: "é" is two bytes.
        assert_eq!(clipped("aé………………", 16), "a… (21 bytes)");
    }
}
