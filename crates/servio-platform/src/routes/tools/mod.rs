//! The AI gateway over plain HTTP (`/api/tools`, `/api/tool-calls`), for clients that do not
//! speak MCP. [`crate::domain::tools`] holds the typed views the API and the "AI clients" page share.

pub mod api;

pub use api::router as api;
