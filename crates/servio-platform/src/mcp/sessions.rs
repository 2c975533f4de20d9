//! MCP sessions kept in the store, so that a request on a session may land on any `servio
//! serve` process sharing the database: the SDK saves each session's `initialize` parameters
//! here after the handshake and, on a process that does not hold the session in memory,
//! restores it from them (replaying the handshake) before it answers. Who opened the session
//! is kept beside them ([`super::transport::Owners`]), and checked first.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::store::{SessionState, SessionStore, SessionStoreError};
use servio_store::{McpSession, McpSessions};

/// The SDK's session store over ours.
pub(super) struct StoredSessions(pub(super) Arc<dyn McpSessions>);

#[async_trait::async_trait]
impl SessionStore for StoredSessions {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(session) = self.0.mcp_session(id).await? else { return Ok(None) };
        let Some(state) = session.state else { return Ok(None) };
        Ok(Some(serde_json::from_str(&state)?))
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let session = McpSession { user_id: None, state: Some(serde_json::to_string(state)?) };
        Ok(self.0.keep_mcp_session(id, &session, crate::now()).await?)
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        Ok(self.0.delete_mcp_session(id).await?)
    }
}
