//! Routes by feature; each module exposes `router()`, merged in [`crate::router`].

pub mod accounts;
pub mod ai_page;
pub mod dashboard;
pub mod dashboard_page;
pub mod directory;
pub mod openapi;
pub mod pages;
pub mod tools;
pub mod vault;
