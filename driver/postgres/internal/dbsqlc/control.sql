-- Sweeper control (ADR-015): a row only for a sweeper whose default was
-- overridden.

-- name: SweeperControlUpsert :exec
INSERT INTO cks_sweeper_control (agent_id, desired_running, updated_at)
VALUES (@agent_id, @desired_running, @updated_at)
ON CONFLICT (agent_id) DO UPDATE SET
    desired_running = excluded.desired_running,
    updated_at = excluded.updated_at;

-- name: SweeperControlGet :one
SELECT desired_running FROM cks_sweeper_control WHERE agent_id = @agent_id;
