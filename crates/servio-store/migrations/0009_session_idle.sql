-- Sessions end after a time without use as well as at their absolute expiry: when each was
-- last used (to the hour) and how long it may idle. Existing sessions count as used when made.
ALTER TABLE sessions ADD COLUMN last_used_at {int} NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN idle_seconds {int} NOT NULL DEFAULT 604800;
UPDATE sessions SET last_used_at = created_at;
-- Purging finds expired sessions by their expiry.
CREATE INDEX sessions_expires ON sessions(expires_at);
