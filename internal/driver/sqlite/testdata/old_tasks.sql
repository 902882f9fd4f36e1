-- cks_outbox_tasks lacking most of today's columns, with one row.
CREATE TABLE cks_outbox_tasks (
    task_id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}', state TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3, claimed_by TEXT NOT NULL DEFAULT '',
    lease_expires_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
INSERT INTO cks_outbox_tasks (type, payload, state, priority, created_at, updated_at)
VALUES ('critique', '{"object_id": 7}', 'OPEN', 2,
    '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z');
