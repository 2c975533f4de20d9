//! Strict JSON parsing into a [`serde_json::Value`], with the two checks a plain parse lacks.
//!
//! `serde_json` does the tokenizing (it is fast and exact); a [`DeserializeSeed`] on top builds
//! the tree while counting nesting depth (an error past [`MAX_DEPTH`], before the stack is at
//! risk) and noticing member names that repeat. Where they repeat, the later value wins, as in
//! `serde_json` and JavaScript; the caller reports every repetition with [`crate::scan`].

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Deepest nesting of arrays and objects accepted; the top-level value is level 1.
pub const MAX_DEPTH: usize = 128;

/// What a successful parse gives.
#[derive(Debug)]
pub struct Parsed {
    /// The document.
    pub value: Value,
    /// True when some object has the same member name twice.
    pub has_duplicates: bool,
}

/// Why a document could not be parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseError {
    /// Not JSON: the message and the 1-based line and column (in characters) of the problem.
    Syntax {
        /// What `serde_json` said, without its position suffix.
        message: String,
        /// Byte offset of the problem.
        offset: usize,
    },
    /// Nesting deeper than [`MAX_DEPTH`]; the offset of the bracket that opens level 129.
    TooDeep {
        /// Byte offset of the opening bracket.
        offset: usize,
    },
}

/// Parses `bytes` as one JSON document.
pub fn parse(bytes: &[u8]) -> Result<Parsed, ParseError> {
    let mut has_duplicates = false;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    // Our own depth count below is the limit; serde_json's built-in one is one level lower.
    deserializer.disable_recursion_limit();
    let seed = ValueSeed { depth: 0, has_duplicates: &mut has_duplicates };
    let result = seed.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match result {
        Ok(value) => Ok(Parsed { value, has_duplicates }),
        Err(error) if error.to_string().starts_with(TOO_DEEP) => {
            Err(ParseError::TooDeep { offset: crate::scan::find_depth_excess(bytes, MAX_DEPTH).unwrap_or(0) })
        }
        Err(error) => {
            let message = describe(&error);
            let mut offset = offset_of(bytes, error.line(), error.column());
            if message == "trailing comma" {
                offset = comma_before(bytes, offset).unwrap_or(offset);
            }
            Err(ParseError::Syntax { message, offset })
        }
    }
}

/// The comma before the bracket at `offset`, past white space: `serde_json` reports a
/// trailing comma at the bracket that follows it, but the comma is what must go.
fn comma_before(bytes: &[u8], offset: usize) -> Option<usize> {
    let before = bytes.get(..offset)?;
    let at = before.iter().rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
    (before[at] == b',').then_some(at)
}

const TOO_DEEP: &str = "nesting deeper than";

/// `serde_json`'s message without the ` at line L column C` it appends.
fn describe(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// The byte offset of `serde_json`'s 1-based line and column (a column counts bytes, and 0
/// means "at the line break").
fn offset_of(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..line {
        match bytes[line_start..].iter().position(|&b| b == b'\n') {
            Some(i) => line_start += i + 1,
            None => break,
        }
    }
    (line_start + column.saturating_sub(1)).min(bytes.len())
}

struct ValueSeed<'a> {
    depth: usize,
    has_duplicates: &'a mut bool,
}

impl ValueSeed<'_> {
    fn nested(&mut self) -> ValueSeed<'_> {
        ValueSeed { depth: self.depth + 1, has_duplicates: self.has_duplicates }
    }

    fn enter<E: de::Error>(&self) -> Result<(), E> {
        if self.depth + 1 > MAX_DEPTH {
            return Err(E::custom(format_args!("{TOO_DEEP} {MAX_DEPTH} levels")));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        self.enter()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self.nested())? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        self.enter()?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.nested())?;
            if members.insert(key, value).is_some() {
                *self.has_duplicates = true;
            }
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_128_is_accepted_and_129_is_not() {
        assert!(parse(nested(128).as_bytes()).is_ok());
        assert_eq!(parse(nested(129).as_bytes()).unwrap_err(), ParseError::TooDeep { offset: 128 });
        // Far deeper input must not exhaust the stack.
        assert!(matches!(parse(nested(100_000).as_bytes()), Err(ParseError::TooDeep { offset: 128 })));
    }

    #[test]
    fn duplicates_are_noticed_and_the_later_value_wins() {
        let parsed = parse(br#"{"a": 1, "b": {"c": 1, "c": 2}}"#).unwrap();
        assert!(parsed.has_duplicates);
        assert_eq!(parsed.value["b"]["c"], 2);
        assert!(!parse(br#"{"a": {"a": 1}}"#).unwrap().has_duplicates);
    }

    #[test]
    fn syntax_errors_carry_the_offset() {
        let text = "{\n  \"name\": \"x\",\n}\n";
        let ParseError::Syntax { message, offset } = parse(text.as_bytes()).unwrap_err() else { panic!() };
        assert_eq!(message, "trailing comma");
        // Reported at the comma, which is what must go, not at the bracket after it.
        assert_eq!((&text[offset..offset + 1], offset), (",", 15));
        let text = "[1, 2 ,\n\t ]";
        let ParseError::Syntax { offset, .. } = parse(text.as_bytes()).unwrap_err() else { panic!() };
        assert_eq!(&text[offset..offset + 1], ",");
        let ParseError::Syntax { offset, .. } = parse(b"").unwrap_err() else { panic!() };
        assert_eq!(offset, 0);
    }
}
