//! The API's answer to a request axum's own extractors cannot read: [`Params`] wraps `Path` and
//! `Query` so that their refusals come in the API's JSON error shape with a documented status,
//! instead of axum's `text/plain` (`400 Cannot parse "abc" to a "i64"`).
//!
//! A path parameter that does not read as its type names nothing that can exist (an id that is
//! not a number, or a number beyond 64 bits), so it is `404`, as an id that is not the caller's;
//! a query that does not read is `400` saying what is wrong. JSON bodies have their own reader,
//! [`crate::json_body::JsonBody`].

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;

use crate::error::ApiError;

/// An axum extractor `E` (`Path<T>`, `Query<T>`) whose refusal is an [`ApiError`]:
/// `Params(Query(how)): Params<Query<How>>`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Params<E>(pub E);

impl<S, E> FromRequestParts<S> for Params<E>
where
    S: Send + Sync,
    E: FromRequestParts<S>,
    E::Rejection: Into<ApiError>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        E::from_request_parts(parts, state).await.map(Params).map_err(Into::into)
    }
}

/// The numeric `{id}` of a route's path: `Id(id): Id`, refused as [`Params`] refuses a path
/// (`404`: an id that does not read as an `i64` names nothing that exists).
#[derive(Debug, Clone, Copy)]
pub struct Id(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Params(Path(id)) = Params::<Path<i64>>::from_request_parts(parts, state).await?;
        Ok(Id(id))
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> ApiError {
        match rejection {
            // The route has no such parameter: our mistake, not the caller's.
            PathRejection::MissingPathParams(missing) => ApiError::internal(missing.body_text()),
            // `abc`, `null,null`, `99999999999999999999` as an id: nothing by that name exists.
            _ => ApiError::NotFound,
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> ApiError {
        ApiError::BadRequest(format!("the query is not what this route takes: {}", query_reason(&rejection)))
    }
}

/// What is wrong with the query, without axum's own preamble.
fn query_reason(rejection: &QueryRejection) -> String {
    let text = rejection.body_text();
    text.strip_prefix("Failed to deserialize query string: ").map_or_else(|| text.clone(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use axum::extract::{Path, Query};
    use axum::http::{Request, StatusCode};

    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Window {
        #[allow(dead_code)] // Only whether it reads is checked.
        days: Option<u32>,
    }

    async fn query_status(uri: &str) -> Result<(), (StatusCode, String)> {
        let (mut parts, ()) = Request::builder().uri(uri).body(()).unwrap().into_parts();
        match Params::<Query<Window>>::from_request_parts(&mut parts, &()).await {
            Ok(_) => Ok(()),
            Err(error) => Err((error.status(), error.to_string())),
        }
    }

    #[tokio::test]
    async fn a_query_that_does_not_read_is_400_saying_why() {
        assert_eq!(query_status("/x?days=7").await, Ok(()));
        let (status, message) = query_status("/x?days=abc").await.unwrap_err();
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(message, "the query is not what this route takes: days: invalid digit found in string");
    }

    /// A route without the parameter is our mistake: 500, not the caller's 404. (An id that
    /// does not read is driven through the router in `tests/it/routes.rs`.)
    #[tokio::test]
    async fn a_missing_path_parameter_is_ours() {
        let (mut parts, ()) = Request::builder().uri("/x/1").body(()).unwrap().into_parts();
        let error = Params::<Path<i64>>::from_request_parts(&mut parts, &()).await.unwrap_err();
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
