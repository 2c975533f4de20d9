-- The Directory: ownership claims with their verification tokens, and the public listings,
-- searchable through FTS5.
CREATE TABLE claims (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    origin TEXT NOT NULL,
    token TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    UNIQUE (user_id, origin)
);

CREATE TABLE listings (
    site_id INTEGER PRIMARY KEY REFERENCES sites(id) ON DELETE CASCADE,
    claim_id INTEGER NOT NULL REFERENCES claims(id) ON DELETE CASCADE,
    listed INTEGER NOT NULL,
    suspended_reason TEXT,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    tools TEXT NOT NULL,
    verified_at INTEGER NOT NULL
);

CREATE VIRTUAL TABLE listings_fts USING fts5(name, description, tools, content='listings', content_rowid='site_id');
CREATE TRIGGER listings_ai AFTER INSERT ON listings BEGIN
    INSERT INTO listings_fts(rowid, name, description, tools) VALUES (new.site_id, new.name, new.description, new.tools);
END;
CREATE TRIGGER listings_ad AFTER DELETE ON listings BEGIN
    INSERT INTO listings_fts(listings_fts, rowid, name, description, tools) VALUES ('delete', old.site_id, old.name, old.description, old.tools);
END;
CREATE TRIGGER listings_au AFTER UPDATE ON listings BEGIN
    INSERT INTO listings_fts(listings_fts, rowid, name, description, tools) VALUES ('delete', old.site_id, old.name, old.description, old.tools);
    INSERT INTO listings_fts(rowid, name, description, tools) VALUES (new.site_id, new.name, new.description, new.tools);
END;
