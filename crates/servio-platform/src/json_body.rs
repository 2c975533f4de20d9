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
}
