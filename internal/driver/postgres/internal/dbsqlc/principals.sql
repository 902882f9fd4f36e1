-- Principals (bearer-token identities) and their grants.

-- name: PrincipalInsert :exec
INSERT INTO cks_principals (principal_id, name, token_hash, created_at, task_id, lease_token_hash)
VALUES (@principal_id, @name, @token_hash, @created_at, @task_id, @lease_token_hash);

-- The three arrays are the grants' columns, element by element.
-- name: GrantInsertMany :exec
INSERT INTO cks_grants (principal_id, resource, permission)
SELECT unnest(@principal_ids::text[]), unnest(@resources::text[]), unnest(@permissions::text[])
ON CONFLICT DO NOTHING;

-- A principal bound to a lease only while that lease is its task's current
-- one: the task has a lease and its token's hash is the bound one.
-- name: PrincipalByTokenHash :one
SELECT p.* FROM cks_principals p
WHERE p.token_hash = @token_hash
    AND (p.task_id IS NULL OR EXISTS (
        SELECT 1 FROM cks_outbox_tasks t
        WHERE t.task_id = p.task_id AND t.lease_token_hash <> ''
            AND t.lease_token_hash = p.lease_token_hash));

-- PrincipalByTokenHash with the principal's grants (GrantList's order),
-- in one statement: an authenticated request's one read.
-- name: PrincipalAuth :one
SELECT sqlc.embed(p),
    coalesce((SELECT array_agg(g.resource ORDER BY g.resource COLLATE "C", g.permission COLLATE "C")
        FROM cks_grants g WHERE g.principal_id = p.principal_id), '{}')::text[] AS grant_resources,
    coalesce((SELECT array_agg(g.permission ORDER BY g.resource COLLATE "C", g.permission COLLATE "C")
        FROM cks_grants g WHERE g.principal_id = p.principal_id), '{}')::text[] AS grant_permissions
FROM cks_principals p
WHERE p.token_hash = @token_hash
    AND (p.task_id IS NULL OR EXISTS (
        SELECT 1 FROM cks_outbox_tasks t
        WHERE t.task_id = p.task_id AND t.lease_token_hash <> ''
            AND t.lease_token_hash = p.lease_token_hash));

-- A task's agent token is checked against its task's row, not a
-- principal's: the claim that leased the task wrote the credential's hash
-- there (agent_token_hash, bound to lease_token_hash).
-- name: PrincipalTaskCredential :one
SELECT lease_token_hash, agent_token_hash, claimed_by, claimed_at FROM cks_outbox_tasks
WHERE task_id = @task_id;

-- name: PrincipalGet :one
SELECT * FROM cks_principals WHERE principal_id = @principal_id;

-- name: GrantList :many
SELECT * FROM cks_grants WHERE principal_id = @principal_id
ORDER BY resource COLLATE "C", permission COLLATE "C";

-- name: PrincipalList :many
SELECT * FROM cks_principals ORDER BY created_at, principal_id COLLATE "C";

-- name: GrantListAll :many
SELECT * FROM cks_grants
ORDER BY principal_id COLLATE "C", resource COLLATE "C", permission COLLATE "C";

-- Its grants go with it (ON DELETE CASCADE).
-- name: PrincipalDelete :execrows
DELETE FROM cks_principals WHERE principal_id = @principal_id;

-- The holders of a grant, locked until the transaction ends, so that of two
-- concurrent deletes of the last two holders the second waits, no longer
-- sees the first's row, and counts right. (FOR UPDATE cannot go with
-- count(); the driver counts the rows.)
-- name: GrantHoldersLock :many
SELECT principal_id FROM cks_grants
WHERE resource = @resource AND permission = @permission
FOR UPDATE;

-- name: PrincipalDeleteEndedLeases :execrows
DELETE FROM cks_principals p
WHERE p.task_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM cks_outbox_tasks t
    WHERE t.task_id = p.task_id AND t.lease_token_hash <> ''
        AND t.lease_token_hash = p.lease_token_hash);

-- Studio sessions: the hash of a browser's secret, bound to a principal.

-- name: SessionInsert :exec
INSERT INTO cks_sessions (session_id, secret_hash, principal_id, created_at, expires_at)
VALUES (@session_id, @secret_hash, @principal_id, @created_at, @expires_at);

-- name: SessionBySecretHash :one
SELECT * FROM cks_sessions WHERE secret_hash = @secret_hash;

-- A page of the sessions, newest first (ties by id), after the last row
-- of the previous page (idx_sessions_created).
-- name: SessionPage :many
SELECT * FROM cks_sessions
WHERE created_at <= @after_created_at
    AND (created_at < @after_created_at OR session_id COLLATE "C" > @after_session_id)
ORDER BY created_at DESC, session_id COLLATE "C"
LIMIT @limit;

-- name: SessionCount :one
SELECT count(*) FROM cks_sessions;

-- The sessions of a principal but @new_session_id and the newest @keep
-- of the others (idx_sessions_principal): the oldest, signed out when a
-- sign-in passes the cap.
-- name: SessionTrim :execrows
DELETE FROM cks_sessions WHERE session_id IN (
    SELECT s.session_id FROM cks_sessions AS s
    WHERE s.principal_id = @principal_id AND s.session_id <> @new_session_id
    ORDER BY s.created_at DESC, s.session_id COLLATE "C"
    OFFSET @keep);

-- name: SessionDelete :execrows
DELETE FROM cks_sessions WHERE session_id = @session_id;

-- name: SessionDeleteExpired :execrows
DELETE FROM cks_sessions WHERE expires_at <= @now;
