-- The knowledge store (ADR-007): objects, their versions, edges and
-- transition logs. The bulk primitives send one single-row statement per
-- row in one pgx batch (:batch…): one round trip, and NULLs map as in the
-- single-row forms. Objects are locked FOR NO KEY UPDATE: no object write
-- changes the key, so the rows referencing an object (whose foreign keys
-- take KEY SHARE) can be inserted while a writer holds it.

-- name: ObjectInsert :batchone
INSERT INTO cks_objects (kind, title, content, content_hash, current_status, claimed_by, claim_token,
    claimed_at, round, created_by, created_at, updated_at, head_version, heads)
VALUES (@kind, @title, @content, @content_hash, @current_status, @claimed_by, @claim_token,
    @claimed_at, @round, @created_by, @created_at, @updated_at, @head_version, @heads)
RETURNING object_id;

-- name: ObjectGetMany :many
-- variants: ForUpdate
SELECT * FROM cks_objects
WHERE object_id = ANY(@ids::bigint[])
ORDER BY object_id
/*if ForUpdate*/FOR NO KEY UPDATE/*end*/;

-- name: ObjectExistMany :many
SELECT object_id FROM cks_objects
WHERE object_id = ANY(@ids::bigint[])
ORDER BY object_id;

-- The updates return the id so that the glue counts the rows written (a
-- batch does not hand back command tags).
-- name: ObjectUpdate :batchone
UPDATE cks_objects SET current_status = @current_status, claimed_by = @claimed_by,
    claim_token = @claim_token, claimed_at = @claimed_at, round = @round,
    head_version = @head_version, heads = @heads, updated_at = @updated_at
WHERE object_id = @object_id
RETURNING object_id;

-- name: ObjectUpdateWithContent :batchone
UPDATE cks_objects SET current_status = @current_status, claimed_by = @claimed_by,
    claim_token = @claim_token, claimed_at = @claimed_at, round = @round,
    head_version = @head_version, heads = @heads, updated_at = @updated_at,
    content = @content, content_hash = @content_hash
WHERE object_id = @object_id
RETURNING object_id;

-- ObjectList has one query per shape of filter, so that each can use its
-- index (a generic plan cannot use one behind "an empty list selects
-- any"): unclaimed by status (the partial idx_objects_claim), by status
-- (idx_objects_status), by kind (idx_objects_kind), or neither (the
-- primary key). An empty @kinds selects any kind.

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
    /*if ByStatus UnclaimedByStatus*/AND current_status = ANY(@statuses::text[])
    /*elif Matching*/AND (cardinality(@statuses::text[]) = 0 OR current_status = ANY(@statuses::text[]))/*end*/
    /*if ByKind*/AND kind = ANY(@kinds::text[])
    /*elif ByStatus UnclaimedByStatus Matching*/AND (cardinality(@kinds::text[]) = 0 OR kind = ANY(@kinds::text[]))/*end*/
    /*if UnclaimedByStatus*/AND claimed_by = ''/*elif ByStatus*//*else*/AND (NOT @unclaimed::boolean OR claimed_by = '')/*end*/
    /*if Matching*/AND (strpos(translate(lower(title COLLATE "und-x-icu"), chr(962), chr(963)), @match::text) > 0
        OR strpos(translate(lower(content COLLATE "und-x-icu"), chr(962), chr(963)), @match::text) > 0)/*end*/
ORDER BY object_id
LIMIT @limit;

-- The partial idx_objects_claim serves it in claim order; rows another
-- claimer holds are skipped, never waited for.
-- name: ObjectClaimable :many
SELECT * FROM cks_objects
WHERE current_status = @status AND claimed_by = ''
ORDER BY object_id
LIMIT @limit
FOR NO KEY UPDATE SKIP LOCKED;

-- idx_objects_claimed_at holds the claimed objects only. A claim locked by
-- a concurrent touch, release or transition is skipped: that writer is on
-- it.
-- name: ObjectClaimedBefore :many
SELECT * FROM cks_objects
WHERE claimed_by <> '' AND claimed_at <= @before
ORDER BY object_id
FOR NO KEY UPDATE SKIP LOCKED;

-- name: ForkList :many
SELECT o.object_id, ARRAY(SELECT v.version FROM cks_object_versions v
        WHERE v.object_id = o.object_id AND v.is_head ORDER BY v.version)::bigint[] AS heads
FROM cks_objects o
WHERE o.heads > 1 AND o.object_id > @after
ORDER BY o.object_id
LIMIT @limit;

-- name: VersionInsert :batchone
INSERT INTO cks_object_versions (object_id, version, parents, content, content_hash, author, created_at, is_head)
VALUES (@object_id, @version, @parents, @content, @content_hash, @author, @created_at, @is_head)
RETURNING version_id;

-- name: VersionList :many
SELECT * FROM cks_object_versions
WHERE object_id = @object_id
ORDER BY version;

-- idx_object_versions_heads holds the heads only.
-- name: VersionListHeads :many
SELECT * FROM cks_object_versions
WHERE object_id = @object_id AND is_head
ORDER BY version;

-- name: VersionUnsetHeads :execrows
UPDATE cks_object_versions SET is_head = false
WHERE object_id = @object_id AND is_head AND version = ANY(@versions::bigint[]);

-- name: EdgeInsert :batchone
INSERT INTO cks_edges (src, dst, base_type, semantic_type, weight, created_at)
VALUES (@src, @dst, @base_type, @semantic_type, @weight, @created_at)
RETURNING edge_id;

-- name: EdgeListOf :many
SELECT * FROM cks_edges
WHERE src = @object_id OR dst = @object_id
ORDER BY edge_id;

-- The edges at either end of many objects: a BitmapOr of idx_edges_src
-- and idx_edges_dst; EdgeListOf is the same for one object.
-- name: EdgeListOfMany :many
SELECT * FROM cks_edges
WHERE src = ANY(@object_ids::bigint[]) OR dst = ANY(@object_ids::bigint[])
ORDER BY edge_id;

-- name: EdgeList :many
SELECT * FROM cks_edges
WHERE edge_id > @after
ORDER BY edge_id
LIMIT @limit;

-- name: TransitionInsert :batchexec
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
WHERE object_id = ANY(@object_ids::bigint[])
ORDER BY object_id, seq;
