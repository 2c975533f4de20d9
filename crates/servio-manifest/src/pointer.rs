//! JSON Pointers (RFC 6901), the address every diagnostic carries.

use std::fmt;

/// A JSON Pointer such as `/tools/0/input_schema`; the whole document is `""`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pointer(String);

impl Pointer {
    /// The pointer to the whole document, `""`.
    pub fn root() -> Pointer {
        Pointer(String::new())
    }

    /// Parses an already escaped pointer; `None` unless it is empty or starts with `/`.
    pub fn parse(text: &str) -> Option<Pointer> {
        (text.is_empty() || text.starts_with('/')).then(|| Pointer(text.to_owned()))
    }

    /// The pointer to member `name` of the object here (escaping `~` and `/`).
    pub fn child(&self, name: &str) -> Pointer {
        let mut out = String::with_capacity(self.0.len() + name.len() + 1);
        out.push_str(&self.0);
        push_escaped(&mut out, name);
        Pointer(out)
    }

    /// The pointer to element `index` of the array here.
    pub fn index(&self, index: usize) -> Pointer {
        Pointer(format!("{}/{index}", self.0))
    }

    /// Appends another pointer, as when an error inside a subdocument is placed in the whole.
    pub fn join(&self, rest: &Pointer) -> Pointer {
        Pointer(format!("{}{}", self.0, rest.0))
    }

    /// The escaped text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The unescaped reference tokens, in order.
    pub fn segments(&self) -> impl Iterator<Item = String> + '_ {
        self.0.split('/').skip(1).map(|token| token.replace("~1", "/").replace("~0", "~"))
    }

    /// True when `self` is `other` or lies inside it.
    pub fn starts_with(&self, other: &Pointer) -> bool {
        self.0 == other.0 || (self.0.starts_with(&other.0) && self.0.as_bytes().get(other.0.len()) == Some(&b'/'))
    }
}

/// Appends `/` and `name` escaped as a reference token (`~` as `~0`, `/` as `~1`).
pub(crate) fn push_escaped(pointer: &mut String, name: &str) {
    pointer.push('/');
    for ch in name.chars() {
        match ch {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(ch),
        }
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_unescapes_round_trip() {
        let p = Pointer::root().child("a/b").child("m~n").index(3);
        assert_eq!(p.as_str(), "/a~1b/m~0n/3");
        assert_eq!(p.segments().collect::<Vec<_>>(), ["a/b", "m~n", "3"]);
    }

    #[test]
    fn prefix_is_by_whole_segments() {
        let tools = Pointer::parse("/tools").unwrap();
        assert!(Pointer::parse("/tools/1").unwrap().starts_with(&tools));
        assert!(tools.starts_with(&tools));
        assert!(!Pointer::parse("/toolsx").unwrap().starts_with(&tools));
        assert!(Pointer::parse("/a").unwrap().starts_with(&Pointer::root()));
    }
}
