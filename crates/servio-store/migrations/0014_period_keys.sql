-- One value per local period (interpretation §8). A period is identified by its local start as
-- it was collected, its key: the start date for day, week and month (`2026-08-17`), the date and
-- clock hour for an hour (`2026-11-01T01`, and `2026-11-01T01#2` for the second occurrence of a
-- repeated hour). Keyed by their first instant, the same local date collected under two zones
-- was two values (a card summed both: "10 of 6 days").
--
-- Values from before carry the key of their start date; duplicates of a key are resolved here,
-- the newest collected winning. An hour value from before is keyed `DATE@INSTANT`: the zone it
-- was collected in is not recorded, so its clock hour is not known here; the store treats a
-- value of that key as the value of the hour starting at that instant.
CREATE TABLE metric_values_keyed (
@sqlite     user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
@sqlite     site_id INTEGER NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
@postgres     user_id BIGINT NOT NULL,
@postgres     site_id BIGINT NOT NULL,
    metric_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    granularity TEXT NOT NULL,
    period_start {int} NOT NULL,
    period_end {int} NOT NULL,
    start_date TEXT NOT NULL,
    value {real} NOT NULL,
    raw TEXT NOT NULL,
    collected_at {int} NOT NULL,
    PRIMARY KEY (user_id, site_id, metric_key, period_key)
);
INSERT INTO metric_values_keyed
    (user_id, site_id, metric_key, period_key, granularity, period_start, period_end, start_date, value, raw,
     collected_at)
SELECT user_id, site_id, metric_key, period_key, granularity, period_start, period_end, start_date, value, raw,
       collected_at
FROM (
    SELECT keyed.*, row_number() OVER (PARTITION BY user_id, site_id, metric_key, period_key
                                       ORDER BY collected_at DESC, period_start DESC) AS newest
    FROM (
        SELECT v.*, CASE WHEN granularity = 'hour' THEN start_date || '@' || period_start ELSE start_date END
                        AS period_key
        FROM metric_values v
    ) keyed
) ranked
WHERE newest = 1;
DROP TABLE metric_values;
ALTER TABLE metric_values_keyed RENAME TO metric_values;
-- The dashboard reads a metric's values since an instant.
CREATE INDEX metric_values_since ON metric_values(user_id, site_id, metric_key, period_start);

-- The attempt log: attempts from now on carry their period's key (those from before have none
-- and are matched by their instant, as they were).
ALTER TABLE collection_attempts ADD COLUMN period_key TEXT;

-- Jobs: one per (user, site, period key, metric), so that planning the same local period under
-- a new zone finds the job it has (a job resolves its key in the user's zone when it is done).
-- The period key comes before the metric so that a claim finds the other jobs of a period (the
-- metrics that share one call) through this index. Of duplicates, the newest job stays.
@sqlite CREATE TABLE jobs_keyed (
@sqlite     id INTEGER PRIMARY KEY AUTOINCREMENT,
@sqlite     user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
@sqlite     site_id INTEGER NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
@sqlite     metric_key TEXT NOT NULL,
@sqlite     granularity TEXT NOT NULL,
@sqlite     period_start INTEGER NOT NULL,
@sqlite     period_end INTEGER NOT NULL,
@sqlite     start_date TEXT NOT NULL,
@sqlite     period_key TEXT NOT NULL,
@sqlite     state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
@sqlite     not_before INTEGER NOT NULL,
@sqlite     deadline INTEGER NOT NULL,
@sqlite     lease_owner TEXT,
@sqlite     lease_expires INTEGER,
@sqlite     fence INTEGER NOT NULL DEFAULT 0,
@sqlite     created_at INTEGER NOT NULL,
@sqlite     updated_at INTEGER NOT NULL,
@sqlite     UNIQUE (user_id, site_id, period_key, metric_key)
@sqlite );
@sqlite INSERT INTO jobs_keyed
@sqlite     (id, user_id, site_id, metric_key, granularity, period_start, period_end, start_date, period_key, state,
@sqlite      not_before, deadline, lease_owner, lease_expires, fence, created_at, updated_at)
@sqlite SELECT id, user_id, site_id, metric_key, granularity, period_start, period_end, start_date, period_key, state,
@sqlite        not_before, deadline, lease_owner, lease_expires, fence, created_at, updated_at
@sqlite FROM (
@sqlite     SELECT keyed.*, row_number() OVER (PARTITION BY user_id, site_id, period_key, metric_key ORDER BY id DESC)
@sqlite                     AS newest
@sqlite     FROM (
@sqlite         SELECT j.*, CASE WHEN granularity = 'hour' THEN start_date || '@' || period_start ELSE start_date END
@sqlite                         AS period_key
@sqlite         FROM jobs j
@sqlite     ) keyed
@sqlite ) ranked
@sqlite WHERE newest = 1;
@sqlite DROP TABLE jobs;
@sqlite ALTER TABLE jobs_keyed RENAME TO jobs;
@sqlite CREATE INDEX jobs_pending ON jobs(not_before, id) WHERE state = 'pending';
-- PostgreSQL keeps its table (its fill factor, sequence and foreign keys) and changes the key.
@postgres ALTER TABLE jobs ADD COLUMN period_key TEXT;
@postgres UPDATE jobs SET period_key = CASE WHEN granularity = 'hour' THEN start_date || '@' || period_start
@postgres                                   ELSE start_date END;
@postgres DELETE FROM jobs j USING jobs newer
@postgres WHERE newer.user_id = j.user_id AND newer.site_id = j.site_id AND newer.metric_key = j.metric_key
@postgres   AND newer.period_key = j.period_key AND newer.id > j.id;
@postgres ALTER TABLE jobs ALTER COLUMN period_key SET NOT NULL;
@postgres ALTER TABLE jobs DROP CONSTRAINT jobs_user_id_site_id_metric_key_period_start_key;
@postgres ALTER TABLE jobs ADD CONSTRAINT jobs_slot UNIQUE (user_id, site_id, period_key, metric_key);
