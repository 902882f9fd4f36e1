-- Rows written before alive_until existed: the TTL rule's deadline
-- (liveness.AliveUntil: the last heartbeat plus TTLFactor, 3, liveness
-- intervals) for an instance that has not exited; NULL for one that has.
UPDATE cks_agent_liveness
SET alive_until = last_heartbeat_at + liveness_interval_s * 3 * interval '1 second'
WHERE exited_at IS NULL AND last_heartbeat_at >= started_at
