-- Sites a platform knows, with the last valid manifest, and each user's vault of them.
CREATE TABLE sites (
    id BIGSERIAL PRIMARY KEY,
    origin TEXT NOT NULL UNIQUE,
    manifest_url TEXT NOT NULL,
    manifest TEXT NOT NULL,
    etag TEXT,
    last_modified TEXT,
    fetched_at BIGINT NOT NULL,
    stale_error TEXT
);

CREATE TABLE vault (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id BIGINT NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    added_at BIGINT NOT NULL,
    credential BYTEA,
    PRIMARY KEY (user_id, site_id)
);
CREATE INDEX vault_site ON vault(site_id);
