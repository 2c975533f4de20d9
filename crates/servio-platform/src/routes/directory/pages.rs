//! The Directory as a page: search for anyone, and for a signed-in user their claims with the
//! forms to claim, verify and withdraw.

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use super::api::SearchQuery;
use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::domain::directory::{self as domain, ClaimState, ClaimView, Hit, NewClaim};
use crate::error::ApiError;
use crate::params::Id;
use crate::web::{Layout, NoFields, render, table};

/// The Directory pages.
pub fn router() -> Router<AppState> {
    table([
        ("/directory", get(directory)),
        ("/directory/claims", post(claim)),
        ("/directory/claims/{id}/verify", post(verify)),
        ("/directory/claims/{id}/withdraw", post(withdraw)),
        ("/directory/claims/{id}/health", get(health_page)),
    ])
}

#[derive(Template)]
#[template(path = "directory.html")]
struct DirectoryPage {
    layout: Layout,
    query: String,
    results: Vec<Hit>,
    claims: Vec<ClaimView>,
    /// Origins in the user's vault, so a result says so instead of offering to add it.
    in_vault: std::collections::HashSet<String>,
    message: Option<String>,
    notice: Option<String>,
}

/// What a page of the Directory says after an action: an error, or a success.
enum Said {
    Nothing,
    Error(String),
    Success(String),
}

async fn directory(
    State(state): State<AppState>,
    user: Option<PageUser>,
    Query(query): Query<SearchQuery>,
) -> Result<Response, ApiError> {
    if let Err(refused) = crate::text::require_text("q", &query.q) {
        let said = Said::Error(refused.to_string());
        let mut page = directory_view(&state, user.as_ref(), String::new(), said).await?;
        *page.status_mut() = StatusCode::BAD_REQUEST;
        return Ok(page);
    }
    directory_view(&state, user.as_ref(), query.q, Said::Nothing).await
}

async fn directory_view(
    state: &AppState,
    user: Option<&PageUser>,
    query: String,
    said: Said,
) -> Result<Response, ApiError> {
    let found = domain::search(state, query).await?;
    let (claims, in_vault) = match user {
        Some(user) => {
            let vault = state.store.vault(user.user.id).await?;
            (domain::claims(state, user.user.id).await?.claims, vault.into_iter().map(|site| site.origin).collect())
        }
        None => Default::default(),
    };
    let (message, notice) = match said {
        Said::Nothing => (None, None),
        Said::Error(message) => (Some(message), None),
        Said::Success(message) => (None, Some(message)),
    };
    let page = DirectoryPage {
        layout: Layout::of(user),
        query: found.query,
        results: found.results,
        claims,
        in_vault,
        message,
        notice,
    };
    Ok(render(&page))
}

async fn claim(State(state): State<AppState>, posted: PageForm<NewClaim>) -> Result<Response, ApiError> {
    let PageForm { user, form } = posted;
    match domain::create_claim(&state, user.user.id, &form.url).await {
        Ok(_) => Ok(Redirect::to("/directory").into_response()),
        Err(error) => directory_view(&state, Some(&user), String::new(), Said::Error(error.to_string())).await,
    }
}

async fn verify(State(state): State<AppState>, Id(id): Id, posted: PageForm<NoFields>) -> Result<Response, ApiError> {
    let said = match domain::verify_claim(&state, posted.user.user.id, id).await {
        Ok(_) => Said::Success("Verified: the site is listed.".to_owned()),
        Err(ApiError::NotFound) => return Err(ApiError::NotFound),
        Err(ApiError::Unprocessable(body)) => Said::Error(body["error"].as_str().unwrap_or("not verified").to_owned()),
        Err(error) => Said::Error(error.to_string()),
    };
    directory_view(&state, Some(&posted.user), String::new(), said).await
}

/// Withdraws a claim not verified yet: the way out of the limit on claims waiting.
async fn withdraw(State(state): State<AppState>, Id(id): Id, posted: PageForm<NoFields>) -> Result<Response, ApiError> {
    domain::withdraw_claim(&state, posted.user.user.id, id).await?;
    let said = Said::Success("Claim withdrawn.".to_owned());
    directory_view(&state, Some(&posted.user), String::new(), said).await
}

#[derive(Template)]
#[template(path = "owner_health.html")]
struct HealthPage {
    layout: Layout,
    health: crate::domain::directory::health::Health,
    windows: [i64; 2],
}

/// The collection health of the site a verified claim of the user lists.
async fn health_page(
    State(state): State<AppState>,
    user: PageUser,
    Id(id): Id,
    Query(window): Query<crate::domain::directory::health::Window>,
) -> Result<Response, ApiError> {
    let health = crate::domain::directory::health::health(&state, user.user.id, id, &window).await?;
    Ok(render(&HealthPage {
        layout: Layout::of(Some(&user)),
        health,
        windows: crate::domain::directory::health::WINDOWS,
    }))
}
