-- Rows written before alive_until existed: the TTL rule's deadline
-- (liveness.AliveUntil: the last heartbeat plus TTLFactor, 3, liveness
-- intervals) for an instance that has not exited; NULL for one that has.
-- SQLite's date functions keep milliseconds: the deadline is to the
-- millisecond, and the instance's next heartbeat writes it exactly.
UPDATE cks_agent_liveness
SET alive_until = strftime('%Y-%m-%dT%H:%M:%f', julianday(last_heartbeat_at) + liveness_interval_s * 3 / 86400.0) || '000000Z'
WHERE exited_at IS NULL AND last_heartbeat_at >= started_at
