//! Did-you-mean suggestions for misspelt names.

/// The candidate closest to `name`, if it is close enough to be a likely typo: an edit
/// distance of at most a third of the longer word (and at least 1), or equal but for case.
pub fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|&candidate| (strsim::damerau_levenshtein(&name.to_lowercase(), &candidate.to_lowercase()), candidate))
        .filter(|&(distance, candidate)| distance <= (name.chars().count().max(candidate.len()) / 3).max(1))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

/// A character as a message shows it: quoted, escaped if invisible, and named, as in
/// `' ' (space)` or `'é' (U+00E9)`, so that a space, a tab and a no-break space read differently.
pub fn describe_char(c: char) -> String {
    let name = match c {
        ' ' => "space",
        '\t' => "tab",
        '\n' => "line feed",
        '\r' => "carriage return",
        '!' => "exclamation mark",
        '"' => "quotation mark",
        '#' => "number sign",
        '$' => "dollar sign",
        '%' => "percent sign",
        '&' => "ampersand",
        '\'' => "apostrophe",
        '(' => "left parenthesis",
        ')' => "right parenthesis",
        '*' => "asterisk",
        '+' => "plus sign",
        ',' => "comma",
        '/' => "slash",
        ':' => "colon",
        ';' => "semicolon",
        '<' => "less-than sign",
        '=' => "equals sign",
        '>' => "greater-than sign",
        '?' => "question mark",
        '@' => "at sign",
        '[' => "left square bracket",
        '\\' => "backslash",
        ']' => "right square bracket",
        '^' => "circumflex accent",
        '`' => "grave accent",
        '{' => "left curly bracket",
        '|' => "vertical line",
        '}' => "right curly bracket",
        '~' => "tilde",
        '\u{a0}' => "no-break space",
        '\u{200b}' => "zero width space",
        _ => "",
    };
    let shown =
        if c.is_control() || c.is_whitespace() && c != ' ' { c.escape_default().to_string() } else { c.to_string() };
    match name {
        "" if c.is_ascii_alphanumeric() => format!("'{c}'"),
        "" => format!("'{shown}' (U+{:04X})", u32::from(c)),
        _ => format!("'{shown}' ({name})"),
    }
}

#[cfg(test)]
mod tests {
    use super::{closest, describe_char};

    #[test]
    fn characters_are_quoted_and_named() {
        assert_eq!(describe_char(' '), "' ' (space)");
        assert_eq!(describe_char('/'), "'/' (slash)");
        assert_eq!(describe_char('\t'), "'\\t' (tab)");
        assert_eq!(describe_char('é'), "'é' (U+00E9)");
        assert_eq!(describe_char('1'), "'1'");
        assert_eq!(describe_char('\u{a0}'), "'\\u{a0}' (no-break space)");
    }

    #[test]
    fn suggests_near_names_only() {
        let fields = ["name", "version", "tools", "brief", "server"];
        for (typo, want) in [
            ("tool", Some("tools")),
            ("breif", Some("brief")),
            ("Version", Some("version")),
            ("x", None),
            ("colour", None),
        ] {
            assert_eq!(closest(typo, &fields), want, "{typo}");
        }
    }
}
