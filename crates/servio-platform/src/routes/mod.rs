//! Routes by feature. Each feature folder has a `service` (what the feature does, returning
//! typed views), an `api` (the JSON routes, documented with `#[utoipa::path]`) and `pages`
//! (askama templates over the same views); [`api`] and [`pages`] merge them.

pub mod accounts;
pub mod ai;
pub mod check;
pub mod dashboard;
pub mod directory;
pub mod openapi;
pub mod pages;
pub mod tools;
pub mod vault;

use axum::Router;
use utoipa_axum::router::OpenApiRouter;

use crate::AppState;

/// Every route of the JSON API, with the OpenAPI document made from the same registration.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::base())
        .merge(accounts::api())
        .merge(vault::api())
        .merge(dashboard::api())
        .merge(directory::api())
        .merge(tools::api())
        .merge(openapi::router())
}

/// Every web page, with the headers every page carries.
pub fn pages() -> Router<AppState> {
    let pages = Router::new()
        .merge(accounts::pages())
        .merge(vault::pages())
        .merge(dashboard::pages())
        .merge(directory::pages())
        .merge(ai::pages())
        .merge(check::pages())
        .fallback(pages::not_found)
        .layer(axum::middleware::map_response(pages::html_errors));
    pages::with_page_headers(pages)
}
