-- Fair collection (issue 25): a job says whether it is a scheduled period (0) or a backfill's
-- (1), so that claims take scheduled periods first and a backfill never stands in front of
-- another user's due periods. Jobs from before are scheduled ones.
ALTER TABLE jobs ADD COLUMN kind {int} NOT NULL DEFAULT 0 CHECK (kind IN (0, 1));
-- A claim takes each user's first due jobs (scheduled, then backfills, soonest first) in turn:
-- it steps from user to user through this index and reads a batch at most of each, so its cost
-- grows with the users who have jobs, not with one user's backlog. A user's pending backfills
-- are counted through it too. It replaces the index by due time alone, which no query needs now.
CREATE INDEX jobs_pending_by_user ON jobs(user_id, kind, not_before, id) WHERE state = 'pending';
DROP INDEX jobs_pending;

-- MCP sessions are capped per user, the least recently used closed first: when each was last
-- used, in milliseconds (a user may open hundreds a second; a use is written a minute apart at
-- most). Sessions from before count as used when opened.
ALTER TABLE mcp_sessions ADD COLUMN used_at {int};
UPDATE mcp_sessions SET used_at = created_at * 1000;
CREATE INDEX mcp_sessions_user ON mcp_sessions(user_id, used_at);
