-- Each text of a site's manifest is stored once, as one of its versions (issue 41, finding 6).
-- A site's row kept a copy of its current text, and every vault entry a copy of the text its
-- user approved: an 8 MiB manifest took 8 MiB more for each user who added the site. Now a
-- site's current text is its newest version's, and a vault entry names the version it approved.
ALTER TABLE vault ADD COLUMN approved_version {int};
-- The newest version with the approved text (approvals are of saved texts, and pruning keeps the
-- approved ones, so every approval finds one; an entry that found none acts on the site's
-- current manifest, as one that never approved).
UPDATE vault SET approved_version = (
    SELECT max(sv.id) FROM site_versions sv WHERE sv.site_id = vault.site_id AND sv.manifest = vault.approved_manifest
) WHERE approved_manifest IS NOT NULL;
ALTER TABLE vault DROP COLUMN approved_manifest;
ALTER TABLE sites DROP COLUMN manifest;
