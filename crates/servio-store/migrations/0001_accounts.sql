-- Accounts: users, browser sessions and personal API tokens.
CREATE TABLE users (
    id {id},
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    time_zone TEXT NOT NULL,
    created_at {int} NOT NULL
);

CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,
    created_at {int} NOT NULL,
    expires_at {int} NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);

CREATE TABLE api_tokens (
    id {id},
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at {int} NOT NULL,
    last_used_at {int}
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);
