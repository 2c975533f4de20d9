//! Routes by feature: thin adapters over the domain layer ([`crate::domain`]). Each feature
//! folder has an `api` (the JSON routes, documented with `#[utoipa::path]`) and `pages`
//! (askama templates over the domain's typed views, with what every page shares in
//! [`crate::web`]); [`api()`] and [`pages()`] merge them. No route module imports another
//! (the tidy test holds it).

pub mod accounts;
pub mod ai;
pub mod check;
pub mod dashboard;
pub mod directory;
pub mod openapi;
pub mod ops;

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
    let pages = pages.fallback(crate::web::not_found).layer(axum::middleware::map_response(crate::web::html_errors));
    crate::web::with_page_headers(pages)
}
