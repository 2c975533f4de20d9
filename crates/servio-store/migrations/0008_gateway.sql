-- The AI gateway: every tool call a user's AI client made, and whether its arguments are kept.
ALTER TABLE users ADD COLUMN log_arguments {bool} NOT NULL DEFAULT {false};

CREATE TABLE tool_calls (
    id {id},
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id {int} REFERENCES sites(id) ON DELETE SET NULL,
    tool TEXT NOT NULL,
    called_at {int} NOT NULL,
    status TEXT NOT NULL,
    duration_ms {real} NOT NULL,
    arguments TEXT
);
CREATE INDEX tool_calls_user ON tool_calls(user_id, id);
