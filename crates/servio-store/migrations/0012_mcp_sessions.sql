-- MCP sessions, so that a request on a session may land on any `servio serve` process: the
-- user who opened it (checked before anything else), and the client's `initialize`
-- parameters as JSON, from which another process restores the session.
CREATE TABLE mcp_sessions (
    id TEXT PRIMARY KEY,
    user_id {int} REFERENCES users(id) ON DELETE CASCADE,
    state TEXT,
    created_at {int} NOT NULL
);
CREATE INDEX mcp_sessions_created ON mcp_sessions(created_at);
