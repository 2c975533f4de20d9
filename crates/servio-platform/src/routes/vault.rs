//! The vault over the JSON API: a user adds a site by URL (discovered and validated, refused
//! with the report when invalid), sees their sites with their tools and report, gives each a
//! credential (encrypted at rest, never shown again) and removes them. One user's vault is out
//! of every other user's reach: what is not yours is "not found".

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use servio_client::{DiscoveryError, discover};
use servio_manifest::report_json::to_json;
use servio_manifest::{Report, Site};
use servio_store::{FetchedManifest, SiteRecord};

use crate::approval::{Pending, acting_manifest, report_of};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::{AppState, now};
use servio_collector::credentials::Credential as SiteCredential;

/// The vault routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/vault", get(list).post(add))
        .route("/api/vault/{id}", get(show).delete(remove))
        .route("/api/vault/{id}/credential", put(set_credential))
        .route("/api/vault/{id}/refresh", axum::routing::post(refresh_now))
        .route("/api/vault/{id}/approve", axum::routing::post(approve))
        .route("/api/vault/{id}/versions", get(versions))
}

#[derive(Deserialize)]
struct AddSite {
    url: String,
    token: Option<String>,
}

/// The report of a stored or fetched manifest, checked as served by its origin.
fn site_json(record: &SiteRecord, report: &Report, has_credential: bool) -> Value {
    let site = Site::parse(&record.origin).ok();
    let manifest = report.manifest.as_ref();
    let tools: Vec<Value> = manifest
        .map(|m| {
            m.tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "prefixed_name": site.as_ref().map(|s| s.prefixed_name(&t.name)),
                        "description": t.description,
                        "input_schema": t.input_schema,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "id": record.id,
        "origin": record.origin,
        "manifest_url": record.manifest_url,
        "name": manifest.map(|m| m.name.clone()),
        "description": manifest.and_then(|m| m.description.clone()),
        "version": manifest.map(|m| m.version.clone()),
        "auth": manifest.map(|m| match m.auth { servio_manifest::Auth::Bearer => "bearer", servio_manifest::Auth::OAuth2 { .. } => "oauth2" }),
        "tools": tools,
        "fetched_at": record.fetched_at,
        "stale_error": record.stale_error,
        "has_credential": has_credential,
        "report": to_json(&record.manifest_url, report),
    })
}

fn discovery_error(error: DiscoveryError) -> ApiError {
    match &error {
        DiscoveryError::BadInput(_) => ApiError::BadRequest(error.to_string()),
        _ if error.refusal().is_some() => ApiError::BadRequest(error.to_string()),
        _ => ApiError::Unprocessable(json!({ "error": error.to_string() })),
    }
}

/// Adds the site at `url` to a user's vault with an optional bearer token (sealed). Refused
/// with the report when the manifest is invalid.
pub(crate) async fn add_site(
    state: &AppState,
    user_id: i64,
    url: &str,
    token: Option<&str>,
) -> Result<Value, ApiError> {
    let token = token.map(checked_token).transpose()?.flatten();
    let url = url.trim();
    let url = if url.contains("://") { url.to_owned() } else { format!("https://{url}") };
    let found = discover(&state.client, &url).await.map_err(discovery_error)?;
    let origin = found.origin.as_str().trim_end_matches('/').to_owned();
    let text = String::from_utf8(found.body)
        .map_err(|_| ApiError::Unprocessable(json!({ "error": "the manifest is not UTF-8" })))?;
    let report = report_of(&origin, &text);
    if !report.is_valid() {
        return Err(ApiError::Unprocessable(json!({
            "error": "the manifest is invalid; nothing was added",
            "report": to_json(found.url.as_str(), &report),
        })));
    }
    let fetched = FetchedManifest {
        origin: &origin,
        manifest_url: found.url.as_str(),
        manifest: &text,
        etag: found.validators.etag.as_deref(),
        last_modified: found.validators.last_modified.as_deref(),
    };
    let credential = token.map(|token| SiteCredential::Token(token.to_owned()));
    let record = state.credentials().add_site(&fetched, user_id, credential.as_ref(), now()).await?;
    state.gateway.catalogue_changed(user_id);
    Ok(site_json(&record, &report, token.is_some()))
}

async fn add(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(form): JsonBody<AddSite>,
) -> Result<Response, ApiError> {
    let site = add_site(&state, caller.user.id, &form.url, form.token.as_deref()).await?;
    Ok((StatusCode::CREATED, Json(json!({ "site": site }))).into_response())
}

async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let sites = state.store.vault(caller.user.id).await?;
    let sites: Vec<Value> = sites
        .iter()
        .map(|record| {
            let report = report_of(&record.origin, &record.manifest);
            json!({
                "id": record.id,
                "origin": record.origin,
                "name": report.manifest.as_ref().map(|m| m.name.clone()),
                "tools": report.manifest.as_ref().map_or(0, |m| m.tools.len()),
                "stale_error": record.stale_error,
            })
        })
        .collect();
    Ok(Json(json!({ "sites": sites })))
}

async fn show(State(state): State<AppState>, caller: Caller, Path(id): Path<i64>) -> Result<Json<Value>, ApiError> {
    let entry = state.store.vault_entry(caller.user.id, id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(json!({ "site": entry_json(&entry) })))
}

