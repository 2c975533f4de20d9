//! The Directory: a site owner claims an origin and gets `wmcp_verify_` + 32 hex digits; once
//! the manifest lists that token as `verification`, the site is listed publicly and found by
//! full-text search. The token is checked again on every refresh; the listing is suspended while
//! it is missing.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use servio_client::discover;
use servio_client::discovery::origin_of;
use servio_manifest::{CheckOptions, Manifest, Site, check};
use servio_store::{FetchedManifest, Listing};

use crate::accounts::same_secret;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::{AppState, now};

/// The Directory routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/directory", get(search))
        .route("/api/directory/claims", get(list_claims).post(claim))
        .route("/api/directory/claims/{id}/verify", post(verify))
}

#[derive(Deserialize)]
struct NewClaim {
    url: String,
}

fn new_verification_token() -> Result<String, ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| ApiError::Internal(format!("no randomness: {e}")))?;
    Ok(format!("wmcp_verify_{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// Claims the origin of `url` for a user.
pub(crate) async fn create_claim(state: &AppState, user_id: i64, url: &str) -> Result<servio_store::Claim, ApiError> {
    let url = url.trim();
    let url = if url.contains("://") { url.to_owned() } else { format!("https://{url}") };
    let origin = origin_of(&url).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let origin = origin.as_str().trim_end_matches('/');
    Ok(state.store.create_claim(user_id, origin, &new_verification_token()?, now()).await?)
}

async fn claim(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(form): JsonBody<NewClaim>,
) -> Result<Response, ApiError> {
    let claim = create_claim(&state, caller.user.id, &form.url).await?;
    let body = json!({
        "id": claim.id,
        "origin": claim.origin,
        "token": claim.token,
        "next": format!("add \"verification\": \"{}\" to the manifest, then POST /api/directory/claims/{}/verify", claim.token, claim.id),
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

async fn list_claims(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let claims = state.store.claims(caller.user.id).await?;
    let list: Vec<Value> = claims.iter().map(|c| json!({ "id": c.id, "origin": c.origin, "token": c.token })).collect();
    Ok(Json(json!({ "claims": list })))
}

async fn verify(State(state): State<AppState>, caller: Caller, Path(id): Path<i64>) -> Result<Json<Value>, ApiError> {
    verify_claim(&state, caller.user.id, id).await.map(Json)
}

/// Lists the claimed site once its manifest carries the claim's token.
pub(crate) async fn verify_claim(state: &AppState, user_id: i64, id: i64) -> Result<Value, ApiError> {
    let claims = state.store.claims(user_id).await?;
    let claim = claims.into_iter().find(|c| c.id == id).ok_or(ApiError::NotFound)?;
    let found = discover(&state.client, &claim.origin)
        .await
        .map_err(|e| ApiError::Unprocessable(json!({ "error": e.to_string() })))?;
    let text = String::from_utf8(found.body)
        .map_err(|_| ApiError::Unprocessable(json!({ "error": "the manifest is not UTF-8" })))?;
    let report = check(text.as_bytes(), &CheckOptions { site: Site::parse(&claim.origin).ok(), allow: Vec::new() });
    let Some(manifest) = report.manifest else {
        return Err(ApiError::Unprocessable(
            json!({ "error": "the manifest is invalid", "report": servio_manifest::report_json::to_json(found.url.as_str(), &report) }),
        ));
    };
    if !manifest.verification.as_deref().is_some_and(|v| same_secret(v, &claim.token)) {
        return Err(ApiError::Unprocessable(json!({
            "error": format!("the manifest at {} does not list \"verification\": \"{}\"", found.url, claim.token),
        })));
    }
    let fetched = FetchedManifest {
        origin: &claim.origin,
        manifest_url: found.url.as_str(),
        manifest: &text,
        etag: found.validators.etag.as_deref(),
        last_modified: found.validators.last_modified.as_deref(),
    };
    let site = state.store.save_site(&fetched, now()).await?;
    let listing = listing_for(site.id, claim.id, &manifest);
    state.store.save_listing(&listing).await?;
    Ok(json!({ "listed": true, "origin": claim.origin, "name": listing.name }))
}

fn listing_for(site_id: i64, claim_id: i64, manifest: &Manifest) -> Listing {
    Listing {
        site_id,
        claim_id,
        listed: true,
        suspended_reason: None,
        name: manifest.name.clone(),
        description: manifest.description.clone().unwrap_or_default(),
        tools: manifest.tools.iter().map(|t| format!("{}: {}", t.name, t.description)).collect::<Vec<_>>().join("\n"),
        verified_at: now(),
    }
}

/// After a refresh: the listing of `site_id` stays listed while the manifest still carries its
/// claim's token, and is suspended otherwise.
pub async fn recheck_listing(
    state: &AppState,
    site_id: i64,
    origin: &str,
    manifest: &Manifest,
) -> Result<(), servio_store::StoreError> {
    let Some(mut listing) = state.store.listing(site_id).await? else { return Ok(()) };
    let claims = state.store.claims_on(origin).await?;
    let token = claims.iter().find(|c| c.id == listing.claim_id).map(|c| c.token.as_str()).unwrap_or_default();
    if manifest.verification.as_deref().is_some_and(|v| same_secret(v, token)) {
        listing = listing_for(site_id, listing.claim_id, manifest);
    } else {
        listing.listed = false;
        listing.suspended_reason = Some("the verification token is no longer in the manifest".into());
    }
    state.store.save_listing(&listing).await
}

#[derive(Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
}

async fn search(State(state): State<AppState>, Query(query): Query<SearchQuery>) -> Result<Json<Value>, ApiError> {
    crate::text::require_text("q", &query.q)?;
    let found = state.store.search(&query.q, 50).await?;
    let results: Vec<Value> = found
        .iter()
        .map(|f| {
            let tools: Vec<&str> = f.listing.tools.lines().filter_map(|line| line.split(':').next()).collect();
            json!({ "origin": f.origin, "name": f.listing.name, "description": f.listing.description, "tools": tools })
        })
        .collect();
    Ok(Json(json!({ "query": query.q, "results": results })))
}
