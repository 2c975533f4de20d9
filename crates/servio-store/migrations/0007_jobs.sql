-- Scheduled collections as jobs that many workers share: one row per slot (user, site, metric,
-- period). A worker claims a job with a lease (owner and expiry); every claim increments the
-- fence, and a completion commits only while its fence still matches, so a worker paused past
-- its lease cannot write over the one that took the job over.
CREATE TABLE jobs (
    id {id},
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id {int} NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    metric_key TEXT NOT NULL,
    granularity TEXT NOT NULL,
    period_start {int} NOT NULL,
    period_end {int} NOT NULL,
    start_date TEXT NOT NULL,
    -- pending (to do, or to retry after a transient failure), done (a value stored) or failed
    -- (ended without a value: dropped, refused for good, or out of time).
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
    -- Not claimed before this instant: when the period is due, then the backoff.
    not_before {int} NOT NULL,
    -- After this instant a transient failure ends the job as failed.
    deadline {int} NOT NULL,
    lease_owner TEXT,
    lease_expires {int},
    fence {int} NOT NULL DEFAULT 0,
    created_at {int} NOT NULL,
    updated_at {int} NOT NULL,
    UNIQUE (user_id, site_id, metric_key, period_start)
);
-- Claims look only at pending jobs, soonest first (the id breaks ties, as in ORDER BY), so a
-- claim reads a few index entries however many jobs wait.
CREATE INDEX jobs_pending ON jobs(not_before, id) WHERE state = 'pending';
