-- The task ledger (ADR 0020): tasks, dependencies, events, evidence,
-- decisions and aborts. Every state a query filters by is a parameter the
-- ledger passes (no rule lives here). Lists of ids and states are JSON
-- arrays. Row writes are one statement per row, by primary key: the glue
-- runs them prepared in the caller's transaction (SQLite has no round trip
-- to save, and bound parameters keep every byte).

-- The inserts return no row, only the id (the glue reads it as the last
-- insert rowid): SQLite stores TEXT and INTEGER values as they are bound,
-- so the row as stored is the row sent, and reading its 30 columns back
-- (RETURNING *) was most of an insert's cost.
-- name: TaskInsert :execlastid
INSERT INTO cks_outbox_tasks (type, title, description, acceptance_criteria, payload, state,
    priority, attempts, max_attempts, restarts, revision, parent_id, dedupe_key, created_by,
    claimed_by, claimed_at, lease_token_hash, lease_expires_at, lease_renewed_at, lease_ms, run_after,
    result, last_error, question, answer, review_note, created_at, updated_at, state_changed_at,
    metadata, attempt_timeout_ms, expires_at, concurrency_keys, traceparent)
VALUES (@type, @title, @description, @acceptance_criteria, @payload, @state,
    @priority, @attempts, @max_attempts, @restarts, @revision, @parent_id, @dedupe_key, @created_by,
    @claimed_by, @claimed_at, @lease_token_hash, @lease_expires_at, @lease_renewed_at, @lease_ms, @run_after,
    @result, @last_error, @question, @answer, @review_note, @created_at, @updated_at, @state_changed_at,
    @metadata, @attempt_timeout_ms, @expires_at, @concurrency_keys, @traceparent);

-- A new task, as the ledger's enqueue makes it: the columns a task is
-- created with (created, updated and state-changed at one time), every
-- other one its default (no attempt, lease, outcome or schedule, the first
-- revision). Half of TaskInsert's parameters.
-- name: TaskInsertNew :execlastid
INSERT INTO cks_outbox_tasks (type, title, description, acceptance_criteria, payload, state,
    priority, max_attempts, parent_id, dedupe_key, created_by, created_at, updated_at,
    state_changed_at, metadata, attempt_timeout_ms, concurrency_keys, traceparent)
VALUES (@type, @title, @description, @acceptance_criteria, @payload, @state,
    @priority, @max_attempts, @parent_id, @dedupe_key, @created_by, @created_at, @created_at,
    @created_at, @metadata, @attempt_timeout_ms, @concurrency_keys, @traceparent);

-- The children of a task after a cursor, by id (idx_outbox_tasks_parent_of).
-- name: TaskChildren :many
SELECT task_id FROM cks_outbox_tasks
WHERE parent_id = @parent AND task_id > @after
ORDER BY task_id
LIMIT @limit;

-- name: TaskChildCount :one
SELECT count(*) FROM cks_outbox_tasks WHERE parent_id = @parent;

-- SQLite has one writer: the locks a caller asks for are all no-ops.
-- name: TaskGetMany :many
SELECT * FROM cks_outbox_tasks
WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
ORDER BY task_id;

-- One id: a plain key lookup is cheaper than the JSON list.
-- name: TaskGet :many
SELECT * FROM cks_outbox_tasks WHERE task_id = @task_id;

-- Every column but task_id, type, created_at and created_by.
-- name: TaskUpdate :execrows
UPDATE cks_outbox_tasks SET
    title = @title, description = @description, acceptance_criteria = @acceptance_criteria,
    payload = @payload, state = @state, priority = @priority, attempts = @attempts,
    max_attempts = @max_attempts, restarts = @restarts, revision = @revision,
    parent_id = @parent_id, dedupe_key = @dedupe_key, claimed_by = @claimed_by,
    claimed_at = @claimed_at, lease_token_hash = @lease_token_hash, lease_expires_at = @lease_expires_at,
    lease_renewed_at = @lease_renewed_at, lease_ms = @lease_ms, run_after = @run_after,
    result = @result, last_error = @last_error, question = @question, answer = @answer,
    review_note = @review_note, updated_at = @updated_at, state_changed_at = @state_changed_at,
    metadata = @metadata, attempt_timeout_ms = @attempt_timeout_ms, expires_at = @expires_at,
    concurrency_keys = @concurrency_keys, traceparent = @traceparent
