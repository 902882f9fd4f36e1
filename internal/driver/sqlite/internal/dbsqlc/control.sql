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

-- Leader election (issue 26). The hubs of one SQLite file share one host's
-- clock: the times come from it (fixed-width text, so they compare as text).

-- LeaderElect takes the leadership when nobody holds it or its lease ran
-- out, and renews it when leader_id holds it (elected_at kept); no row when
-- another holds it.
-- name: LeaderElect :one
INSERT INTO cks_leaders (name, leader_id, elected_at, expires_at)
VALUES (@name, @leader_id, @now, @expires_at)
ON CONFLICT (name) DO UPDATE SET
    leader_id = excluded.leader_id,
    elected_at = CASE WHEN cks_leaders.leader_id = excluded.leader_id
        THEN cks_leaders.elected_at ELSE excluded.elected_at END,
    expires_at = excluded.expires_at
WHERE cks_leaders.leader_id = excluded.leader_id OR cks_leaders.expires_at < excluded.elected_at
RETURNING name, leader_id, elected_at, expires_at;

-- name: LeaderResign :execrows
DELETE FROM cks_leaders WHERE name = @name AND leader_id = @leader_id;

-- name: LeaderGet :one
SELECT name, leader_id, elected_at, expires_at FROM cks_leaders
WHERE name = @name AND expires_at >= @now;

-- Sweeper passes (issue 24): one row per completed pass, newest first per
-- sweeper by idx_sweeper_passes_agent.

-- name: SweeperPassInsert :exec
INSERT INTO cks_sweeper_passes (agent_id, hub_id, started_at, duration_ms, result_count, error, details)
VALUES (@agent_id, @hub_id, @started_at, @duration_ms, @result_count, @error, @details);

-- name: SweeperPassRecent :many
SELECT * FROM cks_sweeper_passes
WHERE agent_id = @agent_id
ORDER BY started_at DESC, pass_id DESC
LIMIT @limit;

-- The passes older than the cutoff, a bounded batch at a time
-- (idx_sweeper_passes_started).
-- name: SweeperPassPrune :execrows
DELETE FROM cks_sweeper_passes WHERE pass_id IN (
    SELECT o.pass_id FROM cks_sweeper_passes o
    WHERE o.started_at < @before
    LIMIT @limit);

-- A sweeper's passes beyond its newest keep, a bounded batch at a time: the
-- offset walks keep entries of idx_sweeper_passes_agent.
-- name: SweeperPassTrim :execrows
DELETE FROM cks_sweeper_passes WHERE pass_id IN (
    SELECT o.pass_id FROM cks_sweeper_passes o
    WHERE o.agent_id = @agent_id
    ORDER BY o.started_at DESC, o.pass_id DESC
    LIMIT @limit OFFSET @keep);

-- Concurrency limits (issue 42): one row per limit. The keyed claim reads
-- them in its write transaction (the one writer's: its turn).

-- name: LimitPut :exec
INSERT INTO cks_limits (name, pattern, max_running, created_by, created_at, updated_at, starts, interval_ms,
    max_tokens, max_cost_nanos, window_ms)
VALUES (@name, @pattern, @max_running, @created_by, @created_at, @updated_at, @starts, @interval_ms,
    @max_tokens, @max_cost_nanos, @window_ms)
ON CONFLICT (name) DO UPDATE SET
    pattern = excluded.pattern,
    max_running = excluded.max_running,
    updated_at = excluded.updated_at,
    starts = excluded.starts,
    interval_ms = excluded.interval_ms,
    max_tokens = excluded.max_tokens,
    max_cost_nanos = excluded.max_cost_nanos,
    window_ms = excluded.window_ms;

-- name: LimitDelete :execrows
DELETE FROM cks_limits WHERE name = @name;

-- name: LimitList :many
SELECT * FROM cks_limits ORDER BY name;

-- The starts of rate-limited keys (issue 42): a row per claim and key,
-- written by the keyed claim, read and pruned by it (idx_key_starts_at).

-- name: KeyStartInsert :exec
INSERT INTO cks_key_starts (key, started_at) VALUES (@key, @started_at);

-- name: KeyStartsSince :many
SELECT key, started_at FROM cks_key_starts WHERE started_at > @since ORDER BY started_at;

-- name: KeyStartsPrune :execrows
DELETE FROM cks_key_starts WHERE started_at <= @before;
