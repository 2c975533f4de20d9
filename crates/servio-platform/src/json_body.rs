//! The one extractor that reads a JSON request body for every route of the API, so that they
//! all agree on what a body may be sent as and answer a bad one the same way.
//!
//! Interpretation §5: a body without `Content-Type` is taken as JSON (a hand-written `curl` or
//! script often sends none); a body sent as another type is refused with `415`, never guessed
//! at. Refusing form and text bodies also keeps the API out of reach of plain cross-site HTML
//! forms; a cross-site request without a type still has to pass the CSRF check of
//! [`crate::auth::Caller`] when it rides on a session cookie.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;
use serde_json::error::Category;

use crate::error::ApiError;

/// The largest request body of the API, in bytes (2 MiB, axum's default, set on the API's
/// router by [`crate::router`]); a larger one is refused with `413`.
pub const MAX_BODY: usize = 2 * 1024 * 1024;

/// A request body read as JSON into `T`; refused as an [`ApiError`] in the API's error shape:
/// `415` for a type other than JSON, `400` saying what is wrong and at which line and column.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        check_content_type(request.headers())?;
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::TooLarge
            } else {
                ApiError::BadRequest(format!("the body could not be read: {}", rejection.body_text()))
            }
        })?;
        parse(&bytes).map(JsonBody)
    }
}

/// Accepts no `Content-Type` at all, `application/json` and any `application/*+json`, with or
/// without parameters such as `charset`.
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    if is_json_type(&text) { Ok(()) } else { Err(ApiError::UnsupportedMediaType(text.into_owned())) }
}

/// Whether a `Content-Type` value names JSON (its essence, before any `;` parameter).
fn is_json_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Reads `bytes` as `T`; serde_json's own message already ends with the line and column.
fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest("the body is empty: send it as JSON".into()));
    }
    serde_json::from_slice(bytes).map_err(|error| {
        let what = match error.classify() {
            Category::Data => "the body is JSON but not what this route takes",
            Category::Syntax | Category::Eof | Category::Io => "the body is not valid JSON",
        };
        ApiError::BadRequest(format!("{what}: {error}"))
    })
}

/// Reads an integer field of a body as JSON writes integers: `81705`, never `81705.0` or
/// `8.1705e4`, and within 64 bits: `#[serde(deserialize_with = "crate::json_body::integer")]`.
/// JSON Schema counts `81705.0` as an integer, so a client built from the OpenAPI document may
/// send one; serde's own refusal ("invalid type: floating point") did not say what to write
/// instead, and this one does.
pub fn integer<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_i64(Integer)
}

/// [`integer`] for each item of an optional list (left out or `null`: `None`).
pub fn integers<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<i64>>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Item(#[serde(deserialize_with = "integer")] i64);
    let list: Option<Vec<Item>> = serde::Deserialize::deserialize(deserializer)?;
    Ok(list.map(|items| items.into_iter().map(|Item(value)| value).collect()))
}

/// The visitor of [`integer`].
struct Integer;

impl serde::de::Visitor<'_> for Integer {
    type Value = i64;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("an integer")
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<i64, E> {
        Ok(value)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<i64, E> {
        i64::try_from(value).map_err(|_| E::custom(format_args!("{value} is past the largest integer, {}", i64::MAX)))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<i64, E> {
        // Whole and within 64 bits: say how to write it; `as` cannot overflow below 2^63.
        let whole = value.fract() == 0.0 && value.abs() < 9.2e18;
        Err(match whole {
            true => E::custom(format_args!(
                "{value:?} is not an integer as this API reads one: write integers without a fraction or exponent ({})",
                value as i64
            )),
            false => E::custom(format_args!("{value:?} is not an integer: an integer is expected here")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_types() {
        let cases = [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON", true),
            ("application/merge-patch+json", true),
            ("application/x-www-form-urlencoded", false),
            ("text/plain", false),
            ("text/json", false),
            ("multipart/form-data; boundary=x", false),
            ("", false),
        ];
        for (content_type, want) in cases {
            assert_eq!(is_json_type(content_type), want, "{content_type:?}");
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Range {
        #[allow(dead_code)] // Only its presence is checked.
        from: String,
    }

    fn error_of(body: &str) -> String {
        parse::<Range>(body.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn broken_bodies_say_what_and_where() {
        let cases = [
            ("", "the body is empty: send it as JSON"),
            ("{\"from\": \"x\",\n}", "the body is not valid JSON: trailing comma at line 2 column 1"),
            ("day=2026-08-20", "the body is not valid JSON: expected value at line 1 column 1"),
            ("{\"to\": 1}", "the body is JSON but not what this route takes: missing field `from` at line 1 column 9"),
            (
                "{\"from\": 1}",
                "the body is JSON but not what this route takes: invalid type: integer `1`, expected a string at line 1 column 10",
            ),
        ];
        for (body, want) in cases {
            assert_eq!(error_of(body), want, "{body:?}");
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Decision {
        #[serde(deserialize_with = "integer")]
        version: i64,
        #[serde(default, deserialize_with = "integers")]
        sites: Option<Vec<i64>>,
    }

    /// Regression (issue 42, point 10): `{"version": 81705.0}` is an integer to JSON Schema, and
    /// was refused as "invalid type: floating point" without saying what to write.
    #[test]
    fn integers_are_read_as_integers_and_a_float_is_refused_saying_so() {
        let decision: Decision = parse(br#"{"version": 81705, "sites": [1, 2]}"#).unwrap();
        assert_eq!((decision.version, decision.sites), (81705, Some(vec![1, 2])));
        assert_eq!(parse::<Decision>(br#"{"version": -3, "sites": null}"#).unwrap().sites, None);
        let cases = [
            (
                r#"{"version": 81705.0}"#,
                "81705.0 is not an integer as this API reads one: write integers without a fraction or exponent (81705)",
            ),
            (
                r#"{"version": 8e4}"#,
                "80000.0 is not an integer as this API reads one: write integers without a fraction or exponent (80000)",
            ),
            (r#"{"version": 1.5}"#, "1.5 is not an integer: an integer is expected here"),
            (
                r#"{"version": 9223372036854775808}"#,
                "9223372036854775808 is past the largest integer, 9223372036854775807",
            ),
            (r#"{"version": 1, "sites": [2.0]}"#, "2.0 is not an integer as this API reads one"),
            (r#"{"version": "1"}"#, "invalid type: string \"1\", expected an integer"),
        ];
        for (body, want) in cases {
            let refused = parse::<Decision>(body.as_bytes()).unwrap_err().to_string();
            assert!(refused.starts_with("the body is JSON but not what this route takes: "), "{body}: {refused}");
            assert!(refused.contains(want), "{body}: {refused}");
        }
    }
}