WHERE task_id = @task_id;

-- A state move, written narrowly: only the columns a move of the
-- lifecycle changes (the glue inserts the move's events after it, in the
-- same write).
-- name: TaskMove :execrows
UPDATE cks_outbox_tasks SET
    state = @state, attempts = @attempts, restarts = @restarts, claimed_by = @claimed_by,
    claimed_at = @claimed_at, lease_token_hash = @lease_token_hash, lease_expires_at = @lease_expires_at,
    lease_renewed_at = @lease_renewed_at, lease_ms = @lease_ms, run_after = @run_after,
    result = @result, last_error = @last_error, question = @question, answer = @answer,
    review_note = @review_note, updated_at = @updated_at, state_changed_at = @state_changed_at
WHERE task_id = @task_id;

-- A claim's move: only the columns a claim sets (the state, the attempt,
-- the lease, the schedule, the times); six parameters fewer than TaskMove
-- a claimed task.
-- name: TaskClaimMove :execrows
UPDATE cks_outbox_tasks SET
    state = @state, attempts = @attempts, claimed_by = @claimed_by, claimed_at = @claimed_at,
    lease_token_hash = @lease_token_hash, agent_token_hash = @agent_token_hash,
    lease_expires_at = @lease_expires_at, lease_renewed_at = @lease_renewed_at, lease_ms = @lease_ms,
    run_after = @run_after, updated_at = @updated_at, state_changed_at = @state_changed_at
WHERE task_id = @task_id;

