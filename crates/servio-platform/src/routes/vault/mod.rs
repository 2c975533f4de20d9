//! The vault: a user's sites, each with its manifest's report and tools, a credential (sealed,
//! never shown again), changes waiting for approval, and "Connect" for OAuth sites.
//! [`crate::domain::vault`] does the work and holds the typed views; [`api`](mod@api) and [`pages`](mod@pages) are its two faces.

pub mod api;
pub mod pages;

pub use api::router as api;
pub use pages::router as pages;
