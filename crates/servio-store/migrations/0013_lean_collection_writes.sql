-- Every collection writes a value and an attempt. On PostgreSQL their four foreign-key checks
-- (each a query and a row lock in a trigger) were a fifth of the database's work per collection
-- (BENCHMARKS.md, "Cost per collection"). The rows of a deleted account or a site left are
-- deleted explicitly instead (`delete_user`, `remove_from_vault`), after the account's or the
-- pair's jobs, whose row locks order those deletions after any completion in flight. SQLite,
-- one writer, keeps them.
@postgres ALTER TABLE collection_attempts DROP CONSTRAINT collection_attempts_user_id_fkey;
@postgres ALTER TABLE collection_attempts DROP CONSTRAINT collection_attempts_site_id_fkey;
@postgres ALTER TABLE metric_values DROP CONSTRAINT metric_values_user_id_fkey;
@postgres ALTER TABLE metric_values DROP CONSTRAINT metric_values_site_id_fkey;
-- Room in every page of jobs for the new version of a claimed job: a claim then changes the
-- row in place (a HOT update), without new index entries.
@postgres ALTER TABLE jobs SET (fillfactor = 50);
-- The attempt log is append-only: its primary key index was used only to prune the oldest
-- rows, which a block range index on the time finds at a fraction of the cost to keep (the
-- ids stay, from their sequence: the listing of a user's attempts orders by them). The index is
-- built in one pass over the log, which holds writes to it meanwhile: upgrade between rounds.
@postgres ALTER TABLE collection_attempts DROP CONSTRAINT collection_attempts_pkey;
@postgres CREATE INDEX collection_attempts_time ON collection_attempts USING brin (attempted_at);