-- The claim queries come in two forms: any type or several (a type IN
-- list on idx_outbox_tasks_claim_type would need a temp B-tree anyway),
-- and one type as an equality, which idx_outbox_tasks_claim_type (state,
-- type, priority DESC, created_at, task_id) WHERE state = 'OPEN' serves in
-- claim order.
--
-- Both name the claim indexes' state as the literal 'OPEN', first, and
-- the ledger's state as CAST(@state AS TEXT) (so a ledger passing another
-- state claims nothing). A parameter compared with a column that a partial
-- index's WHERE names (state = @state against state = 'OPEN') makes SQLite
-- prepare the statement again at every execution, with the bound value;
-- the literal lets the planner match the partial indexes without looking
-- at a binding. The re-prepare was a fifth of the CPU of the agent path,
-- where a claim statement carries a task or two (docs/benchmarks.md).
-- TestClaimsPlanWithoutTheirBinding holds the plans to it. The LIMIT is
-- CAST(@limit AS INTEGER) too: with a bare LIMIT parameter SQLite still
-- prepared a claim again at some executions (the rest of the re-preparing,
-- 3 % of the agent path's CPU); with the CAST it does not. The other
-- queries compare the state as CAST(@state AS TEXT) too, which SQLite does
-- not match against a partial index, so their prepared statements are
-- kept.
--
-- A type with a row in cks_paused_types (pause_type) is skipped: one
-- primary-key probe per candidate row.
--
-- A task with concurrency keys is skipped when one of its keys is in
-- @saturated (the keyed claim's read: keys at their limit), and, when
-- @guard (the driver's TaskClaim), while any limit exists: a claimer that
-- has not yet learned of a new limit then skips keyed tasks instead of
-- overrunning it. A task without keys is told by a comparison alone.

-- name: TaskClaimable :many
SELECT * FROM cks_outbox_tasks
WHERE state = 'OPEN' AND state = CAST(@state AS TEXT) AND state NOT IN (SELECT value FROM json_each(CAST(@excluded AS TEXT)))
    AND (CAST(@any_type AS BOOLEAN) OR type IN (SELECT value FROM json_each(CAST(@types AS TEXT))))
    AND (run_after IS NULL OR run_after <= @now)
    AND NOT EXISTS (SELECT 1 FROM cks_paused_types p WHERE p.type = cks_outbox_tasks.type)
    AND (concurrency_keys = '' OR ((NOT CAST(@guard AS BOOLEAN) OR NOT EXISTS (SELECT 1 FROM cks_limits))
        AND NOT EXISTS (SELECT 1 FROM json_each(cks_outbox_tasks.concurrency_keys) k
            WHERE k.value IN (SELECT value FROM json_each(CAST(@saturated AS TEXT))))))
ORDER BY priority DESC, created_at, task_id
LIMIT CAST(@limit AS INTEGER);

-- name: TaskClaimableOfType :many
SELECT * FROM cks_outbox_tasks
WHERE state = 'OPEN' AND state = CAST(@state AS TEXT) AND state NOT IN (SELECT value FROM json_each(CAST(@excluded AS TEXT)))
    AND type = @type
    AND (run_after IS NULL OR run_after <= @now)
    AND NOT EXISTS (SELECT 1 FROM cks_paused_types p WHERE p.type = cks_outbox_tasks.type)
    AND (concurrency_keys = '' OR ((NOT CAST(@guard AS BOOLEAN) OR NOT EXISTS (SELECT 1 FROM cks_limits))
        AND NOT EXISTS (SELECT 1 FROM json_each(cks_outbox_tasks.concurrency_keys) k
            WHERE k.value IN (SELECT value FROM json_each(CAST(@saturated AS TEXT))))))
ORDER BY priority DESC, created_at, task_id
LIMIT CAST(@limit AS INTEGER);

-- The leases come from idx_outbox_tasks_lease_expires (leased tasks only,
-- by expiry; lease_expires_at <= @expired_at implies its WHERE), named
-- because without statistics the planner would rather walk a state index
-- or the table in task_id order.
-- name: TaskLeaseExpired :many
SELECT * FROM cks_outbox_tasks INDEXED BY idx_outbox_tasks_lease_expires
WHERE state IN (SELECT value FROM json_each(CAST(@states AS TEXT)))
    AND state NOT IN (SELECT value FROM json_each(CAST(@excluded AS TEXT)))
    AND lease_expires_at <= @expired_at
    AND (lease_renewed_at IS NULL OR lease_renewed_at <= @renewed_before)
ORDER BY task_id
LIMIT @limit;

-- The running attempts that have a timeout, claimed by a time, by id
-- (idx_outbox_tasks_timed, whose WHERE the query names as written: only
-- leased tasks with a timeout), unlocked: the lease reaper computes each
-- deadline (claimed_at + the timeout) and locks only the overdue ones.
-- name: TaskAttemptsTimed :many
SELECT * FROM cks_outbox_tasks INDEXED BY idx_outbox_tasks_timed
WHERE attempt_timeout_ms > 0 AND lease_expires_at IS NOT NULL
    AND state IN (SELECT value FROM json_each(CAST(@states AS TEXT)))
    AND claimed_at <= @claimed_before
    AND task_id > @after
ORDER BY task_id
LIMIT @limit;

-- The tasks that expire and have not ended, by expiry, unlocked
-- (idx_outbox_tasks_expiring, whose WHERE the query names as written):
-- the lease reaper cancels those whose time came and learns when the next
-- one's comes.
-- name: TaskExpiring :many
SELECT * FROM cks_outbox_tasks INDEXED BY idx_outbox_tasks_expiring
WHERE expires_at IS NOT NULL AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')
ORDER BY expires_at, task_id
LIMIT @limit;

-- The filters of the task listings and counts (but the state): an empty
-- @types selects every type, an empty @state_changed_before no time, an
-- empty @created_by every creator, an empty @match every text (else a
-- substring of the title, description or criteria, case-folded as
-- cks.SearchKey folds it); @unconfirmed_abort keeps the tasks whose latest
-- abort is not confirmed. An empty @states selects every state.
-- fragment: task_filters
    AND (json_array_length(CAST(@types AS TEXT)) = 0
        OR type IN (SELECT value FROM json_each(CAST(@types AS TEXT))))
    AND (CAST(@state_changed_before AS TEXT) = '' OR state_changed_at <= CAST(@state_changed_before AS TEXT))
    AND (CAST(@created_by AS TEXT) = '' OR created_by = CAST(@created_by AS TEXT))
    AND (CAST(@match AS TEXT) = '' OR instr(cks_fold(title), CAST(@match AS TEXT)) > 0
        OR instr(cks_fold(description), CAST(@match AS TEXT)) > 0
        OR instr(cks_fold(acceptance_criteria), CAST(@match AS TEXT)) > 0)
    AND (NOT CAST(@unconfirmed_abort AS BOOLEAN) OR EXISTS (SELECT 1 FROM cks_task_aborts a
        WHERE a.task_id = cks_outbox_tasks.task_id AND a.outcome <> 'abort_confirmed'
            AND a.abort_id = (SELECT max(b.abort_id) FROM cks_task_aborts b WHERE b.task_id = a.task_id)));

-- TaskList pages by task_id; its sorted forms by their key, then task_id,
-- each after the cursor row (@after 0: from the start). The sorts by
-- updated_at read idx_outbox_tasks_updated from the cursor on, in its
-- order, and stop at the page's end (issue 38.9: they sorted the table):
-- the cursor is one row value the index ranges over (the first page's is
-- before, or after, every row). TaskListPriority: highest priority first,
-- then oldest, the order of a claim.
-- name: TaskList :many
-- variants: IDDesc Updated UpdatedDesc Priority
SELECT * FROM cks_outbox_tasks
WHERE /*if IDDesc*/(CAST(@after AS INTEGER) = 0 OR cks_outbox_tasks.task_id < CAST(@after AS INTEGER))
    /*elif Updated*/(updated_at, cks_outbox_tasks.task_id) > (CASE WHEN CAST(@after AS INTEGER) = 0 THEN '' ELSE CAST(@after_updated AS TEXT) END,
        CAST(@after AS INTEGER))
    /*elif UpdatedDesc*/(updated_at, cks_outbox_tasks.task_id) < (CASE WHEN CAST(@after AS INTEGER) = 0 THEN '9999' ELSE CAST(@after_updated AS TEXT) END,
        CASE WHEN CAST(@after AS INTEGER) = 0 THEN 9223372036854775807 ELSE CAST(@after AS INTEGER) END)
    /*elif Priority*/(CAST(@after AS INTEGER) = 0 OR priority < CAST(@after_priority AS INTEGER)
        OR (priority = CAST(@after_priority AS INTEGER) AND cks_outbox_tasks.task_id > CAST(@after AS INTEGER)))
    /*else*/cks_outbox_tasks.task_id > @after/*end*/
    AND (json_array_length(CAST(@states AS TEXT)) = 0
        OR state IN (SELECT value FROM json_each(CAST(@states AS TEXT))))
/*include task_filters*/
ORDER BY /*if IDDesc*/task_id DESC/*elif Updated*/updated_at, task_id/*elif UpdatedDesc*/updated_at DESC, task_id DESC
    /*elif Priority*/priority DESC, task_id/*else*/task_id/*end*/
LIMIT @limit;

-- name: TaskCount :one
SELECT count(*) FROM cks_outbox_tasks
WHERE true
    AND (json_array_length(CAST(@states AS TEXT)) = 0
        OR state IN (SELECT value FROM json_each(CAST(@states AS TEXT))))
/*include task_filters*/;

-- name: TaskCountByState :many
SELECT state, count(*) AS count FROM cks_outbox_tasks
WHERE true
    AND (json_array_length(CAST(@states AS TEXT)) = 0
        OR state IN (SELECT value FROM json_each(CAST(@states AS TEXT))))
/*include task_filters*/
GROUP BY state
ORDER BY state;

-- The listings and counts of one state but OPEN (the board's STOPPED and
-- NEEDS_INPUT lists, the stale-stop count): the literal state <> 'OPEN' is
-- idx_outbox_tasks_state's WHERE, which lets SQLite's planner read that
-- state's entries alone, in id order, instead of the table (TaskList's
-- JSON list of states matches no index). The other filters are TaskList's.
-- name: TaskListInState :many
-- variants: Desc
SELECT * FROM cks_outbox_tasks
WHERE state <> 'OPEN' AND state = @state
    /*if Desc*/AND (CAST(@after AS INTEGER) = 0 OR cks_outbox_tasks.task_id < CAST(@after AS INTEGER))
    /*else*/AND cks_outbox_tasks.task_id > @after/*end*/
/*include task_filters*/
ORDER BY task_id /*if Desc*/DESC/*end*/
LIMIT @limit;

-- name: TaskCountInState :one
SELECT count(*) FROM cks_outbox_tasks
WHERE state <> 'OPEN' AND state = @state
/*include task_filters*/;

-- Every task's count by state, unfiltered (the board's chips, the charts):
-- from the indexes alone: idx_outbox_tasks_state for every state but
-- OPEN, idx_outbox_tasks_claim_open for OPEN; never the table's rows.
-- name: TaskCountByStateAll :many
SELECT state, count(*) AS count FROM cks_outbox_tasks WHERE state <> 'OPEN' GROUP BY state
UNION ALL
SELECT state, count(*) AS count FROM cks_outbox_tasks WHERE state = 'OPEN' GROUP BY state;

-- The condition on an empty key lets the planner use the partial index of
-- keyed tasks.
-- name: TaskDedupeFindLive :one
SELECT task_id FROM cks_outbox_tasks
WHERE dedupe_key = @key AND dedupe_key <> ''
    AND state NOT IN (SELECT value FROM json_each(CAST(@terminal AS TEXT)))
ORDER BY task_id DESC
LIMIT 1;

-- A live task first (0 sorts before 1), else the newest. (The ordering is
-- a column of a subquery: sqlc leaves a parameter in ORDER BY unbound.)
-- name: TaskDedupeFindAny :one
SELECT k.task_id FROM (
    SELECT task_id, state IN (SELECT value FROM json_each(CAST(@terminal AS TEXT))) AS finished
    FROM cks_outbox_tasks
    WHERE dedupe_key = @key AND dedupe_key <> '') k
ORDER BY k.finished, k.task_id DESC
LIMIT 1;

-- name: TaskDepInsert :exec
INSERT INTO cks_task_deps (task_id, depends_on) VALUES (@task_id, @depends_on);

-- name: TaskDepDelete :exec
DELETE FROM cks_task_deps WHERE task_id = @task_id AND depends_on = @depends_on;

-- name: TaskDepList :many
SELECT task_id, depends_on FROM cks_task_deps
WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
ORDER BY task_id, depends_on;

-- name: TaskDepListOf :many
SELECT task_id, depends_on FROM cks_task_deps WHERE task_id = @task_id ORDER BY depends_on;

-- Both ends: the primary key serves task_id, the dependency index
-- depends_on (SQLite's OR optimisation reads each and drops a row seen
-- twice).
-- name: TaskDepListAdjacentOf :many
SELECT task_id, depends_on FROM cks_task_deps
WHERE task_id = @task_id OR depends_on = @task_id
ORDER BY task_id, depends_on;

-- name: TaskDepListAdjacent :many
SELECT task_id, depends_on FROM cks_task_deps
WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
    OR depends_on IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
ORDER BY task_id, depends_on;

-- The dependants are found through idx_task_deps_depends_on and read by
-- primary key; the unary + keeps the planner off the state indexes, which
-- would walk every task in @state (every WAITING task of the database at
-- each completion).
-- name: TaskDependants :many
SELECT * FROM cks_outbox_tasks
WHERE task_id IN (SELECT d.task_id FROM cks_task_deps d
        WHERE d.depends_on IN (SELECT value FROM json_each(CAST(@depends_on AS TEXT))))
    AND +state = CAST(@state AS TEXT)
ORDER BY task_id;

-- name: TaskEventInsert :exec
INSERT INTO cks_task_events (task_id, at, actor, from_state, to_state, attempt, reason, changes,
    claimed_at, started_at, worker)
VALUES (@task_id, @at, @actor, @from_state, @to_state, @attempt, @reason, @changes,
    sqlc.narg(claimed_at), sqlc.narg(started_at), @worker);

-- name: TaskEventList :many
SELECT * FROM cks_task_events WHERE task_id = @task_id ORDER BY event_id;

-- name: EvidenceInsert :one
INSERT INTO cks_task_evidence (task_id, attempt, restart, revision, kind, body, actor, created_at)
VALUES (@task_id, @attempt, @restart, @revision, @kind, @body, @actor, @created_at)
RETURNING *;

-- name: EvidenceList :many
SELECT * FROM cks_task_evidence WHERE task_id = @task_id ORDER BY evidence_id;

-- name: DecisionInsert :one
INSERT INTO cks_task_decisions (task_id, attempt, restart, revision, derived_from_revision,
    kind, text, actor, created_at)
VALUES (@task_id, @attempt, @restart, @revision, @derived_from_revision,
    @kind, @text, @actor, @created_at)
RETURNING *;

-- name: DecisionList :many
SELECT * FROM cks_task_decisions WHERE task_id = @task_id ORDER BY decision_id;

-- name: AbortInsert :one
INSERT INTO cks_task_aborts (task_id, lease_token_hash, executor, attempt, restart, requested_by,
    reason, requested_at, deadline_at, outcome, resolved_at)
VALUES (@task_id, @lease_token_hash, @executor, @attempt, @restart, @requested_by,
    @reason, @requested_at, @deadline_at, @outcome, @resolved_at)
RETURNING *;

-- name: AbortGet :one
SELECT * FROM cks_task_aborts WHERE abort_id = @abort_id;

-- name: AbortGetMany :many
SELECT * FROM cks_task_aborts
WHERE abort_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
ORDER BY abort_id;

-- name: AbortFindLatest :one
SELECT * FROM cks_task_aborts
WHERE task_id = @task_id AND lease_token_hash = @lease_token_hash AND lease_token_hash <> ''
ORDER BY abort_id DESC
LIMIT 1;

-- name: AbortUpdate :execrows
UPDATE cks_task_aborts SET outcome = @outcome, resolved_at = @resolved_at
WHERE abort_id = @abort_id;

-- name: AbortList :many
SELECT * FROM cks_task_aborts WHERE task_id = @task_id ORDER BY abort_id;

-- name: TaskEventStoppedMany :many
SELECT * FROM cks_task_events
WHERE event_id IN (SELECT max(e.event_id) FROM cks_task_events e
    WHERE e.task_id IN (SELECT value FROM json_each(CAST(@task_ids AS TEXT))) AND e.to_state = 'STOPPED'
    GROUP BY e.task_id)
ORDER BY task_id;

-- name: AbortLatestMany :many
SELECT * FROM cks_task_aborts
WHERE abort_id IN (SELECT max(a.abort_id) FROM cks_task_aborts a
    WHERE a.task_id IN (SELECT value FROM json_each(CAST(@task_ids AS TEXT)))
    GROUP BY a.task_id)
ORDER BY task_id;

-- name: AbortPendingDue :many
SELECT * FROM cks_task_aborts
WHERE outcome = @outcome AND deadline_at <= @now
ORDER BY abort_id
LIMIT @limit;

-- The moves of a window counted per minute and transition, for task_stats.
-- History is written per attempt (issue 27), so the moves no event row
-- holds are read where they are kept: an ended attempt's claim and start
-- from the event that ended it, a running attempt's from its task row, the
-- creation of an OPEN task from the row. Each is skipped where an event of
-- its own (written before issue 27, or a start by someone else) holds it.
-- A time is the fixed-width text, so its first 16 characters are its
-- minute (idx_task_events_at for the events, the state index for the rows).
-- name: TaskEventMinutes :many
WITH moves(at, from_state, to_state) AS (
    SELECT e.at, e.from_state, e.to_state FROM cks_task_events e
    WHERE e.at >= @since AND e.at < @until
    UNION ALL
    SELECT e.claimed_at, 'OPEN', 'CLAIMED' FROM cks_task_events e
    WHERE e.at >= @since AND e.claimed_at >= @since AND e.claimed_at < @until
        AND e.to_state NOT IN ('CLAIMED', 'RUNNING')
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = e.task_id
            AND c.to_state = 'CLAIMED' AND c.from_state = 'OPEN' AND c.at = e.claimed_at)
    UNION ALL
    SELECT e.started_at, 'CLAIMED', 'RUNNING' FROM cks_task_events e
    WHERE e.at >= @since AND e.started_at >= @since AND e.started_at < @until
        AND e.to_state NOT IN ('CLAIMED', 'RUNNING')
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = e.task_id
            AND c.to_state = 'RUNNING' AND c.from_state = 'CLAIMED' AND c.at = e.started_at)
    UNION ALL
    SELECT t.claimed_at, 'OPEN', 'CLAIMED' FROM cks_outbox_tasks t
    WHERE t.state IN ('CLAIMED', 'RUNNING') AND t.claimed_at >= @since AND t.claimed_at < @until
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = t.task_id
            AND c.to_state = 'CLAIMED' AND c.from_state = 'OPEN' AND c.at = t.claimed_at)
    UNION ALL
    SELECT t.state_changed_at, 'CLAIMED', 'RUNNING' FROM cks_outbox_tasks t
    WHERE t.state = 'RUNNING' AND t.state_changed_at >= @since AND t.state_changed_at < @until
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = t.task_id
            AND c.to_state = 'RUNNING' AND c.from_state = 'CLAIMED' AND c.at = t.state_changed_at)
    UNION ALL
    SELECT t.created_at, '', 'OPEN' FROM cks_outbox_tasks t
    WHERE t.created_at >= @since AND t.created_at < @until
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = t.task_id AND c.from_state = '')
)
SELECT CAST(substr(at, 1, 16) || ':00.000000000Z' AS TEXT) AS minute, CAST(from_state AS TEXT) AS from_state,
    CAST(to_state AS TEXT) AS to_state, count(*) AS count