/// A vault entry for its owner: the site, its report, and what changed since they approved.
/// Tools whose description or schema changed are marked `held_back` until approved.
pub(crate) fn entry_json(entry: &servio_store::VaultEntry) -> Value {
    let report = report_of(&entry.site.origin, &entry.site.manifest);
    let mut value = site_json(&entry.site, &report, entry.credential.is_some());
    let pending = Pending::between(&entry.site.origin, acting_manifest(entry), &entry.site.manifest);
    let held: Vec<&str> = pending.diff.held_back_tools();
    if let Some(tools) = value["tools"].as_array_mut() {
        for tool in tools {
            let name = tool["name"].as_str().unwrap_or_default().to_owned();
            tool["held_back"] = json!(held.contains(&name.as_str()));
        }
    }
    value["pending"] = json!({
        "needs_approval": pending.needs_approval(),
        "changes": pending.lines(),
        "held_back_tools": held,
    });
    value
}

async fn refresh_now(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Value>, ApiError> {
    let entry = state.store.vault_entry(caller.user.id, id).await?.ok_or(ApiError::NotFound)?;
    let outcome = crate::refresh::refresh_site(&state, &entry.site).await?;
    let entry = state.store.vault_entry(caller.user.id, id).await?.ok_or(ApiError::NotFound)?;
    let outcome = match outcome {
        crate::refresh::Outcome::Unchanged => json!({ "outcome": "unchanged" }),
        crate::refresh::Outcome::Changed => json!({ "outcome": "changed" }),
        crate::refresh::Outcome::Stale(reason) => json!({ "outcome": "stale", "reason": reason }),
    };
    Ok(Json(json!({ "refresh": outcome, "site": entry_json(&entry) })))
}

async fn approve(State(state): State<AppState>, caller: Caller, Path(id): Path<i64>) -> Result<Json<Value>, ApiError> {
    if !state.store.approve(caller.user.id, id).await? {
        return Err(ApiError::NotFound);
    }
    state.gateway.catalogue_changed(caller.user.id);
    let entry = state.store.vault_entry(caller.user.id, id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(json!({ "site": entry_json(&entry) })))
}

/// Every version of the manifest, newest first, each with what changed from the one before.
async fn versions(State(state): State<AppState>, caller: Caller, Path(id): Path<i64>) -> Result<Json<Value>, ApiError> {
    versions_json(&state, caller.user.id, id).await.map(Json)
}

/// The versions of a vault site, newest first, each with what changed.
pub(crate) async fn versions_json(state: &AppState, user_id: i64, id: i64) -> Result<Value, ApiError> {
    let entry = state.store.vault_entry(user_id, id).await?.ok_or(ApiError::NotFound)?;
    let versions = state.store.versions(entry.site.id).await?;
    let parsed: Vec<Option<servio_manifest::Manifest>> =
        versions.iter().map(|v| report_of(&entry.site.origin, &v.manifest).manifest).collect();
    let list: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, version)| {
            let changes = match (parsed.get(i + 1).and_then(Option::as_ref), parsed[i].as_ref()) {
                (Some(older), Some(newer)) => servio_manifest::diff::diff(older, newer).lines(),
                (None, _) if i + 1 == versions.len() => vec!["first version".to_owned()],
                _ => Vec::new(),
            };
            json!({ "id": version.id, "fetched_at": version.fetched_at, "changes": changes })
        })
        .collect();
    Ok(json!({ "versions": list }))
}

#[derive(Deserialize)]
struct Credential {
    token: String,
}

async fn set_credential(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    JsonBody(form): JsonBody<Credential>,
) -> Result<StatusCode, ApiError> {
    store_token(&state, caller.user.id, id, &form.token).await.map(|()| StatusCode::NO_CONTENT)
}

/// The longest credential stored: a bearer token is tens or hundreds of bytes; anything
/// near this is a paste gone wrong, and the store should not hold megabytes per user.
pub const MAX_CREDENTIAL_BYTES: usize = 8 * 1024;

/// A pasted token, trimmed: `None` when empty, an error when longer than
/// [`MAX_CREDENTIAL_BYTES`] or not something an `Authorization` header can carry.
pub(crate) fn checked_token(token: &str) -> Result<Option<&str>, ApiError> {
    let token = token.trim();
    if token.len() > MAX_CREDENTIAL_BYTES {
        return Err(ApiError::BadRequest(format!(
            "the token is {} bytes long; a credential may be at most 8 KiB ({MAX_CREDENTIAL_BYTES} bytes): paste only the token",
            token.len()
        )));
    }
    if let Some(bad) = token.chars().find(|c| c.is_control() || !c.is_ascii()) {
        return Err(ApiError::BadRequest(format!(
            "the token has a character an Authorization header cannot carry ({:?}): paste only the token",
            bad
        )));
    }
    Ok((!token.is_empty()).then_some(token))
}

/// Seals a pasted bearer token as the credential of a user's vault site.
pub(crate) async fn store_token(state: &AppState, user_id: i64, site_id: i64, token: &str) -> Result<(), ApiError> {
    let Some(token) = checked_token(token)? else {
        return Err(ApiError::BadRequest("`token` must not be empty".into()));
    };
    let stored = state.credentials().set_credential(user_id, site_id, &SiteCredential::Token(token.to_owned())).await?;
    match stored {
        true => Ok(()),
        false => Err(ApiError::NotFound),
    }
}

async fn remove(State(state): State<AppState>, caller: Caller, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    match state.store.remove_from_vault(caller.user.id, id).await? {
        true => {
            state.gateway.catalogue_changed(caller.user.id);
            Ok(StatusCode::NO_CONTENT)
        }
        false => Err(ApiError::NotFound),
    }
}
