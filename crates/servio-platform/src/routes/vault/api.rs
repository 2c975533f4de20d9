//! The vault over the JSON API.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::Api;
use crate::domain::vault::{
    self, AddSite, BearerToken, Decision, RefreshAnswer, SiteAnswer, SiteList, Verdict, VersionList,
};
use crate::error::{ApiError, ErrorBody};
use crate::json_body::JsonBody;
use crate::params::Id;

/// The vault routes of the API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, add))
        .routes(routes!(show, remove))
        .routes(routes!(set_credential))
        .routes(routes!(refresh))
        .routes(routes!(approve))
        .routes(routes!(keep))
        .routes(routes!(versions))
}

/// The sites in the user's vault
#[utoipa::path(get, path = "/api/vault", operation_id = "list_vault", responses((status = 200, description = "The sites", body = SiteList)))]
async fn list(api: Api) -> Result<Json<SiteList>, ApiError> {
    vault::list(&api.state, api.user.id).await.map(Json)
}

/// Add a site by URL: discovered, validated, refused with its report when invalid
#[utoipa::path(post, path = "/api/vault", request_body = AddSite, responses(
    (status = 201, description = "Added", body = SiteAnswer),
    (status = 400, description = "Not a URL the platform may fetch, a manifest whose `server.url` or OAuth \
                                  endpoints the address guard refuses (nothing is stored), or a bad token", body = ErrorBody),
    (status = 409, description = "The site is in the vault already (nothing was fetched), or the vault holds as many sites as one user may (`--max-sites`)", body = ErrorBody),
    (status = 422, description = "No valid manifest there: `error`, and `report` for an invalid one", body = ErrorBody),
    (status = 429, description = "The site's manifest was fetched as often as the platform fetches one site's \
                                  (--manifest-fetches-per-site a minute, whoever asks): try again after Retry-After",
     body = ErrorBody),
))]
async fn add(api: Api, JsonBody(form): JsonBody<AddSite>) -> Result<Response, ApiError> {
    // The page's form sends an empty field for "no token"; the API leaves the member out.
    if form.token.as_deref().is_some_and(|token| token.trim().is_empty()) {
        return Err(ApiError::BadRequest("`token` must not be empty: leave it out for a site that needs none".into()));
    }
    let site = vault::add_site(&api.state, api.user.id, &form.url, form.token.as_deref()).await?;
    Ok((StatusCode::CREATED, Json(SiteAnswer { site })).into_response())
}

/// One site: report, tools, brief, pending changes
#[utoipa::path(get, path = "/api/vault/{id}", responses((status = 200, description = "The site", body = SiteAnswer)))]
async fn show(api: Api, Id(id): Id) -> Result<Json<SiteAnswer>, ApiError> {
    Ok(Json(SiteAnswer { site: vault::view(&api.state, api.user.id, id).await? }))
}

/// Take a site out of the vault
#[utoipa::path(delete, path = "/api/vault/{id}", responses((status = 204, description = "Removed")))]
async fn remove(api: Api, Id(id): Id) -> Result<StatusCode, ApiError> {
    vault::remove(&api.state, api.user.id, id).await.map(|()| StatusCode::NO_CONTENT)
}

/// Set the site's bearer token (encrypted at rest, never shown again)
#[utoipa::path(put, path = "/api/vault/{id}/credential", request_body = BearerToken, responses(
    (status = 204, description = "Stored"),
    (status = 400, description = "Empty, too long, or not a header value", body = ErrorBody),
))]
async fn set_credential(api: Api, Id(id): Id, JsonBody(form): JsonBody<BearerToken>) -> Result<StatusCode, ApiError> {
    vault::store_token(&api.state, api.user.id, id, &form.token).await.map(|()| StatusCode::NO_CONTENT)
}

/// Refresh the site's manifest now
#[utoipa::path(post, path = "/api/vault/{id}/refresh", responses(
    (status = 200, description = "What the refresh did, and the site after it", body = RefreshAnswer),
    (status = 429, description = "The site was refreshed on request less than --refresh-every ago, or its manifest \
                                  was fetched as often as the platform fetches one site's (--manifest-fetches-per-site \
                                  a minute, whoever asks): try again after Retry-After", body = ErrorBody),
))]
async fn refresh(api: Api, Id(id): Id) -> Result<Json<RefreshAnswer>, ApiError> {
    vault::refresh(&api.state, api.user.id, id).await.map(Json)
}

/// Approve a version of the site's manifest: the current one, named as `pending.version` gives it
#[utoipa::path(post, path = "/api/vault/{id}/approve", request_body = Decision, responses(
    (status = 200, description = "The site, acting with the approved version", body = SiteAnswer),
    (status = 409, description = "The version named is no longer the site's current one: what changed since", body = ErrorBody),
))]
async fn approve(api: Api, Id(id): Id, JsonBody(form): JsonBody<Decision>) -> Result<Json<SiteAnswer>, ApiError> {
    decide(api, id, form, Verdict::Approve).await
}

/// Keep the approved version: the changes up to the named (current) version are not offered again until the site changes again
#[utoipa::path(post, path = "/api/vault/{id}/keep", request_body = Decision, responses(
    (status = 200, description = "The site, still acting with the approved version", body = SiteAnswer),
    (status = 409, description = "The version named is no longer the site's current one: what changed since", body = ErrorBody),
))]
async fn keep(api: Api, Id(id): Id, JsonBody(form): JsonBody<Decision>) -> Result<Json<SiteAnswer>, ApiError> {
    decide(api, id, form, Verdict::Keep).await
}

async fn decide(api: Api, id: i64, form: Decision, verdict: Verdict) -> Result<Json<SiteAnswer>, ApiError> {
    vault::decide(&api.state, api.user.id, id, form.version_id, verdict).await?;
    Ok(Json(SiteAnswer { site: vault::view(&api.state, api.user.id, id).await? }))
}

/// Every version of the manifest with what changed
#[utoipa::path(get, path = "/api/vault/{id}/versions", responses((status = 200, description = "Newest first", body = VersionList)))]
async fn versions(api: Api, Id(id): Id) -> Result<Json<VersionList>, ApiError> {
    vault::versions(&api.state, api.user.id, id).await.map(Json)
}
