-- The Directory: ownership claims with their verification tokens, and the public listings,
@sqlite -- searchable through FTS5.
@postgres -- searchable through a tsvector with a GIN index.
CREATE TABLE claims (
    id {id},
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    origin TEXT NOT NULL,
    token TEXT NOT NULL UNIQUE,
    created_at {int} NOT NULL,
    UNIQUE (user_id, origin)
);

CREATE TABLE listings (
    site_id {int} PRIMARY KEY REFERENCES sites(id) ON DELETE CASCADE,
    claim_id {int} NOT NULL REFERENCES claims(id) ON DELETE CASCADE,
    listed {bool} NOT NULL,
    suspended_reason TEXT,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    tools TEXT NOT NULL,
@sqlite     verified_at INTEGER NOT NULL
@postgres     verified_at BIGINT NOT NULL,
@postgres     -- Punctuation becomes spaces first, so that `forum.searchThreads` is two words, as in
@postgres     -- SQLite's FTS5 tokenizer, instead of one host-like token.
@postgres     search tsvector GENERATED ALWAYS AS (
@postgres         setweight(to_tsvector('simple', regexp_replace(name, '[^[:alnum:]]+', ' ', 'g')), 'A')
@postgres         || setweight(to_tsvector('simple', regexp_replace(description, '[^[:alnum:]]+', ' ', 'g')), 'B')
@postgres         || setweight(to_tsvector('simple', regexp_replace(tools, '[^[:alnum:]]+', ' ', 'g')), 'C')
@postgres     ) STORED
);
@sqlite
@sqlite CREATE VIRTUAL TABLE listings_fts USING fts5(name, description, tools, content='listings', content_rowid='site_id');
@sqlite CREATE TRIGGER listings_ai AFTER INSERT ON listings BEGIN
@sqlite     INSERT INTO listings_fts(rowid, name, description, tools) VALUES (new.site_id, new.name, new.description, new.tools);
@sqlite END;
@sqlite CREATE TRIGGER listings_ad AFTER DELETE ON listings BEGIN
@sqlite     INSERT INTO listings_fts(listings_fts, rowid, name, description, tools) VALUES ('delete', old.site_id, old.name, old.description, old.tools);
@sqlite END;
@sqlite CREATE TRIGGER listings_au AFTER UPDATE ON listings BEGIN
@sqlite     INSERT INTO listings_fts(listings_fts, rowid, name, description, tools) VALUES ('delete', old.site_id, old.name, old.description, old.tools);
@sqlite     INSERT INTO listings_fts(rowid, name, description, tools) VALUES (new.site_id, new.name, new.description, new.tools);
@sqlite END;
@postgres CREATE INDEX listings_search ON listings USING GIN (search);
