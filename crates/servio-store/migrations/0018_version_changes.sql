-- What changed in each version from the one before, for people (a JSON array of lines), written
-- once when the version is saved, so that the versions list never checks and compares stored
-- texts again. NULL for versions saved before this column, which show no changes.
ALTER TABLE site_versions ADD COLUMN changes TEXT;
