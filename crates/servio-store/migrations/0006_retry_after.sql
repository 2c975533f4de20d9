-- When a site asked (Retry-After) to be tried again, kept on the transient failure it came with.
ALTER TABLE collection_attempts ADD COLUMN retry_at {int};
