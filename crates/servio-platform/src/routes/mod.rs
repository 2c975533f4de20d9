//! Routes by feature. Each feature folder has a `service` (what the feature does, returning
//! typed views), an `api` (the JSON routes, documented with `#[utoipa::path]`) and `pages`
//! (askama templates over the same views); [`api()`] and [`pages()`] merge them.

pub mod accounts;
pub mod ai;
pub mod check;
pub mod dashboard;
pub mod directory;
pub mod openapi;
pub mod ops;
pub mod pages;
pub mod tools;
pub mod vault;

use axum::Router;
use utoipa_axum::router::OpenApiRouter;

use crate::AppState;

/// Every route of the JSON API, with the OpenAPI document made from the same registration.
pub fn api() -> OpenApiRouter<AppState> {
    let features =
        [accounts::api, vault::api, dashboard::api, directory::api, tools::api, openapi::router, ops::router];
    features.iter().fold(OpenApiRouter::with_openapi(openapi::base()), |api, feature| api.merge(feature()))
}

/// Every web page, with the headers every page carries.
pub fn pages() -> Router<AppState> {
    let features = [accounts::pages, vault::pages, dashboard::pages, directory::pages, ai::pages, check::pages];
    let pages = features.iter().fold(Router::new(), |pages, feature| pages.merge(feature()));
    let pages = pages.fallback(pages::not_found).layer(axum::middleware::map_response(pages::html_errors));
    pages::with_page_headers(pages)
}
