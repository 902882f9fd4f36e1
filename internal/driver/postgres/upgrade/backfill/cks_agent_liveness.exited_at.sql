-- Before exited_at existed an instance that exited gracefully wrote a last
-- heartbeat backdated to the epoch (before it started), losing its last
-- real one. It exited; when is not known, only that it was alive at
-- started_at, which both columns get: no row keeps a heartbeat it never
-- made.
UPDATE cks_agent_liveness SET exited_at = started_at, last_heartbeat_at = started_at
WHERE last_heartbeat_at < started_at
