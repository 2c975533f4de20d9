-- The Directory: ownership claims with their verification tokens, and the public listings,
-- searchable through a tsvector with a GIN index.
CREATE TABLE claims (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    origin TEXT NOT NULL,
    token TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    UNIQUE (user_id, origin)
);

CREATE TABLE listings (
    site_id BIGINT PRIMARY KEY REFERENCES sites(id) ON DELETE CASCADE,
    claim_id BIGINT NOT NULL REFERENCES claims(id) ON DELETE CASCADE,
    listed BOOLEAN NOT NULL,
    suspended_reason TEXT,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    tools TEXT NOT NULL,
    verified_at BIGINT NOT NULL,
    -- Punctuation becomes spaces first, so that `forum.searchThreads` is two words, as in
    -- SQLite's FTS5 tokenizer, instead of one host-like token.
    search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', regexp_replace(name, '[^[:alnum:]]+', ' ', 'g')), 'A')
        || setweight(to_tsvector('simple', regexp_replace(description, '[^[:alnum:]]+', ' ', 'g')), 'B')
        || setweight(to_tsvector('simple', regexp_replace(tools, '[^[:alnum:]]+', ' ', 'g')), 'C')
    ) STORED
);
CREATE INDEX listings_search ON listings USING GIN (search);
