-- Every version of a site's manifest, and the version each user approved.
CREATE TABLE site_versions (
    id {id},
    site_id BIGINT NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    manifest TEXT NOT NULL,
    fetched_at BIGINT NOT NULL
);
CREATE INDEX site_versions_site ON site_versions(site_id, id);

ALTER TABLE vault ADD COLUMN approved_manifest TEXT;
