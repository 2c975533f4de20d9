//! The platform's integration tests over real HTTP, on every backend. One binary for the crate,
//! so the platform is linked once.

mod account_page;
mod accounts;
mod ai;
mod approval;
mod arguments;
mod bad_bytes;
mod check_page;
mod common;
mod connect;
mod dashboard;
mod directory;
mod fetches;
mod figures;
mod gateway_limits;
mod json_body;
mod mcp;
mod mcp_subscriptions;
mod ops;
mod pages;
mod processes;
mod routes;
mod scopes;
mod site_page;
mod vault;
