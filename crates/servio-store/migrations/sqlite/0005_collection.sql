-- Collected metric values, one per (user, site, metric, period), and every attempt.
CREATE TABLE metric_values (
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id INTEGER NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    metric_key TEXT NOT NULL,
    granularity TEXT NOT NULL,
    period_start INTEGER NOT NULL,
    period_end INTEGER NOT NULL,
    start_date TEXT NOT NULL,
    value REAL NOT NULL,
    raw TEXT NOT NULL,
    collected_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, site_id, metric_key, period_start)
);

CREATE TABLE collection_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    site_id INTEGER NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    metric_key TEXT NOT NULL,
    period_start INTEGER NOT NULL,
    start_date TEXT NOT NULL,
    attempted_at INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT,
    raw TEXT
);
CREATE INDEX collection_attempts_site ON collection_attempts(user_id, site_id, id);
