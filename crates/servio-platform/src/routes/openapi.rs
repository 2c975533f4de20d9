//! Every route of the JSON API in one table, and the OpenAPI 3.1 document made from it at
//! `/api/openapi.json`. Tests walk the same table, so a route cannot be added without being
//! documented and checked for who may call it.

use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Map, Value, json};

use crate::AppState;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Public,
    /// A signed-in user (session cookie, plus the CSRF token for changes, or an API token).
    User,
}

/// One route of the API.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: &'static str,
    /// The path, with `{id}` for path parameters.
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
    /// What it does.
    pub summary: &'static str,
}

const fn route(method: &'static str, path: &'static str, access: Access, summary: &'static str) -> Route {
    Route { method, path, access, summary }
}

/// Every route of the JSON API.
pub const ROUTES: &[Route] = &[
    route("POST", "/api/signup", Access::Public, "Create an account and start a session"),
    route("POST", "/api/signin", Access::Public, "Start a session (a new one each time)"),
    route("POST", "/api/signout", Access::User, "End the current session"),
    route("GET", "/api/me", Access::User, "The signed-in user (and the session's CSRF token)"),
    route("PUT", "/api/me/time_zone", Access::User, "Change the user's IANA time zone"),
    route("GET", "/api/tokens", Access::User, "The user's personal API tokens, without their secrets"),
    route("POST", "/api/tokens", Access::User, "Create a personal API token, shown once"),
    route("DELETE", "/api/tokens/{id}", Access::User, "Delete one of the user's API tokens"),
    route("GET", "/api/vault", Access::User, "The sites in the user's vault"),
    route(
        "POST",
        "/api/vault",
        Access::User,
        "Add a site by URL: discovered, validated, refused with its report when invalid",
    ),
    route("GET", "/api/vault/{id}", Access::User, "One site: report, tools, brief, pending changes"),
    route("DELETE", "/api/vault/{id}", Access::User, "Take a site out of the vault"),
    route(
        "PUT",
        "/api/vault/{id}/credential",
        Access::User,
        "Set the site's bearer token (encrypted at rest, never shown again)",
    ),
    route("POST", "/api/vault/{id}/refresh", Access::User, "Refresh the site's manifest now"),
    route("POST", "/api/vault/{id}/approve", Access::User, "Approve the site's current manifest"),
    route("GET", "/api/vault/{id}/versions", Access::User, "Every version of the manifest with what changed"),
    route(
        "POST",
        "/api/vault/{id}/backfill",
        Access::User,
        "Collect the site's metrics for a range of dates (from, to)",
    ),
    route(
        "POST",
        "/api/vault/{id}/collect",
        Access::User,
        "Collect the site's due periods now (failing ones wait out their backoff)",
    ),
    route(
        "GET",
        "/api/dashboard",
        Access::User,
        "Every metric with its recent values, the latest and its trend, and the slots they share",
    ),
    route("GET", "/api/directory", Access::Public, "Search the Directory (?q=words)"),
    route("GET", "/api/directory/claims", Access::User, "The user's ownership claims"),
    route("POST", "/api/directory/claims", Access::User, "Claim an origin; returns the verification token"),
    route(
        "POST",
        "/api/directory/claims/{id}/verify",
        Access::User,
        "List the site once its manifest carries the token",
    ),
    route(
        "GET",
        "/api/tools",
        Access::User,
        "The AI gateway's catalogue: every approved tool of the vault under its prefixed name",
    ),
    route(
        "POST",
        "/api/tools/{name}/call",
        Access::User,
        "Call a tool by prefixed name; the body is its arguments (400 names each offending path, 502 when the site fails)",
    ),
    route("GET", "/api/tool-calls", Access::User, "The user's gateway call log, newest first (?limit=N)"),
    route(
        "PUT",
        "/api/me/log_arguments",
        Access::User,
        "Whether the call log keeps each call's arguments (off by default)",
    ),
    route("GET", "/api/openapi.json", Access::Public, "This document"),
];

/// The OpenAPI route.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/openapi.json", get(|| async { Json(document()) }))
}

