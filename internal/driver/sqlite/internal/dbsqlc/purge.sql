-- The retention sweeper's deletion of old terminal tasks (issue 26), every
-- statement of it in this one file: the tasks it may delete, then each
-- table that holds rows of a task, children first, then the tasks. A new
-- table of per-task (or per-attempt) rows gets its DELETE here and its call
-- in the driver's TaskPurge.

-- The old terminal tasks that nothing live refers to, oldest id first
-- (@states: the terminal states).
-- name: TaskPurgeCandidates :many
SELECT t.task_id FROM cks_outbox_tasks t
WHERE t.state_changed_at < @before
    AND t.state IN (SELECT value FROM json_each(CAST(@states AS TEXT)))
    -- Never a task another task still names: a child (its parent_id),
    -- or a dependency of a task not in a terminal state.
    AND NOT EXISTS (SELECT 1 FROM cks_outbox_tasks c WHERE c.parent_id = t.task_id)
    AND NOT EXISTS (SELECT 1 FROM cks_task_deps d JOIN cks_outbox_tasks x ON x.task_id = d.task_id
        WHERE d.depends_on = t.task_id AND x.state NOT IN (SELECT value FROM json_each(CAST(@states AS TEXT))))
ORDER BY t.task_id
LIMIT @limit;

-- Of @ids, those still eligible, in the purge's transaction.
-- name: TaskPurgeEligible :many
SELECT t.task_id FROM cks_outbox_tasks t
WHERE t.task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
    AND t.state_changed_at < @before
    AND t.state IN (SELECT value FROM json_each(CAST(@states AS TEXT)))
    -- Never a task another task still names: a child (its parent_id),
    -- or a dependency of a task not in a terminal state.
    AND NOT EXISTS (SELECT 1 FROM cks_outbox_tasks c WHERE c.parent_id = t.task_id)
    AND NOT EXISTS (SELECT 1 FROM cks_task_deps d JOIN cks_outbox_tasks x ON x.task_id = d.task_id
        WHERE d.depends_on = t.task_id AND x.state NOT IN (SELECT value FROM json_each(CAST(@states AS TEXT))))
ORDER BY t.task_id;

-- name: TaskPurgeDeps :exec
DELETE FROM cks_task_deps WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT))) OR depends_on IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- name: TaskPurgeEvents :exec
DELETE FROM cks_task_events WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- name: TaskPurgeOutput :exec
DELETE FROM cks_task_output WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- name: TaskPurgeEvidence :exec
DELETE FROM cks_task_evidence WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- name: TaskPurgeDecisions :exec
DELETE FROM cks_task_decisions WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- name: TaskPurgeAborts :exec
DELETE FROM cks_task_aborts WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- Task-scoped credentials (their grants and sessions go with them: ON
-- DELETE CASCADE).
-- name: TaskPurgePrincipals :exec
DELETE FROM cks_principals WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- name: TaskPurgeTasks :exec
DELETE FROM cks_outbox_tasks WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- The retention sweeper's deletion of old transition-log rows of objects in
-- a final status (CKS_RETENTION_KNOWLEDGE): the object rows, versions and
-- edges stay. A row goes when it and its object's last change are older
-- than @before and the object is in one of @statuses, oldest seq first.
-- name: TransitionPurgeCandidates :many
SELECT l.seq, l.object_id, l.ts, l.agent, l.action, l.transitioned_to, l.reasoning_node_id,
    l.content_hash, l.round
FROM cks_transition_log l JOIN cks_objects o ON o.object_id = l.object_id
WHERE l.ts < @before AND o.updated_at < @before
    AND o.current_status IN (SELECT value FROM json_each(CAST(@statuses AS TEXT)))
ORDER BY l.seq
LIMIT @limit;

-- Of @seqs, those still eligible, in the purge's transaction.
-- name: TransitionPurgeEligible :many
SELECT l.seq FROM cks_transition_log l JOIN cks_objects o ON o.object_id = l.object_id
WHERE l.seq IN (SELECT value FROM json_each(CAST(@seqs AS TEXT)))
    AND l.ts < @before AND o.updated_at < @before
    AND o.current_status IN (SELECT value FROM json_each(CAST(@statuses AS TEXT)))
ORDER BY l.seq;

-- name: TransitionPurgeRows :exec
DELETE FROM cks_transition_log WHERE seq IN (SELECT value FROM json_each(CAST(@seqs AS TEXT)));

-- A purged task's budget and spend (its usage rows stay: cks_usage).
-- name: TaskPurgeSpend :exec
DELETE FROM cks_task_spend WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));
