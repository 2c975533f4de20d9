//! The Directory, for the API and the pages alike. A site owner claims an origin
//! and gets `wmcp_verify_` + 32 hex digits; once the manifest lists that token as
//! `verification`, the site is listed publicly and found by full-text search. The token is checked again on every refresh; the listing is suspended while
//! it is missing.

pub mod health;

use serde::{Deserialize, Serialize};
use serde_json::json;
use servio_client::discovery::origin_of;
use servio_manifest::Manifest;
use servio_store::Listing;
use utoipa::ToSchema;

use crate::domain::accounts::secrets::same_secret;
use crate::error::ApiError;
use crate::shared::discovered::{discover, fetched_manifest};
use crate::{AppState, now};

/// An origin to claim.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewClaim {
    /// The site's URL or host name (`https://` is assumed); its origin is claimed. Not empty,
    /// without NUL.
    #[schema(min_length = 1, pattern = r"^[^\x00]*[^\s\x00][^\x00]*$")]
    pub url: String,
}

/// A claim of an origin, with the token its manifest must list.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimView {
    /// The claim's id.
    pub id: i64,
    /// The origin claimed.
    pub origin: String,
    /// The token for the manifest's `verification`.
    pub token: String,
    /// `pending` (not verified yet), `verified` (listed) or `suspended`.
    pub state: ClaimState,
    /// Why the listing is suspended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspended_reason: Option<String>,
}

/// Where a claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimState {
    /// Claimed; the token was not found in the manifest yet.
    Pending,
    /// The site is listed.
    Verified,
    /// The site was listed, and the token has gone from its manifest since.
    Suspended,
}

/// A claim just made, and what to do next.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewClaimView {
    /// The claim's id.
    pub id: i64,
    /// The origin claimed.
    pub origin: String,
    /// The token for the manifest's `verification`.
    pub token: String,
    /// What to do next, for people.
    pub next: String,
}

/// The user's claims.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimList {
    /// Oldest first.
    pub claims: Vec<ClaimView>,
}

/// A listing made by a verified claim.
#[derive(Debug, Serialize, ToSchema)]
pub struct Verified {
    /// Always true: a claim that is not verified is refused with `422`.
    pub listed: bool,
    /// The origin listed.
    pub origin: String,
    /// The manifest's name, as listed.
    pub name: String,
}

/// A site found in the Directory.
#[derive(Debug, Serialize, ToSchema)]
pub struct Hit {
    /// The site's origin.
    pub origin: String,
    /// The manifest's name.
    pub name: String,
    /// The manifest's description.
    pub description: String,
    /// The names of its tools.
    pub tools: Vec<String>,
}

/// A search of the Directory.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    /// The words searched for.
    pub query: String,
    /// At most 50, best first.
    pub results: Vec<Hit>,
}

