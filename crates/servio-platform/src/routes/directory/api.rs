//! The Directory over the JSON API.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::Api;
use crate::domain::directory::{self as domain, ClaimList, NewClaim, NewClaimView, SearchResults, Verified};
use crate::error::{ApiError, ErrorBody};
use crate::json_body::JsonBody;
use crate::params::{Id, Params};

/// The Directory routes of the API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search))
        .routes(routes!(list_claims, claim))
        .routes(routes!(verify))
        .routes(routes!(withdraw))
        .routes(routes!(health))
}

/// What to search for.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SearchQuery {
    /// Words to find in names, descriptions and tools (without NUL).
    #[serde(default)]
    #[param(pattern = r"^[^\x00]*$")]
    pub q: String,
}

/// Search the Directory (?q=words)
#[utoipa::path(get, path = "/api/directory", security(()), params(SearchQuery), responses(
    (status = 200, description = "The listed sites found", body = SearchResults),
    (status = 400, description = "The words hold a NUL", body = ErrorBody),
))]
async fn search(
    State(state): State<AppState>,
    Params(Query(query)): Params<Query<SearchQuery>>,
) -> Result<Json<SearchResults>, ApiError> {
    domain::search(&state, query.q).await.map(Json)
}

/// The user's ownership claims
#[utoipa::path(get, path = "/api/directory/claims", responses((status = 200, description = "The claims", body = ClaimList)))]
async fn list_claims(api: Api) -> Result<Json<ClaimList>, ApiError> {
    domain::claims(&api.state, api.user.id).await.map(Json)
}

/// Claim an origin; returns the verification token
#[utoipa::path(post, path = "/api/directory/claims", request_body = NewClaim, responses(
    (status = 201, description = "Claimed: put the token in the manifest, then verify", body = NewClaimView),
    (status = 400, description = "Not a URL", body = ErrorBody),
    (status = 409, description = "You claimed this origin already, or have as many claims waiting for verification \
                                   as one user may (50 by default): verify or withdraw one", body = ErrorBody),
))]
async fn claim(api: Api, JsonBody(form): JsonBody<NewClaim>) -> Result<Response, ApiError> {
    let claim = domain::create_claim(&api.state, api.user.id, &form.url).await?;
    Ok((StatusCode::CREATED, Json(domain::new_claim_view(claim))).into_response())
}

/// List the site once its manifest carries the token
#[utoipa::path(post, path = "/api/directory/claims/{id}/verify", responses(
    (status = 200, description = "Listed", body = Verified),
    (status = 422, description = "The manifest is invalid or does not list the token", body = ErrorBody),
    (status = 429, description = "The site's manifest was fetched as often as the platform fetches one site's \
                                  (--manifest-fetches-per-site a minute, whoever asks): try again after Retry-After",
     body = ErrorBody),
))]
async fn verify(api: Api, Id(id): Id) -> Result<Json<Verified>, ApiError> {
    domain::verify_claim(&api.state, api.user.id, id).await.map(Json)
}

/// Withdraw a claim not verified yet (a verified one stands for its listing)
#[utoipa::path(delete, path = "/api/directory/claims/{id}", responses(
    (status = 204, description = "Withdrawn"),
))]
async fn withdraw(api: Api, Id(id): Id) -> Result<StatusCode, ApiError> {
    domain::withdraw_claim(&api.state, api.user.id, id).await.map(|()| StatusCode::NO_CONTENT)
}

/// Collection health of the site a verified claim lists: per metric, over 7 or 28 days, how
/// collections across all users ended, the top reasons, the site's answer times; figures fewer
/// than 5 users stand behind are left out
#[utoipa::path(get, path = "/api/directory/claims/{id}/health", params(crate::domain::directory::health::Window), responses(
    (status = 200, description = "The health", body = crate::domain::directory::health::Health),
    (status = 400, description = "Not verified, or another window than 7 or 28 days", body = ErrorBody),
))]
async fn health(
    api: Api,
    Id(id): Id,
    Params(Query(window)): Params<Query<crate::domain::directory::health::Window>>,
) -> Result<Json<crate::domain::directory::health::Health>, ApiError> {
    crate::domain::directory::health::health(&api.state, api.user.id, id, &window).await.map(Json)
}
