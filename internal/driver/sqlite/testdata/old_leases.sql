-- Before issue 12: plain lease tokens in cks_outbox_tasks and cks_task_aborts
-- (the aborts' indexed), principals without a lease binding. Task 1 is
-- leased by w1 with token plain-1 and has a pending abort of an earlier
-- lease (plain-0); "task/1 w1" and "task/2 w9" are claim credentials (w9
-- holds nothing), "task/1" an operator's.
CREATE TABLE cks_principals (principal_id TEXT PRIMARY KEY, name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);
CREATE TABLE cks_outbox_tasks (task_id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL,
    state TEXT NOT NULL, claimed_by TEXT NOT NULL DEFAULT '', lease_token TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE cks_task_aborts (abort_id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id), lease_token TEXT NOT NULL,
    executor TEXT NOT NULL DEFAULT '', attempt INTEGER NOT NULL, restart INTEGER NOT NULL,
    requested_by TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '', requested_at TEXT NOT NULL,
    deadline_at TEXT NOT NULL, outcome TEXT NOT NULL, resolved_at TEXT);
CREATE INDEX idx_task_aborts_task ON cks_task_aborts(task_id, lease_token);
INSERT INTO cks_outbox_tasks (type, state, claimed_by, lease_token, created_at, updated_at) VALUES
    ('t', 'RUNNING', 'w1', 'plain-1', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z'),
    ('t', 'OPEN', '', '', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z');
INSERT INTO cks_task_aborts (task_id, lease_token, executor, attempt, restart, requested_at, deadline_at, outcome)
VALUES (1, 'plain-0', 'w0', 1, 0, '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:30.000000000Z', 'abort_pending');
INSERT INTO cks_principals VALUES
    ('p-admin', 'admin', 'h-admin', '2026-11-30T12:00:00.000000000Z'),
    ('p-claim', 'task/1 w1', 'h-claim', '2026-11-30T12:00:00.000000000Z'),
    ('p-gone', 'task/2 w9', 'h-gone', '2026-11-30T12:00:00.000000000Z'),
    ('p-op', 'task/1', 'h-op', '2026-11-30T12:00:00.000000000Z');