fn new_verification_token() -> Result<String, ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(ApiError::internal)?;
    Ok(format!("wmcp_verify_{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// Claims the origin of `url` for a user.
pub(crate) async fn create_claim(state: &AppState, user_id: i64, url: &str) -> Result<servio_store::Claim, ApiError> {
    let url = url.trim();
    if url.is_empty() {
        return Err(ApiError::BadRequest(crate::shared::discovered::EMPTY_URL.into()));
    }
    let url = if url.contains("://") { url.to_owned() } else { format!("https://{url}") };
    let origin = origin_of(&url).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let origin = origin.as_str().trim_end_matches('/');
    let limit = state.quotas.pending_claims;
    match state.store.create_claim(user_id, origin, &new_verification_token()?, now(), limit).await {
        Err(servio_store::StoreError::AtLimit { limit, .. }) => Err(ApiError::Conflict(format!(
            "you have {limit} claims waiting for verification, the most one user may have: verify one, or withdraw \
             one you no longer pursue (DELETE /api/directory/claims/{{id}}), before claiming another origin"
        ))),
        claim => Ok(claim?),
    }
}

/// Withdraws one of the user's claims that is not verified; "not found" when there is none
/// such (another user's, or one a listing stands on).
pub(crate) async fn withdraw_claim(state: &AppState, user_id: i64, id: i64) -> Result<(), ApiError> {
    if state.store.delete_pending_claim(user_id, id).await? { Ok(()) } else { Err(ApiError::NotFound) }
}

/// What a new claim answers: the claim, and what to do next.
pub(crate) fn new_claim_view(claim: servio_store::Claim) -> NewClaimView {
    NewClaimView {
        next: format!(
            "add \"verification\": \"{}\" to the manifest, then POST /api/directory/claims/{}/verify",
            claim.token, claim.id
        ),
        id: claim.id,
        origin: claim.origin,
        token: claim.token,
    }
}

/// The user's claims.
pub(crate) async fn claims(state: &AppState, user_id: i64) -> Result<ClaimList, ApiError> {
    let mut claims = Vec::new();
    for claim in state.store.claims(user_id).await? {
        let listing = state.store.claim_listing(claim.id).await?;
        let (state, suspended_reason) = match listing {
            None => (ClaimState::Pending, None),
            Some(listing) if listing.listed => (ClaimState::Verified, None),
            Some(listing) => (ClaimState::Suspended, listing.suspended_reason),
        };
        claims.push(ClaimView { id: claim.id, origin: claim.origin, token: claim.token, state, suspended_reason });
    }
    Ok(ClaimList { claims })
}

/// The user's claim `id`; "not found" when it is not theirs.
pub(crate) async fn owned_claim(state: &AppState, user_id: i64, id: i64) -> Result<servio_store::Claim, ApiError> {
    let claims = state.store.claims(user_id).await?;
    claims.into_iter().find(|c| c.id == id).ok_or(ApiError::NotFound)
}

/// Lists the claimed site once its manifest carries the claim's token. The fetch spends one of
/// the site's fetches (`429` when they are spent for now), whoever claims it.
pub(crate) async fn verify_claim(state: &AppState, user_id: i64, id: i64) -> Result<Verified, ApiError> {
    let claim = owned_claim(state, user_id, id).await?;
    let found = discover(state, &claim.origin)
        .await?
        .map_err(|e| ApiError::Unprocessable(json!({ "error": e.to_string() })))?;
    let fetched = fetched_manifest(&claim.origin, &found)?;
    let manifests = state.collector.manifests();
    let checked = manifests.text(&claim.origin, fetched.manifest, servio_core::manifests::Wait::Bounded).await?;
    let report = &checked.report;
    let Some(manifest) = &report.manifest else {
        return Err(ApiError::Unprocessable(
            json!({ "error": "the manifest is invalid", "report": servio_manifest::report_json::to_json(found.url.as_str(), report) }),
        ));
    };
    if !manifest.verification.as_deref().is_some_and(|v| same_secret(v, &claim.token)) {
        return Err(ApiError::Unprocessable(json!({
            "error": format!("the manifest at {} does not list \"verification\": \"{}\"", found.url, claim.token),
        })));
    }
    let site = state.store.save_site(&fetched, now()).await?;
    let listing = listing_for(site.id, claim.id, manifest);
    state.store.save_listing(&listing).await?;
    Ok(Verified { listed: true, origin: claim.origin, name: listing.name })
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

/// The Directory's listed sites matching `query`.
pub(crate) async fn search(state: &AppState, query: String) -> Result<SearchResults, ApiError> {
    crate::text::require_text("q", &query)?;
    let found = state.store.search(&query, 50).await?;
    let results = found
        .into_iter()
        .map(|f| Hit {
            tools: f.listing.tools.lines().filter_map(|line| line.split(':').next()).map(str::to_owned).collect(),
            origin: f.origin,
            name: f.listing.name,
            description: f.listing.description,
        })
        .collect();
    Ok(SearchResults { query, results })
}
