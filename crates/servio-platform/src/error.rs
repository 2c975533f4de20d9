//! The one error type of the HTTP layer: each variant maps to a status; internal details go to
//! the log (`tracing`, with the whole chain of sources), never to the client.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
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
    /// A sign-in or sign-up posted from another site (login CSRF).
    #[error("a form on another site cannot sign you in or up: use this site's own sign-in page")]
    CrossSite,
    /// Too many attempts from this client or at this account; retry after this many seconds.
    #[error("too many attempts: try again in {retry_after} seconds")]
    TooManyRequests {
        /// Seconds until the next attempt is allowed.
        retry_after: u64,
    },
    /// Too soon after the same action (a site's refresh on request): says what and when again.
    #[error("{message}")]
    TooSoon {
        /// What was refused and why.
        message: String,
        /// Seconds until it is allowed.
        retry_after: u64,
    },
    /// Too many password checks waiting already.
    #[error("the server is busy: try again in a moment")]
    Busy,
    /// Every manifest check was taken for longer than a request waits.
    #[error("{0}")]
    ChecksBusy(servio_core::Busy),
    /// An API token asked for what its scope does not grant (interpretation §10).
    #[error("{}", scope_message(*needed, *granted))]
    Scope {
        /// The scope the route needs.
        needed: servio_store::Scope,
        /// The token's.
        granted: servio_store::Scope,
    },
    /// Signed in, but this way of asking may not do this (an `account` token asked for with an
    /// API token); says what to do instead.
    #[error("{0}")]
    Forbidden(String),
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
    /// Our fault: the source is kept for the log; the client hears only "internal error".
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What a token is told when its scope falls short.
fn scope_message(needed: servio_store::Scope, granted: servio_store::Scope) -> String {
    let who = match needed {
        servio_store::Scope::Account => "a signed-in session or an `account` token".to_owned(),
        other => format!("a token of scope `{}` or wider", other.as_str()),
    };
    format!("this needs {who}; this token's scope is `{}`", granted.as_str())
}

impl From<servio_store::StoreError> for ApiError {
    fn from(error: servio_store::StoreError) -> ApiError {
        match error {
            servio_store::StoreError::Conflict(what) => ApiError::Conflict(format!("{what} is already taken")),
            servio_store::StoreError::AtLimit { what, limit } => {
                ApiError::Conflict(format!("you have {limit} {what}, the most one user may have: remove one first"))
            }
            other => ApiError::Internal(Box::new(other)),
        }
    }
}

impl From<servio_collector::Error> for ApiError {
    fn from(error: servio_collector::Error) -> ApiError {
        match error {
            servio_collector::Error::Store(error) => ApiError::from(error),
            servio_collector::Error::Core(error) => ApiError::from(error),
            servio_collector::Error::Busy(busy) => ApiError::ChecksBusy(busy),
            error if error.kind() == servio_collector::ErrorKind::NothingToCollect => {
                ApiError::BadRequest(error.to_string())
            }
            error if error.kind() == servio_collector::ErrorKind::TooLarge => ApiError::BadRequest(error.to_string()),
            error if error.kind() == servio_collector::ErrorKind::AtLimit => ApiError::Conflict(error.to_string()),
            error => ApiError::Internal(Box::new(error)),
        }
    }
}

impl From<servio_core::Error> for ApiError {
    fn from(error: servio_core::Error) -> ApiError {
        match error {
            servio_core::Error::Store(error) => ApiError::from(error),
            error => ApiError::Internal(Box::new(error)),
        }
    }
}

impl From<servio_core::Busy> for ApiError {
    fn from(busy: servio_core::Busy) -> ApiError {
        ApiError::ChecksBusy(busy)
    }
}

impl ApiError {
    /// An internal error caused by `source` (an error value, or a message where there is none).
    pub fn internal(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ApiError {
        ApiError::Internal(source.into())
    }

    /// Logs an internal error with its chain of sources; other errors are the client's business
    /// and are not logged.
    pub fn log_if_internal(&self) {
        if let ApiError::Internal(source) = self {
            let chain = servio_client::error_chain(source.as_ref());
            tracing::error!(error = %chain, "internal error");
        }
    }

    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::WrongCredentials => StatusCode::UNAUTHORIZED,
            ApiError::Csrf | ApiError::CrossSite | ApiError::Scope { .. } | ApiError::Forbidden(_) => {
                StatusCode::FORBIDDEN
            }
            ApiError::TooManyRequests { .. } | ApiError::TooSoon { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Busy | ApiError::ChecksBusy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The `Retry-After` seconds of a refusal that passes with time.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::TooManyRequests { retry_after } | ApiError::TooSoon { retry_after, .. } => Some(*retry_after),
            ApiError::Busy => Some(1),
            ApiError::ChecksBusy(busy) => Some(busy.retry_after.as_secs().max(1)),
            _ => None,
        }
    }

    /// Adds `Retry-After` to `response` when this error has one.
    pub fn with_retry_after(&self, mut response: Response) -> Response {
        if let Some(seconds) = self.retry_after() {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let ApiError::Unprocessable(body) = &self {
            return (status, Json(body)).into_response();
        }
        self.log_if_internal();
        self.with_retry_after((status, Json(json!({ "error": self.to_string() }))).into_response())
    }
}

/// The body of every refusal of the JSON API (an invalid manifest's `422` adds its `report`).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for people; internal details never appear here.
    pub error: String,
}
