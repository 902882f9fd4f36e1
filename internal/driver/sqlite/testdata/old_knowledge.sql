-- The knowledge tables before versions (no cks_object_versions, no
-- head_version or heads on cks_objects), with three objects and an edge.
CREATE TABLE cks_objects (
    object_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL, current_status TEXT NOT NULL DEFAULT '',
    claimed_by TEXT NOT NULL DEFAULT '', claim_token TEXT NOT NULL DEFAULT '', claimed_at TEXT,
    round INTEGER NOT NULL DEFAULT 0, created_by TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE cks_edges (
    edge_id INTEGER PRIMARY KEY AUTOINCREMENT, src INTEGER NOT NULL REFERENCES cks_objects(object_id),
    dst INTEGER NOT NULL REFERENCES cks_objects(object_id), base_type TEXT NOT NULL,
    semantic_type TEXT NOT NULL DEFAULT '', weight REAL, created_at TEXT NOT NULL);
CREATE TABLE cks_transition_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, object_id INTEGER NOT NULL REFERENCES cks_objects(object_id),
    ts TEXT NOT NULL, agent TEXT NOT NULL DEFAULT '', action TEXT NOT NULL,
    transitioned_to TEXT NOT NULL DEFAULT '', reasoning_node_id INTEGER REFERENCES cks_objects(object_id),
    content_hash TEXT NOT NULL, round INTEGER NOT NULL DEFAULT 0);
INSERT INTO cks_objects (kind, content, content_hash, current_status, created_by, created_at, updated_at) VALUES
    ('question', '{"n":1,"q":"why?"}', 'h1', 'awaiting_research', 'cli', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:05.000000000Z'),
    ('question', '{}', 'h2', 'awaiting_research', 'researcher', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:01:00.500000000Z'),
    ('question', '{"n":1,"q":"why?"}', 'h1', 'awaiting_research', '', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:02:00.000000000Z');
INSERT INTO cks_edges (src, dst, base_type, created_at) VALUES (2, 1, 'depends_on', '2026-11-30T12:03:00.000000000Z');