/// The shape of `GET /api/dashboard`. `metrics` is one entry per (site, metric), as it has
/// always been; `slots` (added later, so older clients can ignore it) groups them as the
/// dashboard shows them, see [`crate::slots`].
fn dashboard_schema() -> Value {
    let nullable = |schema: Value| json!({ "oneOf": [schema, { "type": "null" }] });
    let value = json!({ "type": "object", "properties": {
        "period": { "type": "string", "description": "The period's first local date" },
        "value": { "type": "number" },
    }});
    json!({
        "type": "object",
        "required": ["time_zone", "metrics", "slots"],
        "properties": {
            "time_zone": { "type": "string", "description": "The user's IANA zone; periods are in it" },
            "metrics": { "type": "array", "items": { "type": "object", "properties": {
                "site": { "type": "object", "properties": {
                    "id": { "type": "integer" }, "origin": { "type": "string" }, "name": { "type": "string" } } },
                "key": { "type": "string" },
                "label": nullable(json!({ "type": "string", "description": "The canonical key's label" })),
                "unit": nullable(json!({ "type": "string" })),
                "granularity": { "enum": ["hour", "day", "week", "month"] },
                "latest": nullable(json!({ "type": "object", "properties": {
                    "period": { "type": "string" }, "value": { "type": "number" },
                    "raw": { "description": "The value as the site sent it, as JSON: a number or a string" } } })),
                "change": nullable(json!({ "type": "object",
                    "description": "Against the comparison period of §8, only when that was collected",
                    "properties": { "against": { "type": "string" }, "change": { "type": "number" },
                                    "percent": { "type": "number", "description": "Absent when the previous value is 0" } } })),
                "values": { "type": "array", "items": value, "description": "Recent values, oldest first" },
            }}},
            "slots": { "type": "array", "description": "One per canonical key (shared by every site declaring it) and one per other (site, metric), in the order of `metrics`", "items": { "type": "object", "properties": {
                "key": { "type": "string" },
                "label": nullable(json!({ "type": "string" })),
                "canonical": { "type": "boolean" },
                "metrics": { "type": "array", "items": { "type": "integer" }, "description": "Indexes into `metrics`" },
                "sites": { "type": "array", "items": { "type": "integer" }, "description": "Site ids, in the order of `metrics`" },
                "total": nullable(json!({ "type": "object",
                    "description": "Only for two sites or more with the same unit and granularity, for the latest period any of them collected",
                    "properties": {
                        "period": { "type": "string" },
                        "unit": nullable(json!({ "type": "string" })),
                        "value": nullable(json!({ "type": "number", "description": "The sum; null when a site has no value for the period (a gap is never a zero)" })),
                        "sites": { "type": "array", "items": { "type": "integer" }, "description": "The sites summed" },
                        "missing": { "type": "array", "items": { "type": "integer" }, "description": "The sites with no value for the period" },
                    } })),
                "note": nullable(json!({ "type": "string", "description": "Why there is no total (units or periods differ, a site is missing)" })),
            }}},
        },
    })
}

/// The OpenAPI 3.1 document of [`ROUTES`].
pub fn document() -> Value {
    let mut paths = Map::new();
    for r in ROUTES {
        let mut operation = json!({
            "summary": r.summary,
            "responses": {
                "200": { "description": "Success (201 when something was created, 204 when there is no body)" },
                "400": { "description": "Malformed request; `error` says what and where" },
                "401": { "description": "Not signed in" },
                "403": { "description": "Missing or wrong CSRF token on a cookie-authenticated change" },
                "404": { "description": "Not there, or not yours" },
            },
        });
        if r.access == Access::User {
            operation["security"] = json!([{ "session": [] }, { "token": [] }]);
        }
        if r.path.contains("{id}") {
            operation["parameters"] =
                json!([{ "name": "id", "in": "path", "required": true, "schema": { "type": "integer" } }]);
        }
        if r.path.contains("{name}") {
            operation["parameters"] = json!([{
                "name": "name", "in": "path", "required": true, "schema": { "type": "string" },
                "description": "The tool's prefixed name, as `GET /api/tools` lists it",
            }]);
        }
        if (r.method, r.path) == ("GET", "/api/dashboard") {
            operation["responses"]["200"]["content"] = json!({ "application/json": { "schema": dashboard_schema() } });
        }
        let item = paths.entry(r.path.to_owned()).or_insert_with(|| json!({}));
        item[r.method.to_lowercase()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": { "title": "Servio platform API", "version": env!("CARGO_PKG_VERSION") },
        "paths": paths,
        "components": { "securitySchemes": {
            "session": { "type": "apiKey", "in": "cookie", "name": crate::auth::SESSION_COOKIE,
                         "description": "Changes also need the X-CSRF-Token header" },
            "token": { "type": "http", "scheme": "bearer", "description": "A personal API token" },
        }},
    })
}
