-- Objects written before versions existed (head_version 0) get their
-- content as version 1 (no parents, by their creator, at their last
-- update), and point at it. cks_object_versions exists by now: Plan creates
-- every missing table before any backfill.
INSERT INTO cks_object_versions (object_id, version, parents, content, content_hash, author, created_at, is_head)
SELECT object_id, 1, '[]', content, content_hash, created_by, updated_at, 1 FROM cks_objects WHERE head_version = 0
ORDER BY object_id;
UPDATE cks_objects SET head_version = 1 WHERE head_version = 0
