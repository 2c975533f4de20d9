//! The keywords that judge numbers, judged on the numbers as written, digit for digit: `type`
//! (is it an integer) and `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`.
//!
//! Arguments keep every digit the caller wrote (serde_json's `arbitrary_precision`), and so
//! must their checks: the `jsonschema` crate reads a number beyond 64-bit integers as an
//! `f64`, which puts `18446744073709551600.0` above a `maximum` of `18446744073709551615`
//! (both round to 2^64) and calls `12345678910111213141516171819202122232425262728293031.5` an
//! integer. Its own exact comparison sits behind a feature the build cannot resolve, so these
//! five keywords are ours, registered over its own (which the crate supports: its fused
//! validators step aside for an overridden keyword); every other keyword stays the crate's.

use std::cmp::Ordering;

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError, ValidationOptions};
use serde_json::{Map, Number, Value};

/// The four bound keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
}

impl Bound {
    const ALL: [(&'static str, Bound); 4] = [
        ("minimum", Bound::Minimum),
        ("maximum", Bound::Maximum),
        ("exclusiveMinimum", Bound::ExclusiveMinimum),
        ("exclusiveMaximum", Bound::ExclusiveMaximum),
    ];

    /// Whether a value that compares to the limit as `order` passes.
    fn holds(self, order: Ordering) -> bool {
        match self {
            Bound::Minimum => order != Ordering::Less,
            Bound::Maximum => order != Ordering::Greater,
            Bound::ExclusiveMinimum => order == Ordering::Greater,
            Bound::ExclusiveMaximum => order == Ordering::Less,
        }
    }

    /// The `jsonschema` crate's words for a value that breaks the bound.
    fn message(self, value: &Number, limit: &Number) -> String {
        match self {
            Bound::Minimum => format!("{value} is less than the minimum of {limit}"),
            Bound::Maximum => format!("{value} is greater than the maximum of {limit}"),
            Bound::ExclusiveMinimum => format!("{value} is less than or equal to the minimum of {limit}"),
            Bound::ExclusiveMaximum => format!("{value} is greater than or equal to the maximum of {limit}"),
        }
    }
}

/// One bound keyword of one subschema, with its limit.
struct Exact {
    bound: Bound,
    limit: Number,
}

impl<'i> Keyword<'i> for Exact {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match instance {
            Value::Number(value) if !self.bound.holds(compare(value, &self.limit)) => {
                Err(ValidationError::custom(self.bound.message(value, &self.limit)))
            }
            _ => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        match instance {
            Value::Number(value) => self.bound.holds(compare(value, &self.limit)),
            // The keyword applies to numbers only.
            _ => true,
        }
    }
}

/// `options` with `type` and the four bound keywords judged exactly.
pub(super) fn exact_numbers(mut options: ValidationOptions) -> ValidationOptions {
    options = options.with_keyword("type", |_: &Map<String, Value>, names: &Value, _: Location| {
        Types::new(names).map(|types| Box::new(types) as Box<dyn for<'i> Keyword<'i>>)
    });
    for (name, bound) in Bound::ALL {
        options = options.with_keyword(name, move |_: &Map<String, Value>, limit: &Value, _: Location| match limit {
            Value::Number(limit) => Ok(Box::new(Exact { bound, limit: limit.clone() }) as Box<dyn for<'i> Keyword<'i>>),
            _ => Err(ValidationError::custom(format!("`{name}` must be a number"))),
        });
    }
    options
}

/// The JSON Schema types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Boolean,
    Object,
    Array,
    Number,
    Integer,
    String,
}

impl Kind {
    fn named(name: &str) -> Option<Kind> {
        Some(match name {
            "null" => Kind::Null,
            "boolean" => Kind::Boolean,
            "object" => Kind::Object,
            "array" => Kind::Array,
            "number" => Kind::Number,
            "integer" => Kind::Integer,
            "string" => Kind::String,
            _ => return None,
        })
    }

    /// Whether `value` is of this type; an integer is any number without a fractional part,
    /// however it is written (`1.0`, `1e2`) and however large.
    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Kind::Null, Value::Null)
            | (Kind::Boolean, Value::Bool(_))
            | (Kind::Object, Value::Object(_))
            | (Kind::Array, Value::Array(_))
            | (Kind::Number, Value::Number(_))
            | (Kind::String, Value::String(_)) => true,
            (Kind::Integer, Value::Number(number)) => Decimal::parse(number.as_str()).is_integer(),
            _ => false,
        }
    }
}

/// A `type` keyword: one name or several.
struct Types {
    kinds: Vec<Kind>,
    names: Vec<String>,
}

impl Types {
    fn new(names: &Value) -> Result<Types, ValidationError<'static>> {
        let names: Vec<String> = match names {
            Value::String(name) => vec![name.clone()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => return Err(ValidationError::custom("`type` must be a type name or an array of them")),
        };
        let kinds = names
            .iter()
            .map(|name| Kind::named(name).ok_or_else(|| ValidationError::custom(format!("unknown type {name:?}"))))
            .collect::<Result<_, _>>()?;
        Ok(Types { kinds, names })
    }

