//! The Directory as a page: search for anyone, and for a signed-in user their claims with the
//! forms to claim and verify.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use super::api::SearchQuery;
use super::service::{self, ClaimView, Hit, NewClaim};
use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::error::ApiError;
use crate::routes::accounts::pages::NoFields;
use crate::routes::pages::{Layout, render};

/// The Directory pages.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/directory", get(directory))
        .route("/directory/claims", post(claim))
        .route("/directory/claims/{id}/verify", post(verify))
}

#[derive(Template)]
#[template(path = "directory.html")]
struct DirectoryPage {
    layout: Layout,
    query: String,
    results: Vec<Hit>,
    claims: Vec<ClaimView>,
    message: Option<String>,
}

async fn directory(
    State(state): State<AppState>,
    user: Option<PageUser>,
    Query(query): Query<SearchQuery>,
) -> Result<Response, ApiError> {
    if let Err(refused) = crate::text::require_text("q", &query.q) {
        let mut page = directory_view(&state, user.as_ref(), String::new(), Some(refused.to_string())).await?;
        *page.status_mut() = StatusCode::BAD_REQUEST;
        return Ok(page);
    }
    directory_view(&state, user.as_ref(), query.q, None).await
}

async fn directory_view(
    state: &AppState,
    user: Option<&PageUser>,
    query: String,
    message: Option<String>,
) -> Result<Response, ApiError> {
    let found = service::search(state, query).await?;
    let claims = match user {
        Some(user) => service::claims(state, user.user.id).await?.claims,
        None => Vec::new(),
    };
    let page = DirectoryPage { layout: Layout::of(user), query: found.query, results: found.results, claims, message };
    Ok(render(&page))
}

async fn claim(State(state): State<AppState>, posted: PageForm<NewClaim>) -> Result<Response, ApiError> {
    let PageForm { user, form } = posted;
    match service::create_claim(&state, user.user.id, &form.url).await {
        Ok(_) => Ok(Redirect::to("/directory").into_response()),
        Err(error) => directory_view(&state, Some(&user), String::new(), Some(error.to_string())).await,
    }
}

async fn verify(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    posted: PageForm<NoFields>,
) -> Result<Response, ApiError> {
    let message = match service::verify_claim(&state, posted.user.user.id, id).await {
        Ok(_) => "Verified: the site is listed.".to_owned(),
        Err(ApiError::NotFound) => return Err(ApiError::NotFound),
        Err(ApiError::Unprocessable(body)) => body["error"].as_str().unwrap_or("not verified").to_owned(),
        Err(error) => error.to_string(),
    };
    directory_view(&state, Some(&posted.user), String::new(), Some(message)).await
}
