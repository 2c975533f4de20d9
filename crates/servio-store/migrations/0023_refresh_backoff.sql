-- The periodic refresh backs off and forgets sites nobody holds (issue 41, finding 3). A failed
-- refresh kept the site's last fetch time, so the oldest failing sites filled every round and
-- live sites were never refreshed again. Now a site counts the refreshes that failed in a row
-- (`refresh_failures`, 0 while it answers) and is not asked again before `retry_at` (NULL: a
-- day after its last good fetch, as before); every process reads the same times, and they hold
-- across restarts.
ALTER TABLE sites ADD COLUMN refresh_failures {int} NOT NULL DEFAULT 0;
ALTER TABLE sites ADD COLUMN retry_at {int};
-- A site that no vault entry and no Directory listing holds is deleted. Its deletion reaches
-- every table that references sites (cascading, or setting the call log's site to NULL); each
-- gets an index on its site, so that the deletion reads only that site's rows rather than the
-- whole table. SQLite keeps the foreign key of the values (PostgreSQL dropped it in 0013); the
-- attempts have `collection_attempts_site_time` already.
CREATE INDEX jobs_site ON jobs(site_id);
CREATE INDEX tool_calls_site ON tool_calls(site_id);
CREATE INDEX oauth_attempts_site ON oauth_attempts(site_id);
@sqlite CREATE INDEX metric_values_site ON metric_values(site_id);
