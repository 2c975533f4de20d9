-- Sites a platform knows, with the last valid manifest, and each user's vault of them.
CREATE TABLE sites (
    id {id},
    origin TEXT NOT NULL UNIQUE,
    manifest_url TEXT NOT NULL,
    manifest TEXT NOT NULL,
    etag TEXT,
    last_modified TEXT,
    fetched_at {int} NOT NULL,
    stale_error TEXT
);

CREATE TABLE vault (
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id {int} NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    added_at {int} NOT NULL,
    credential {blob},
    PRIMARY KEY (user_id, site_id)
);
CREATE INDEX vault_site ON vault(site_id);
