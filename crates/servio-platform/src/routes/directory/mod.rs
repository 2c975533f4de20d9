//! The Directory: a site owner claims an origin and gets `wmcp_verify_` + 32 hex digits; once
//! the manifest lists that token as `verification`, the site is listed publicly and found by
//! full-text search. [`crate::domain::directory`] does the work and holds the typed views; [`api`](mod@api) and [`pages`](mod@pages)
//! are its two faces.

pub mod api;
pub mod pages;

pub use api::router as api;
pub use pages::router as pages;
