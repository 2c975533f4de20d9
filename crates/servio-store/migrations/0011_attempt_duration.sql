-- How long the site took to answer a collection's call, in milliseconds (none where no call
-- was made), and one site's attempts across users by time: the owner's collection health page.
ALTER TABLE collection_attempts ADD COLUMN duration_ms {real};
CREATE INDEX collection_attempts_site_time ON collection_attempts(site_id, attempted_at);
