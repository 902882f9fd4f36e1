-- The knowledge tables when versions were numbered by one sequence across
-- all objects (no cks_object_versions.version; parents and head_version hold
-- version ids), with the append-only triggers of then: three objects whose
-- versions interleave, one forked and merged, one forked.
CREATE TABLE cks_objects (
    object_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL, current_status TEXT NOT NULL DEFAULT '',
    claimed_by TEXT NOT NULL DEFAULT '', claim_token TEXT NOT NULL DEFAULT '', claimed_at TEXT,
    round INTEGER NOT NULL DEFAULT 0, created_by TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    head_version INTEGER NOT NULL DEFAULT 0, heads INTEGER NOT NULL DEFAULT 1);
CREATE TABLE cks_object_versions (
    version_id INTEGER PRIMARY KEY AUTOINCREMENT, object_id INTEGER NOT NULL REFERENCES cks_objects(object_id),
    parents TEXT NOT NULL DEFAULT '[]', content TEXT NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, is_head INTEGER NOT NULL DEFAULT 1);
CREATE TRIGGER cks_object_versions_no_update BEFORE UPDATE OF object_id, parents, content, content_hash, author, created_at
ON cks_object_versions BEGIN SELECT RAISE(ABORT, 'cks_object_versions is append-only: UPDATE refused (only is_head changes)'); END;
CREATE TRIGGER cks_object_versions_no_delete BEFORE DELETE ON cks_object_versions
BEGIN SELECT RAISE(ABORT, 'cks_object_versions is append-only: DELETE refused'); END;
INSERT INTO cks_objects (kind, content, content_hash, created_at, updated_at, head_version, heads) VALUES
    ('claim', '{"v":"1d"}', 'h1d', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:06.000000000Z', 6, 1),
    ('claim', '{"v":"2c"}', 'h2c', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:07.000000000Z', 7, 1),
    ('claim', '{"v":"3c"}', 'h3c', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:10.000000000Z', 10, 2);
INSERT INTO cks_object_versions (object_id, parents, content, content_hash, author, created_at, is_head) VALUES
    (1, '[]', '{"v":"1a"}', 'h1a', 'op', '2026-11-30T12:00:01.000000000Z', 0),
    (2, '[]', '{"v":"2a"}', 'h2a', 'op', '2026-11-30T12:00:02.000000000Z', 0),
    (1, '[1]', '{"v":"1b"}', 'h1b', 'alice', '2026-11-30T12:00:03.000000000Z', 0),
    (2, '[2]', '{"v":"2b"}', 'h2b', 'alice', '2026-11-30T12:00:04.000000000Z', 0),
    (1, '[1]', '{"v":"1c"}', 'h1c', 'bob', '2026-11-30T12:00:05.000000000Z', 0),
    (1, '[3,5]', '{"v":"1d"}', 'h1d', 'fork_resolution', '2026-11-30T12:00:06.000000000Z', 1),
    (2, '[4]', '{"v":"2c"}', 'h2c', 'alice', '2026-11-30T12:00:07.000000000Z', 1),
    (3, '[]', '{"v":"3a"}', 'h3a', 'op', '2026-11-30T12:00:08.000000000Z', 0),
    (3, '[8]', '{"v":"3b"}', 'h3b', 'alice', '2026-11-30T12:00:09.000000000Z', 1),
    (3, '[8]', '{"v":"3c"}', 'h3c', 'bob', '2026-11-30T12:00:10.000000000Z', 1);
