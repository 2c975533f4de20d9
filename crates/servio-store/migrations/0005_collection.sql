-- Collected metric values, one per (user, site, metric, period), and every attempt.
CREATE TABLE metric_values (
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id {int} NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    metric_key TEXT NOT NULL,
    granularity TEXT NOT NULL,
    period_start {int} NOT NULL,
    period_end {int} NOT NULL,
    start_date TEXT NOT NULL,
    value {real} NOT NULL,
    raw TEXT NOT NULL,
    collected_at {int} NOT NULL,
    PRIMARY KEY (user_id, site_id, metric_key, period_start)
);

CREATE TABLE collection_attempts (
    id {id},
    user_id {int} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id {int} NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    metric_key TEXT NOT NULL,
    period_start {int} NOT NULL,
    start_date TEXT NOT NULL,
    attempted_at {int} NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT,
    raw TEXT
);
CREATE INDEX collection_attempts_site ON collection_attempts(user_id, site_id, id);
