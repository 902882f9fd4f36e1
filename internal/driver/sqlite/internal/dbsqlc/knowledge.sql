-- The knowledge store (ADR-007): objects, their versions, edges and
-- transition logs. The bulk primitives run these single-row statements once
-- per row inside one write transaction (prepared once: there is no round
-- trip to save on SQLite). Lists are JSON arrays read with json_each. The
-- one writer serialises every write, so a read for update takes no lock.

-- name: ObjectInsert :one
INSERT INTO cks_objects (kind, title, content, content_hash, current_status, claimed_by, claim_token,
    claimed_at, round, created_by, created_at, updated_at, head_version, heads)
VALUES (@kind, @title, @content, @content_hash, @current_status, @claimed_by, @claim_token,
    @claimed_at, @round, @created_by, @created_at, @updated_at, @head_version, @heads)
RETURNING object_id;

-- name: ObjectGetMany :many
SELECT * FROM cks_objects
WHERE object_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
ORDER BY object_id;

-- name: ObjectExistMany :many
SELECT object_id FROM cks_objects
WHERE object_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
ORDER BY object_id;

-- name: ObjectUpdate :execrows
UPDATE cks_objects SET current_status = @current_status, claimed_by = @claimed_by,
    claim_token = @claim_token, claimed_at = @claimed_at, round = @round,
    head_version = @head_version, heads = @heads, updated_at = @updated_at
WHERE object_id = @object_id;

-- name: ObjectUpdateWithContent :execrows
UPDATE cks_objects SET current_status = @current_status, claimed_by = @claimed_by,
    claim_token = @claim_token, claimed_at = @claimed_at, round = @round,
    head_version = @head_version, heads = @heads, updated_at = @updated_at,
    content = @content, content_hash = @content_hash
WHERE object_id = @object_id;

-- ObjectList has one query per shape of filter, so that each can use its
-- index: by status (idx_objects_claim: current_status, claimed_by,
-- object_id), by kind (idx_objects_kind), or neither (the primary key).
-- @kinds and @statuses are JSON arrays; an empty @kinds selects any kind.

-- The objects after the cursor, by id; ObjectList filters by claim alone,
-- its variants also by status (ByStatus, UnclaimedByStatus), by kind
-- (ByKind), each served by its index, and by text (Matching: @match,
-- lower-cased by the service; it reads every object after the cursor until
-- the page is full, since no index serves a substring, and a console's search
-- of titles and contents may cost a scan). An empty list selects any.
-- name: ObjectList :many
-- variants: ByStatus UnclaimedByStatus ByKind Matching
SELECT * FROM cks_objects
WHERE object_id > @after
    /*if ByStatus UnclaimedByStatus*/AND current_status IN (SELECT value FROM json_each(CAST(@statuses AS TEXT)))
    /*elif Matching*/AND (json_array_length(CAST(@statuses AS TEXT)) = 0
        OR current_status IN (SELECT value FROM json_each(CAST(@statuses AS TEXT))))/*end*/
    /*if ByKind*/AND kind IN (SELECT value FROM json_each(CAST(@kinds AS TEXT)))
    /*elif ByStatus UnclaimedByStatus Matching*/AND (json_array_length(CAST(@kinds AS TEXT)) = 0
        OR kind IN (SELECT value FROM json_each(CAST(@kinds AS TEXT))))/*end*/
    /*if UnclaimedByStatus*/AND claimed_by = ''/*elif ByStatus*//*else*/AND (NOT CAST(@unclaimed AS BOOLEAN) OR claimed_by = '')/*end*/
    /*if Matching*/AND (instr(cks_fold(title), CAST(@match AS TEXT)) > 0 OR instr(cks_fold(content), CAST(@match AS TEXT)) > 0)/*end*/
ORDER BY object_id
LIMIT @limit;

-- idx_objects_claim serves it in claim order.
-- name: ObjectClaimable :many
SELECT * FROM cks_objects
WHERE current_status = @status AND claimed_by = ''
ORDER BY object_id
LIMIT @limit;

-- idx_objects_claimed_at holds the claimed objects only.
-- name: ObjectClaimedBefore :many
SELECT * FROM cks_objects
WHERE claimed_at IS NOT NULL AND claimed_at <= @before AND claimed_by <> ''
ORDER BY object_id;

-- The heads come as a JSON array (the glue sorts them). INDEXED BY pins
-- idx_objects_forked (partial, heads > 1: only the forked objects): once
-- ANALYZE has run, the planner may prefer a rowid range of every object after
-- the cursor when forks are common in its sample, which is a scan of the
-- whole table on a large store.
-- name: ForkList :many
SELECT o.object_id, CAST((SELECT json_group_array(v.version) FROM cks_object_versions v
        WHERE v.object_id = o.object_id AND v.is_head = 1) AS TEXT) AS heads
FROM cks_objects o INDEXED BY idx_objects_forked
WHERE o.heads > 1 AND o.object_id > @after
ORDER BY o.object_id
LIMIT @limit;

-- name: VersionInsert :one
INSERT INTO cks_object_versions (object_id, version, parents, content, content_hash, author, created_at, is_head)
VALUES (@object_id, @version, @parents, @content, @content_hash, @author, @created_at, @is_head)
RETURNING version_id;

-- name: VersionList :many
SELECT * FROM cks_object_versions
WHERE object_id = @object_id
ORDER BY version;

-- idx_object_versions_head holds the heads only.
-- name: VersionListHeads :many
SELECT * FROM cks_object_versions
WHERE object_id = @object_id AND is_head = 1
ORDER BY version;

-- name: VersionUnsetHeads :execrows
UPDATE cks_object_versions SET is_head = 0
WHERE object_id = @object_id AND is_head = 1
    AND version IN (SELECT value FROM json_each(CAST(@versions AS TEXT)));

-- name: EdgeInsert :one
INSERT INTO cks_edges (src, dst, base_type, semantic_type, weight, created_at)
VALUES (@src, @dst, @base_type, @semantic_type, @weight, @created_at)
RETURNING edge_id;

-- name: EdgeListOf :many
SELECT * FROM cks_edges
WHERE src = @object_id OR dst = @object_id
ORDER BY edge_id;

-- The edges at either end of many objects: idx_edges_src and
-- idx_edges_dst (SQLite's OR optimisation reads each and drops a row seen
-- twice); EdgeListOf is the same for one object.
-- name: EdgeListOfMany :many
SELECT * FROM cks_edges
WHERE src IN (SELECT value FROM json_each(CAST(@object_ids AS TEXT)))
    OR dst IN (SELECT value FROM json_each(CAST(@object_ids AS TEXT)))
ORDER BY edge_id;

-- name: EdgeList :many
SELECT * FROM cks_edges
WHERE edge_id > @after
ORDER BY edge_id
LIMIT @limit;

-- name: TransitionInsert :exec
INSERT INTO cks_transition_log (object_id, ts, agent, action, transitioned_to, reasoning_node_id,
    content_hash, round)
VALUES (@object_id, @ts, @agent, @action, @transitioned_to, @reasoning_node_id, @content_hash, @round);

-- name: TransitionList :many
SELECT * FROM cks_transition_log
WHERE object_id = @object_id
ORDER BY seq;

-- The logs of many objects, read from idx_transition_log_object;
-- TransitionList is the same for one object.
-- name: TransitionListMany :many
SELECT * FROM cks_transition_log
WHERE object_id IN (SELECT value FROM json_each(CAST(@object_ids AS TEXT)))
ORDER BY object_id, seq;
