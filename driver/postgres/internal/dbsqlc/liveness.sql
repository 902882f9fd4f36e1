-- Process liveness (ADR-014) and remote stop (ADR-016).

-- name: LivenessUpsert :exec
INSERT INTO cks_agent_liveness (instance_id, process_kind, hostname, pid, liveness_interval_s,
    started_at, last_heartbeat_at, current_task_id, current_task_type, exited_at, task_types)
VALUES (@instance_id, @process_kind, @hostname, @pid, @liveness_interval_s,
    @started_at, @last_heartbeat_at, @current_task_id, @current_task_type, @exited_at, @task_types)
ON CONFLICT (instance_id) DO UPDATE SET
    process_kind = excluded.process_kind,
    hostname = excluded.hostname,
    pid = excluded.pid,
    liveness_interval_s = excluded.liveness_interval_s,
    last_heartbeat_at = excluded.last_heartbeat_at,
    current_task_id = excluded.current_task_id,
    current_task_type = excluded.current_task_type,
    exited_at = excluded.exited_at,
    task_types = excluded.task_types;

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
