-- The AI gateway: every tool call a user's AI client made, and whether its arguments are kept.
ALTER TABLE users ADD COLUMN log_arguments INTEGER NOT NULL DEFAULT 0;

CREATE TABLE tool_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id INTEGER REFERENCES sites(id) ON DELETE SET NULL,
    tool TEXT NOT NULL,
    called_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    arguments TEXT
);
CREATE INDEX tool_calls_user ON tool_calls(user_id, id);
