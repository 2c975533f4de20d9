-- Approvals name a version (interpretation §9): the version a user chose to keep their approved
-- manifest against ("keep the approved version"), whose changes are not offered again until the
-- site changes again.
ALTER TABLE vault ADD COLUMN kept_version {int};

-- Every site has a version row for its current manifest, so that an approval can name it
-- (sites saved before versions were kept had none until their manifest changed).
INSERT INTO site_versions (site_id, manifest, fetched_at)
SELECT s.id, s.manifest, s.fetched_at FROM sites s
WHERE NOT EXISTS (SELECT 1 FROM site_versions v WHERE v.site_id = s.id);