    /// The `jsonschema` crate's words for a value of another type.
    fn message(&self, value: &Value) -> String {
        let quoted: Vec<String> = self.names.iter().map(|name| format!("\"{name}\"")).collect();
        match quoted.as_slice() {
            [one] => format!("{value} is not of type {one}"),
            many => format!("{value} is not of types {}", many.join(", ")),
        }
    }
}

impl<'i> Keyword<'i> for Types {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        if self.is_valid(instance) { Ok(()) } else { Err(ValidationError::custom(self.message(instance))) }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.kinds.iter().any(|kind| kind.admits(instance))
    }
}

/// How two JSON numbers compare by value, exactly, whatever their size or spelling
/// (`1`, `1.0` and `10e-1` are equal).
pub fn compare(a: &Number, b: &Number) -> Ordering {
    Decimal::parse(a.as_str()).cmp(&Decimal::parse(b.as_str()))
}

/// A JSON number as a sign, its significant digits (no leading or trailing zeros; none for
/// zero) and the power of ten just above its first digit: `0.d1 d2 ... × 10^point`.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    point: i128,
}

impl Decimal {
    /// Reads a number in JSON's grammar (`-?int(.frac)?([eE][+-]?exp)?`), as serde_json keeps
    /// it. The exponent saturates far beyond any difference that matters.
    fn parse(text: &str) -> Decimal {
        let (negative, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match text.find(['e', 'E']) {
            Some(at) => (&text[..at], parse_exponent(&text[at + 1..])),
            None => (text, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all = whole.bytes().chain(fraction.bytes());
        let leading_zeros = all.clone().take_while(|&d| d == b'0').count();
        let mut digits: Vec<u8> = all.skip(leading_zeros).collect();
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        let point = whole.len() as i128 - leading_zeros as i128 + exponent;
        Decimal { negative: negative && !digits.is_empty(), digits, point }
    }

    /// Whether it has no fractional part.
    fn is_integer(&self) -> bool {
        self.digits.is_empty() || self.digits.len() as i128 <= self.point
    }

    /// The order of the absolute values.
    fn cmp_magnitude(&self, other: &Decimal) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            // Digit strings without leading zeros at the same point compare as text.
            (false, false) => self.point.cmp(&other.point).then_with(|| self.digits.cmp(&other.digits)),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_magnitude(other),
            (true, true) => other.cmp_magnitude(self),
        }
    }
}

/// An exponent's value, saturated at ±10^30: no JSON number's digits reach that far.
fn parse_exponent(text: &str) -> i128 {
    const FAR: i128 = 1_000_000_000_000_000_000_000_000_000_000;
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude =
        digits.bytes().fold(0i128, |value, digit| (value * 10 + i128::from(digit.wrapping_sub(b'0'))).min(FAR));
    if negative { -magnitude } else { magnitude }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> Number {
        match serde_json::from_str(text) {
            Ok(Value::Number(number)) => number,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn numbers_compare_by_value_whatever_their_spelling() {
        let order = |a: &str, b: &str| compare(&number(a), &number(b));
        for (a, b) in [("1", "1.0"), ("10e-1", "1"), ("0", "-0"), ("0.0", "0e5"), ("1E2", "100"), ("-2.50", "-25e-1")] {
            assert_eq!(order(a, b), Ordering::Equal, "{a} = {b}");
        }
        for (a, b) in [
            ("18446744073709551600", "18446744073709551615"),
            ("18446744073709551600.1", "18446744073709551615"),
            ("972783798187987123879878123", "972783798187987123879878123.18878137"),
            ("972783798187987123879878123.18878137", "972783798187987123879878123.188781371"),
            ("-972783798187987123879878124", "-972783798187987123879878123.18878137"),
            ("-1", "0"),
            ("0", "0.0000001"),
            ("0.09", "0.1"),
            ("99", "100"),
            ("1e-400", "1e-399"),
            ("-1e400", "1e-400"),
        ] {
            assert_eq!(order(a, b), Ordering::Less, "{a} < {b}");
            assert_eq!(order(b, a), Ordering::Greater, "{b} > {a}");
        }
    }

    #[test]
    fn integers_are_numbers_without_a_fractional_part() {
        for (text, integer) in [
            ("0", true),
            ("-0.0", true),
            ("1.0", true),
            ("1e2", true),
            ("1.5e1", true),
            ("12345678910111213141516171819202122232425262728293031", true),
            ("12345678910111213141516171819202122232425262728293031.000", true),
            ("12345678910111213141516171819202122232425262728293031.5", false),
            ("1.5", false),
            ("15e-1", false),
            ("1e-400", false),
        ] {
            assert_eq!(Decimal::parse(number(text).as_str()).is_integer(), integer, "{text}");
        }
    }

    /// Wherever `f64` holds both numbers exactly, the order is `f64`'s.
    #[test]
    fn small_numbers_compare_as_floats_do() {
        let samples = ["-1000.5", "-3", "-0.25", "0", "0.125", "1", "2.5e1", "25", "1e3", "1000.5"];
        for a in samples {
            for b in samples {
                let (x, y): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
                assert_eq!(compare(&number(a), &number(b)), x.partial_cmp(&y).unwrap(), "{a} vs {b}");
            }
        }
    }
}
