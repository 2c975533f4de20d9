-- The started Connects take their name (issue 43, point 5): "attempt" is a collection's log
-- entry, and the table `oauth_attempts` (0010) holds OAuth "Connect"s started and not yet
-- finished. Its indexes follow it: PostgreSQL renames them (and the constraints), SQLite, which
-- has no ALTER INDEX, drops them and makes them again under the new names.
ALTER TABLE oauth_attempts RENAME TO started_connects;
@sqlite DROP INDEX oauth_attempts_user;
@sqlite DROP INDEX oauth_attempts_expiry;
@sqlite DROP INDEX oauth_attempts_site;
@sqlite CREATE INDEX started_connects_user ON started_connects(user_id, created_at);
@sqlite CREATE INDEX started_connects_expiry ON started_connects(expires_at);
@sqlite CREATE INDEX started_connects_site ON started_connects(site_id);
@postgres ALTER INDEX oauth_attempts_pkey RENAME TO started_connects_pkey;
@postgres ALTER INDEX oauth_attempts_user RENAME TO started_connects_user;
@postgres ALTER INDEX oauth_attempts_expiry RENAME TO started_connects_expiry;
@postgres ALTER INDEX oauth_attempts_site RENAME TO started_connects_site;
@postgres ALTER TABLE started_connects RENAME CONSTRAINT oauth_attempts_user_id_fkey TO started_connects_user_id_fkey;
@postgres ALTER TABLE started_connects RENAME CONSTRAINT oauth_attempts_site_id_fkey TO started_connects_site_id_fkey;
