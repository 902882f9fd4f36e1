-- Process liveness (ADR-014) and remote stop (ADR-016).

-- A row is written again only by whoever wrote it first (reported_by:
-- the principal of report_process, NULL for a process on the database);
-- no row changes otherwise.
-- name: LivenessUpsert :execrows
INSERT INTO cks_agent_liveness (instance_id, process_kind, hostname, pid, liveness_interval_s,
    started_at, last_heartbeat_at, current_task_id, current_task_type, exited_at, task_types, alive_until, reported_by)
VALUES (@instance_id, @process_kind, @hostname, @pid, @liveness_interval_s,
    @started_at, @last_heartbeat_at, @current_task_id, @current_task_type, @exited_at, @task_types, @alive_until, @reported_by)
ON CONFLICT (instance_id) DO UPDATE SET
    process_kind = excluded.process_kind,
    hostname = excluded.hostname,
    pid = excluded.pid,
    liveness_interval_s = excluded.liveness_interval_s,
    last_heartbeat_at = excluded.last_heartbeat_at,
    current_task_id = excluded.current_task_id,
    current_task_type = excluded.current_task_type,
    exited_at = excluded.exited_at,
    task_types = excluded.task_types,
    alive_until = excluded.alive_until
WHERE cks_agent_liveness.reported_by IS NOT DISTINCT FROM excluded.reported_by;

-- name: LivenessList :many
SELECT * FROM cks_agent_liveness
ORDER BY started_at DESC, instance_id COLLATE "C";

-- name: LivenessGet :one
SELECT * FROM cks_agent_liveness WHERE instance_id = @instance_id;

-- The newest instance of a kind (idx_agent_liveness_latest).
-- name: LivenessLatest :one
SELECT * FROM cks_agent_liveness WHERE process_kind = @process_kind
ORDER BY started_at DESC, last_heartbeat_at DESC, instance_id COLLATE "C"
LIMIT 1;

-- name: LivenessSetDesiredState :execrows
UPDATE cks_agent_liveness SET desired_state = @desired_state WHERE instance_id = @instance_id;

-- A page of the history, newest-started first, from the cursor (the
-- previous page's last row; its started_at bounds the range of
-- idx_agent_liveness_started, so a deep page does not walk the ones
-- before it).
-- name: LivenessPage :many
SELECT * FROM cks_agent_liveness
WHERE true
    AND started_at <= @after_started_at
    AND (started_at < @after_started_at OR instance_id COLLATE "C" > @after_instance_id)
    AND (cardinality(@kinds::text[]) = 0 OR process_kind = ANY(@kinds::text[]))
    AND (NOT @stopped_only::boolean OR alive_until IS NULL OR alive_until < @now)
ORDER BY started_at DESC, instance_id COLLATE "C"
LIMIT @limit;

-- The alive instances (idx_agent_liveness_alive), in LivenessPage's order.
-- name: LivenessAlive :many
SELECT * FROM cks_agent_liveness
WHERE alive_until >= @now
    AND started_at <= @after_started_at
    AND (started_at < @after_started_at OR instance_id COLLATE "C" > @after_instance_id)
    AND (cardinality(@kinds::text[]) = 0 OR process_kind = ANY(@kinds::text[]))
ORDER BY started_at DESC, instance_id COLLATE "C"
LIMIT @limit;

-- Old history, a bounded batch at a time: instances that last reported
-- before the cutoff (so started before it too: idx_agent_liveness_started)
-- and are not alive.
-- name: LivenessPrune :execrows
DELETE FROM cks_agent_liveness WHERE instance_id IN (
    SELECT o.instance_id FROM cks_agent_liveness o
    WHERE o.started_at < @before AND o.last_heartbeat_at < @before
        AND (o.alive_until IS NULL OR o.alive_until < @now)
    LIMIT @limit);

-- The instances of each kind (idx_agent_liveness_kind, index only).
-- name: LivenessCountByKind :many
SELECT process_kind, count(*) AS count FROM cks_agent_liveness
GROUP BY process_kind
ORDER BY process_kind;
