//! Reading members of JSON objects while reporting what is missing or mistyped.
//!
//! Shared by the manifest and the brief; they differ only in the codes they report with.

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::kind_of;

/// The codes used for shape problems.
#[derive(Debug, Clone, Copy)]
pub struct ShapeCodes {
    /// A required member is absent.
    pub missing: Code,
    /// A member has the wrong JSON type.
    pub wrong_type: Code,
    /// A required string is empty or white space.
    pub blank: Code,
}

/// Codes for the manifest proper.
pub const MANIFEST: ShapeCodes =
    ShapeCodes { missing: Code::RequiredMember, wrong_type: Code::MemberType, blank: Code::BlankString };
/// Codes for the brief, whose problems make only the brief ignored.
pub const BRIEF: ShapeCodes =
    ShapeCodes { missing: Code::BriefShape, wrong_type: Code::BriefShape, blank: Code::BriefShape };

/// An object being read, with where it is.
#[derive(Clone)]
pub struct Object<'a> {
    /// Its members.
    pub map: &'a Map<String, Value>,
    /// Its pointer.
    pub at: Pointer,
    /// The codes to report with.
    pub codes: ShapeCodes,
}

impl<'a> Object<'a> {
    /// `value` as an object at `at`, or an error of the wrong type named `what`.
    pub fn expect(
        value: &'a Value,
        at: &Pointer,
        what: &str,
        codes: ShapeCodes,
        out: &mut Vec<Diagnostic>,
    ) -> Option<Object<'a>> {
        match value.as_object() {
            Some(map) => Some(Object { map, at: at.clone(), codes }),
            None => {
                out.push(Diagnostic::at(
                    codes.wrong_type,
                    at.clone(),
                    format!("{what} must be an object, found {}", kind_of(value)),
                ));
                None
            }
        }
    }

    /// The member `key`, reporting it missing when absent.
    pub fn required(&self, key: &str, out: &mut Vec<Diagnostic>) -> Option<&'a Value> {
        let value = self.map.get(key);
        if value.is_none() {
            out.push(
                Diagnostic::missing(self.codes.missing, &self.at, key, format!("missing required member `{key}`"))
                    .with_help(example_to_add(&[key])),
            );
        }
        value
    }

    /// A required non-blank string member.
    pub fn required_str(&self, key: &str, out: &mut Vec<Diagnostic>) -> Option<&'a str> {
        let value = self.required(key, out)?;
        self.string(key, value, true, out)
    }

    /// An optional string member: `None` when absent or mistyped (the latter reported).
    pub fn optional_str(&self, key: &str, out: &mut Vec<Diagnostic>) -> Option<&'a str> {
        let value = self.map.get(key)?;
        self.string(key, value, false, out)
    }

    fn string(&self, key: &str, value: &'a Value, non_blank: bool, out: &mut Vec<Diagnostic>) -> Option<&'a str> {
        let at = self.at.child(key);
        match value {
            Value::String(text) if non_blank && text.trim().is_empty() => {
                out.push(Diagnostic::at(
                    self.codes.blank,
                    at,
                    format!("`{key}` must not be empty or only white space"),
                ));
                None
            }
            Value::String(text) => Some(text),
            other => {
                out.push(Diagnostic::at(
                    self.codes.wrong_type,
                    at,
                    format!("`{key}` must be a string, found {}", kind_of(other)),
                ));
                None
            }
        }
    }

    /// A required object member.
    pub fn required_object(&self, key: &str, out: &mut Vec<Diagnostic>) -> Option<Object<'a>> {
        let value = self.required(key, out)?;
        Object::expect(value, &self.at.child(key), &format!("`{key}`"), self.codes, out)
    }

    /// An array member (required or not), reporting a wrong type.
    pub fn array(&self, key: &str, value: &'a Value, out: &mut Vec<Diagnostic>) -> Option<&'a Vec<Value>> {
        match value.as_array() {
            Some(items) => Some(items),
            None => {
                out.push(Diagnostic::at(
                    self.codes.wrong_type,
                    self.at.child(key),
                    format!("`{key}` must be an array, found {}", kind_of(value)),
                ));
                None
            }
        }
    }
}

/// A plausible value of a required member, for the help of a missing one.
fn example_value(member: &str) -> &'static str {
    match member {
        "name" => "\"My Site\"",
        "version" => "\"1.0.0\"",
        "server" => "{ \"url\": \"https://example.com/api/servio\" }",
        "url" => "\"https://example.com/api/servio\"",
        "auth" => "{ \"type\": \"bearer\" }",
        "type" => "\"bearer\"",
        "authorization_url" => "\"https://example.com/oauth/authorize\"",
        "token_url" => "\"https://example.com/oauth/token\"",
        "tools" | "metrics" => "[]",
        "description" => "\"What the tool does and what it returns\"",
        "input_schema" => "{ \"type\": \"object\", \"properties\": {} }",
        "key" => "\"sales.revenue.daily\"",
        "tool" => "\"shop.getSalesSummary\"",
        "valuePath" => "\"data.totals.revenue\"",
        _ => "...",
    }
}

/// The help for members missing from one object: each with an example value, one a line,
/// ready to paste.
pub(crate) fn example_to_add(members: &[impl AsRef<str>]) -> String {
    let lines: Vec<String> =
        members.iter().map(|m| format!("    \"{}\": {}", m.as_ref(), example_value(m.as_ref()))).collect();
    let what = if members.len() == 1 { "it" } else { "them" };
    format!("add {what} to this object, for example:\n{}", lines.join(",\n"))
}

/// `a`, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
pub(crate) fn and_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}
