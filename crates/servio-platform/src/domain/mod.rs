//! The domain layer: what the platform does, whichever door a request comes in by. Routes,
//! pages, MCP, the MCP App, refresh and the worker call these operations; none of them knows
//! a request, a status code or a cookie (what a browser carries is the routes'), and none
//! imports a route (the tidy test holds both).
//!
//! - [`accounts`]: sign-up and sign-in behind the abuse checks, passwords, sessions, API tokens.
//! - [`vault`]: a user's sites, credentials, changes waiting and their approval.
//! - [`directory`]: claims, verification and the public listing, with its health figures.
//! - [`dashboard`]: backfills, collect-now, the dashboard data and its cards.
//! - [`figures`]: the one view of a metric every surface shows (§8).
//! - [`gateway`]: the tool catalogue and calls for AI clients, and the call log.
//! - [`tools`]: the catalogue and the call log as the HTTP API and the "AI clients" page show them.
//! - [`refresh`]: refreshing one site's manifest (the periodic rounds are [`crate::refresh`]'s).
//! - [`connect`]: "Connect", OAuth 2.0 with PKCE for a vault site, started and finished.
//! - [`check`]: "test your manifest".

pub mod accounts;
pub mod check;
pub mod connect;
pub mod dashboard;
pub mod directory;
pub mod figures;
pub mod gateway;
pub mod refresh;
pub mod tools;
pub mod vault;
