//! The AI gateway over plain HTTP (`/api/tools`, `/api/tool-calls`), for clients that do not
//! speak MCP. [`service`] holds the typed views the API and the "AI clients" page share.

pub mod api;
pub mod service;

pub use api::router as api;
