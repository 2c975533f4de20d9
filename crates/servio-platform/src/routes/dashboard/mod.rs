//! Collection and the dashboard: backfills and collect-now for a vault site, the dashboard data
//! (every metric with its recent values, the latest and its trend, and the cards they share),
//! and the dashboard page. [`crate::domain::dashboard`] does the work and holds the typed views; [`api`](mod@api) and
//! [`pages`](mod@pages) are its two faces.

pub mod api;
pub mod pages;

pub use api::router as api;
pub use pages::router as pages;
