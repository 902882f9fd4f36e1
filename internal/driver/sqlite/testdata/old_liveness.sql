-- cks_agent_liveness before current_task_id, current_task_type and
-- desired_state, with three rows: the third's instance exited, writing a
-- last heartbeat backdated to the epoch as cks did before exited_at.
CREATE TABLE cks_agent_liveness (
    instance_id TEXT PRIMARY KEY, process_kind TEXT NOT NULL, hostname TEXT NOT NULL,
    pid INTEGER NOT NULL, liveness_interval_s REAL NOT NULL,
    started_at TEXT NOT NULL, last_heartbeat_at TEXT NOT NULL);
INSERT INTO cks_agent_liveness VALUES
    ('old-1', 'critic', 'h', 10, 30, '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:30.000000000Z'),
    ('old-2', 'pipeline', 'h', 11, 15, '2026-11-30T12:01:00.000000000Z', '2026-11-30T12:01:00.000000000Z'),
    ('old-exited', 'critic', 'h', 9, 30, '2026-11-30T11:00:00.000000000Z', '1970-01-01T00:00:00.000000000Z');
