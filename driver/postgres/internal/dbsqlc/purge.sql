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
    AND t.state = ANY(@states::text[])
    -- Never a task another task still names: a child (its parent_id),
    -- or a dependency of a task not in a terminal state.
    AND NOT EXISTS (SELECT 1 FROM cks_outbox_tasks c WHERE c.parent_id = t.task_id)
    AND NOT EXISTS (SELECT 1 FROM cks_task_deps d JOIN cks_outbox_tasks x ON x.task_id = d.task_id
        WHERE d.depends_on = t.task_id AND NOT (x.state = ANY(@states::text[])))
ORDER BY t.task_id
LIMIT @max;

-- Of @ids, those still eligible, in the purge's transaction.
-- name: TaskPurgeEligible :many
SELECT t.task_id FROM cks_outbox_tasks t
WHERE t.task_id = ANY(@ids::bigint[])
    AND t.state_changed_at < @before
    AND t.state = ANY(@states::text[])
    -- Never a task another task still names: a child (its parent_id),
    -- or a dependency of a task not in a terminal state.
    AND NOT EXISTS (SELECT 1 FROM cks_outbox_tasks c WHERE c.parent_id = t.task_id)
    AND NOT EXISTS (SELECT 1 FROM cks_task_deps d JOIN cks_outbox_tasks x ON x.task_id = d.task_id
        WHERE d.depends_on = t.task_id AND NOT (x.state = ANY(@states::text[])))
ORDER BY t.task_id;

-- name: TaskPurgeDeps :exec
DELETE FROM cks_task_deps WHERE task_id = ANY(@ids::bigint[]) OR depends_on = ANY(@ids::bigint[]);

-- name: TaskPurgeEvents :exec
DELETE FROM cks_task_events WHERE task_id = ANY(@ids::bigint[]);

-- name: TaskPurgeEvidence :exec
DELETE FROM cks_task_evidence WHERE task_id = ANY(@ids::bigint[]);

-- name: TaskPurgeDecisions :exec
DELETE FROM cks_task_decisions WHERE task_id = ANY(@ids::bigint[]);

-- name: TaskPurgeAborts :exec
DELETE FROM cks_task_aborts WHERE task_id = ANY(@ids::bigint[]);

-- Task-scoped credentials (their grants and sessions go with them: ON
-- DELETE CASCADE).
-- name: TaskPurgePrincipals :exec
DELETE FROM cks_principals WHERE task_id = ANY(@ids::bigint[]);

-- name: TaskPurgeTasks :exec
DELETE FROM cks_outbox_tasks WHERE task_id = ANY(@ids::bigint[]);
