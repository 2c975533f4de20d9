//! The one error type of the HTTP layer: each variant maps to a status; internal details go to
//! the log, never to the client.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed; says what and where.
    #[error("{0}")]
    BadRequest(String),
    /// No valid session or token.
    #[error("sign in first, or send an API token as Authorization: Bearer")]
    Unauthorized,
    /// Wrong email or password (which one is not said).
    #[error("wrong email or password")]
    WrongCredentials,
    /// A cookie-authenticated change without the right CSRF token.
    #[error("missing or wrong CSRF token: send the X-CSRF-Token header (or the csrf_token form field)")]
    Csrf,
    /// Not there, or not yours (the two are not told apart).
    #[error("not found")]
    NotFound,
    /// A request body sent as something other than JSON (the `Content-Type` it came with).
    #[error("send the body as JSON (Content-Type: application/json, or no Content-Type), not {0}")]
    UnsupportedMediaType(String),
    /// A request body beyond the server's limit.
    #[error("the body is too large")]
    TooLarge,
    /// Taken already.
    #[error("{0}")]
    Conflict(String),
    /// Understood but refused, with a body that says why (an invalid manifest's report).
    #[error("unprocessable")]
    Unprocessable(serde_json::Value),
    /// Our fault; the details are logged.
    #[error("internal error")]
    Internal(String),
}

impl From<servio_store::StoreError> for ApiError {
    fn from(error: servio_store::StoreError) -> ApiError {
        match error {
            servio_store::StoreError::Conflict(what) => ApiError::Conflict(format!("{what} is already taken")),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::WrongCredentials => StatusCode::UNAUTHORIZED,
            ApiError::Csrf => StatusCode::FORBIDDEN,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Unprocessable(body) => return (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response(),
            ApiError::Internal(detail) => {
                eprintln!("servio: internal error: {detail}");
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        (status, Json(json!({ "error": self.to_string() }))).into_response()
    }
}
