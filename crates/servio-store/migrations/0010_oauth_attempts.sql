-- "Connect" attempts in progress, shared by every process on the database, so that the
-- browser's return may reach any of them; each expires, and a user has only a few at once.
CREATE TABLE oauth_attempts (
    state_hash TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id BIGINT NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    sealed {blob} NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX oauth_attempts_user ON oauth_attempts(user_id, created_at);
CREATE INDEX oauth_attempts_expiry ON oauth_attempts(expires_at);
