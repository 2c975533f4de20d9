-- The AI gateway: every tool call a user's AI client made, and whether its arguments are kept.
ALTER TABLE users ADD COLUMN log_arguments BOOLEAN NOT NULL DEFAULT FALSE;

CREATE TABLE tool_calls (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id BIGINT REFERENCES sites(id) ON DELETE SET NULL,
    tool TEXT NOT NULL,
    called_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    arguments TEXT
);
CREATE INDEX tool_calls_user ON tool_calls(user_id, id);
