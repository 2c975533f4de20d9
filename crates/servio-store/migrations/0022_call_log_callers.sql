-- The call log names who made each call and says what went wrong in words (issue 26, point 8):
-- the API token (its id; no foreign key, so that a revoked token's calls stay, shown as made
-- with a revoked token), what was asked (`tool`: a site tool's call; `metrics`: the platform's
-- `servio_metrics`; `resource`: a metric's resource read, its address in `tool`; `prompt`), and
-- the error's words beside its status.
ALTER TABLE tool_calls ADD COLUMN token_id {int};
ALTER TABLE tool_calls ADD COLUMN kind TEXT NOT NULL DEFAULT 'tool';
ALTER TABLE tool_calls ADD COLUMN detail TEXT;