FROM moves
GROUP BY minute, from_state, to_state
ORDER BY minute, from_state, to_state;

-- The claims of a window, newest first, each with when its task last
-- became OPEN before it, or its creation: the claims of ended attempts
-- from the events that ended them, of running ones from their rows (as
-- TaskEventMinutes), and claim events of their own (before issue 27).
-- name: TaskClaimWaits :many
WITH claims(task_id, claimed_at, before_id) AS (
    SELECT e.task_id, e.at, e.event_id FROM cks_task_events e
    WHERE e.to_state = 'CLAIMED' AND e.from_state = 'OPEN' AND e.at >= @since AND e.at < @until
    UNION ALL
    SELECT e.task_id, e.claimed_at, e.event_id FROM cks_task_events e
    WHERE e.at >= @since AND e.claimed_at >= @since AND e.claimed_at < @until
        AND e.to_state NOT IN ('CLAIMED', 'RUNNING')
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = e.task_id
            AND c.to_state = 'CLAIMED' AND c.from_state = 'OPEN' AND c.at = e.claimed_at)
    UNION ALL
    SELECT t.task_id, t.claimed_at, 9223372036854775807 FROM cks_outbox_tasks t
    WHERE t.state IN ('CLAIMED', 'RUNNING') AND t.claimed_at >= @since AND t.claimed_at < @until
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = t.task_id
            AND c.to_state = 'CLAIMED' AND c.from_state = 'OPEN' AND c.at = t.claimed_at)
)
SELECT CAST(c.claimed_at AS TEXT) AS claimed_at,
    CAST(COALESCE((SELECT max(p.at) FROM cks_task_events p
        WHERE p.task_id = c.task_id AND p.event_id < c.before_id AND p.to_state = 'OPEN' AND p.at <= c.claimed_at),
        (SELECT t.created_at FROM cks_outbox_tasks t WHERE t.task_id = c.task_id), c.claimed_at) AS TEXT) AS opened_at
FROM claims c
ORDER BY c.claimed_at DESC, c.task_id DESC
LIMIT @limit;

-- The task types with OPEN tasks due now: per type how many, and since
-- when the longest-waiting one has been OPEN (for the signal of a type no
-- worker claims, ledger.UnclaimedTypes, and the claims that wait). A
-- paused type has no task due: no claim would take one.
-- name: TaskTypesDue :many
SELECT type, count(*) AS due, CAST(min(COALESCE(state_changed_at, created_at)) AS TEXT) AS due_since
FROM cks_outbox_tasks
WHERE state = 'OPEN' AND (run_after IS NULL OR run_after <= @now)
    AND NOT EXISTS (SELECT 1 FROM cks_paused_types p WHERE p.type = cks_outbox_tasks.type)
GROUP BY type
ORDER BY type;

-- When the next OPEN task not yet due becomes due: the earliest run_after
-- after now (no row when none waits), for the claims that wait for work
-- (ledger's waiting room), which no notification wakes at that moment.
-- From idx_outbox_tasks_due, named (without statistics the planner would
-- rather walk every OPEN task of a claim index and sort them).
-- name: TaskNextDue :one
SELECT run_after FROM cks_outbox_tasks INDEXED BY idx_outbox_tasks_due
WHERE state = 'OPEN' AND run_after IS NOT NULL AND run_after > @now
ORDER BY run_after
LIMIT 1;

-- The task types some worker holds a task of now (CLAIMED or RUNNING).
-- The concurrency keys held now: those of every CLAIMED or RUNNING task
-- that has keys (idx_outbox_tasks_keys_held, whose WHERE the query names).
-- name: TaskKeysHeld :many
SELECT concurrency_keys FROM cks_outbox_tasks
WHERE concurrency_keys <> '' AND state IN ('CLAIMED', 'RUNNING');

-- name: TaskTypesHeld :many
SELECT DISTINCT type FROM cks_outbox_tasks
WHERE state IN ('CLAIMED', 'RUNNING')
ORDER BY type;

-- Paused task types (issue 42): a row for each type paused fleet-wide; the
-- claims skip a type that has one.

-- name: TypePause :execrows
INSERT INTO cks_paused_types (type, paused_by, reason, paused_at)
VALUES (@type, @paused_by, @reason, @paused_at)
ON CONFLICT (type) DO NOTHING;

-- name: TypeResume :execrows
DELETE FROM cks_paused_types WHERE type = @task_type;

-- name: TypePausedGet :one
SELECT * FROM cks_paused_types WHERE type = @task_type;

-- name: TypePausedList :many
SELECT * FROM cks_paused_types ORDER BY type;

-- Live output (issue 43 item 3). A chunk takes the task's next seq and
-- starts where the attempt's output so far ends: the task's newest chunk
-- is of this attempt, or the attempt has none yet (attempts follow each
-- other; a note never is the newest row). The caller holds the task's row.
-- name: OutputAppend :one
INSERT INTO cks_task_output (task_id, seq, attempt, restart, stream, body, byte_offset, size, dropped, created_at)
VALUES (@task_id,
    COALESCE((SELECT MAX(o.seq) FROM cks_task_output o WHERE o.task_id = @task_id), 0) + 1,
    @attempt, @restart, @stream, @body,
    COALESCE((SELECT CASE WHEN l.attempt = @attempt AND l.restart = @restart THEN l.byte_offset + l.size ELSE 0 END
        FROM cks_task_output l WHERE l.task_id = @task_id ORDER BY l.seq DESC LIMIT 1), 0),
    @size, 0, @created_at)
RETURNING *;

-- The oldest chunks of an attempt that start before cut (and the note
-- among them), deleted to keep its tail within the bound; seq below
-- before, so the newest chunk stays whatever its size.
-- name: OutputTrim :many
DELETE FROM cks_task_output
WHERE task_id = @task_id AND attempt = @attempt AND restart = @restart AND byte_offset < @cut AND seq < @before
RETURNING seq, byte_offset, size, dropped;

-- A note of the bytes an attempt's trims dropped, at the seq of the newest
-- chunk deleted.
-- name: OutputNote :exec
INSERT INTO cks_task_output (task_id, seq, attempt, restart, stream, body, byte_offset, size, dropped, created_at)
VALUES (@task_id, @seq, @attempt, @restart, @stream, @body, @byte_offset, 0, @dropped, @created_at);

-- A task's chunks after a seq, in order (idx_task_output_seq).
-- name: OutputList :many
SELECT * FROM cks_task_output WHERE task_id = @task_id AND seq > @after
ORDER BY seq LIMIT CAST(@limit AS INTEGER);

-- The newest seq of each of the tasks that has output (the followers'
-- one read per wake).
-- name: OutputHeads :many
SELECT task_id, MAX(seq) AS seq FROM cks_task_output
WHERE task_id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
GROUP BY task_id;
