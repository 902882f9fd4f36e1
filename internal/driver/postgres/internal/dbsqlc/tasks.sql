-- The task ledger (ADR 0020): tasks, dependencies, events, evidence,
-- decisions and aborts. Every state a query filters by is a parameter the
-- ledger passes (no rule lives here; the claims also name the state their
-- partial indexes hold, see below). Bulk writes take one array per
-- column and address rows by primary key; a zero time or id in those
-- arrays stands for NULL (NULLIF), since an array element of a Go slice
-- cannot be nil.

-- name: TaskInsertMany :many
INSERT INTO cks_outbox_tasks (type, title, description, acceptance_criteria, payload, state,
    priority, attempts, max_attempts, restarts, revision, parent_id, dedupe_key, created_by,
    claimed_by, claimed_at, lease_token_hash, lease_expires_at, lease_renewed_at, lease_ms, run_after,
    result, last_error, question, answer, review_note, created_at, updated_at, state_changed_at,
    metadata, attempt_timeout_ms, expires_at, concurrency_keys, traceparent)
SELECT u.type, u.title, u.description, u.acceptance_criteria, u.payload::jsonb, u.state,
    u.priority, u.attempts, u.max_attempts, u.restarts, u.revision, NULLIF(u.parent_id, 0),
    u.dedupe_key, u.created_by, u.claimed_by, NULLIF(u.claimed_at, '0001-01-01 00:00:00Z'),
    u.lease_token_hash, NULLIF(u.lease_expires_at, '0001-01-01 00:00:00Z'),
    NULLIF(u.lease_renewed_at, '0001-01-01 00:00:00Z'), u.lease_ms,
    NULLIF(u.run_after, '0001-01-01 00:00:00Z'), u.result, u.last_error, u.question, u.answer,
    u.review_note, u.created_at, u.updated_at, NULLIF(u.state_changed_at, '0001-01-01 00:00:00Z'),
    u.metadata::jsonb, u.attempt_timeout_ms, NULLIF(u.expires_at, '0001-01-01 00:00:00Z'), u.concurrency_keys,
    u.traceparent
FROM (SELECT
    unnest(@types::text[]) AS type,
    unnest(@titles::text[]) AS title,
    unnest(@descriptions::text[]) AS description,
    unnest(@acceptance_criterias::text[]) AS acceptance_criteria,
    unnest(@payloads::text[]) AS payload,
    unnest(@states::text[]) AS state,
    unnest(@priorities::int[]) AS priority,
    unnest(@attemptss::int[]) AS attempts,
    unnest(@max_attemptss::int[]) AS max_attempts,
    unnest(@restartss::int[]) AS restarts,
    unnest(@revisions::int[]) AS revision,
    unnest(@parent_ids::bigint[]) AS parent_id,
    unnest(@dedupe_keys::text[]) AS dedupe_key,
    unnest(@created_bys::text[]) AS created_by,
    unnest(@claimed_bys::text[]) AS claimed_by,
    unnest(@claimed_ats::timestamptz[]) AS claimed_at,
    unnest(@lease_token_hashes::text[]) AS lease_token_hash,
    unnest(@lease_expires_ats::timestamptz[]) AS lease_expires_at,
    unnest(@lease_renewed_ats::timestamptz[]) AS lease_renewed_at,
    unnest(@lease_mss::bigint[]) AS lease_ms,
    unnest(@run_afters::timestamptz[]) AS run_after,
    unnest(@results::text[]) AS result,
    unnest(@last_errors::text[]) AS last_error,
    unnest(@questions::text[]) AS question,
    unnest(@answers::text[]) AS answer,
    unnest(@review_notes::text[]) AS review_note,
    unnest(@created_ats::timestamptz[]) AS created_at,
    unnest(@updated_ats::timestamptz[]) AS updated_at,
    unnest(@state_changed_ats::timestamptz[]) AS state_changed_at,
    unnest(@metadatas::text[]) AS metadata,
    unnest(@attempt_timeout_mss::bigint[]) AS attempt_timeout_ms,
    unnest(@expires_ats::timestamptz[]) AS expires_at,
    unnest(@concurrency_keyss::text[]) AS concurrency_keys,
    unnest(@traceparents::text[]) AS traceparent) AS u
RETURNING *;

-- New tasks, as the ledger's enqueue makes them: the columns a task is
-- created with (created, updated and state-changed at one time), every
-- other one its default; back come only what the database assigns or
-- rewrites (the id, the jsonb columns' stored form). A third of
-- TaskInsertMany's arrays, and no row sent back whole.
-- name: TaskInsertManyNew :many
INSERT INTO cks_outbox_tasks (type, title, description, acceptance_criteria, payload, state,
    priority, max_attempts, parent_id, dedupe_key, created_by, created_at, updated_at,
    state_changed_at, metadata, attempt_timeout_ms, concurrency_keys, traceparent)
SELECT u.type, u.title, u.description, u.acceptance_criteria, u.payload::jsonb, u.state,
    u.priority, u.max_attempts, NULLIF(u.parent_id, 0), u.dedupe_key, u.created_by,
    @created_at, @created_at, @created_at, u.metadata::jsonb, u.attempt_timeout_ms, u.concurrency_keys, u.traceparent
FROM ROWS FROM (unnest(@types::text[]), unnest(@titles::text[]), unnest(@descriptions::text[]),
    unnest(@acceptance_criterias::text[]), unnest(@payloads::text[]), unnest(@states::text[]),
    unnest(@priorities::int[]), unnest(@max_attemptss::int[]), unnest(@parent_ids::bigint[]),
    unnest(@dedupe_keys::text[]), unnest(@created_bys::text[]), unnest(@metadatas::text[]),
    unnest(@attempt_timeout_mss::bigint[]), unnest(@concurrency_keyss::text[]),
    unnest(@traceparents::text[]))
    AS u(type, title, description, acceptance_criteria, payload, state, priority, max_attempts,
        parent_id, dedupe_key, created_by, metadata, attempt_timeout_ms, concurrency_keys, traceparent)
RETURNING task_id, payload, metadata;

-- One row: plain parameters, cheaper for Postgres than one-element arrays.
-- name: TaskInsert :one
INSERT INTO cks_outbox_tasks (type, title, description, acceptance_criteria, payload, state,
    priority, attempts, max_attempts, restarts, revision, parent_id, dedupe_key, created_by,
    claimed_by, claimed_at, lease_token_hash, lease_expires_at, lease_renewed_at, lease_ms, run_after,
    result, last_error, question, answer, review_note, created_at, updated_at, state_changed_at,
    metadata, attempt_timeout_ms, expires_at, concurrency_keys, traceparent)
VALUES (@type, @title, @description, @acceptance_criteria, @payload::jsonb, @state,
    @priority, @attempts, @max_attempts, @restarts, @revision, sqlc.narg(parent_id), @dedupe_key, @created_by,
    @claimed_by, sqlc.narg(claimed_at), @lease_token_hash, sqlc.narg(lease_expires_at),
    sqlc.narg(lease_renewed_at), @lease_ms, sqlc.narg(run_after), @result, @last_error, @question,
    @answer, @review_note, @created_at, @updated_at, sqlc.narg(state_changed_at), @metadata::jsonb,
    @attempt_timeout_ms, sqlc.narg(expires_at), @concurrency_keys, @traceparent)
RETURNING *;

-- One id: a plain parameter. With an array Postgres plans every execution
-- anew: its generic plan of = ANY(array) is costed for more rows than a
-- custom plan for one, so the plan cache never settles on it, and a read
-- of one task (every single-task operation, an executor's lease check)
-- would pay the planner each time.

-- name: TaskGet :many
-- variants: ForUpdate ForUpdateSkip ForShare
SELECT * FROM cks_outbox_tasks WHERE task_id = @task_id /*lock*/;

-- The children of a task after a cursor, by id (idx_outbox_tasks_parent_of).
-- name: TaskChildren :many
SELECT task_id FROM cks_outbox_tasks
WHERE parent_id = @parent::bigint AND task_id > @after::bigint
ORDER BY task_id
LIMIT @limit;

-- name: TaskChildCount :one
SELECT count(*) FROM cks_outbox_tasks WHERE parent_id = @parent::bigint;

-- name: TaskGetMany :many
-- variants: ForUpdate ForUpdateSkip ForShare
SELECT * FROM cks_outbox_tasks WHERE task_id = ANY(@ids::bigint[]) ORDER BY task_id
/*lock*/;

-- Every column but task_id, type, created_at and created_by, by primary key.
-- name: TaskUpdateMany :execrows
UPDATE cks_outbox_tasks t SET
    title = u.title, description = u.description, acceptance_criteria = u.acceptance_criteria,
    payload = u.payload::jsonb, state = u.state, priority = u.priority, attempts = u.attempts,
    max_attempts = u.max_attempts, restarts = u.restarts, revision = u.revision,
    parent_id = NULLIF(u.parent_id, 0), dedupe_key = u.dedupe_key, claimed_by = u.claimed_by,
    claimed_at = NULLIF(u.claimed_at, '0001-01-01 00:00:00Z'), lease_token_hash = u.lease_token_hash,
    lease_expires_at = NULLIF(u.lease_expires_at, '0001-01-01 00:00:00Z'),
    lease_renewed_at = NULLIF(u.lease_renewed_at, '0001-01-01 00:00:00Z'),
    lease_ms = u.lease_ms, run_after = NULLIF(u.run_after, '0001-01-01 00:00:00Z'),
    result = u.result, last_error = u.last_error, question = u.question, answer = u.answer,
    review_note = u.review_note, updated_at = u.updated_at,
    state_changed_at = NULLIF(u.state_changed_at, '0001-01-01 00:00:00Z'),
    metadata = u.metadata::jsonb, attempt_timeout_ms = u.attempt_timeout_ms,
    expires_at = NULLIF(u.expires_at, '0001-01-01 00:00:00Z'), concurrency_keys = u.concurrency_keys,
    traceparent = u.traceparent
FROM (SELECT
    unnest(@task_ids::bigint[]) AS task_id,
    unnest(@titles::text[]) AS title,
    unnest(@descriptions::text[]) AS description,
    unnest(@acceptance_criterias::text[]) AS acceptance_criteria,
    unnest(@payloads::text[]) AS payload,
    unnest(@states::text[]) AS state,
    unnest(@priorities::int[]) AS priority,
    unnest(@attemptss::int[]) AS attempts,
    unnest(@max_attemptss::int[]) AS max_attempts,
    unnest(@restartss::int[]) AS restarts,
    unnest(@revisions::int[]) AS revision,
    unnest(@parent_ids::bigint[]) AS parent_id,
    unnest(@dedupe_keys::text[]) AS dedupe_key,
    unnest(@claimed_bys::text[]) AS claimed_by,
    unnest(@claimed_ats::timestamptz[]) AS claimed_at,
    unnest(@lease_token_hashes::text[]) AS lease_token_hash,
    unnest(@lease_expires_ats::timestamptz[]) AS lease_expires_at,
    unnest(@lease_renewed_ats::timestamptz[]) AS lease_renewed_at,
    unnest(@lease_mss::bigint[]) AS lease_ms,
    unnest(@run_afters::timestamptz[]) AS run_after,
    unnest(@results::text[]) AS result,
    unnest(@last_errors::text[]) AS last_error,
    unnest(@questions::text[]) AS question,
    unnest(@answers::text[]) AS answer,
    unnest(@review_notes::text[]) AS review_note,
    unnest(@updated_ats::timestamptz[]) AS updated_at,
    unnest(@state_changed_ats::timestamptz[]) AS state_changed_at,
    unnest(@metadatas::text[]) AS metadata,
    unnest(@attempt_timeout_mss::bigint[]) AS attempt_timeout_ms,
    unnest(@expires_ats::timestamptz[]) AS expires_at,
    unnest(@concurrency_keyss::text[]) AS concurrency_keys,
    unnest(@traceparents::text[]) AS traceparent) AS u
WHERE t.task_id = u.task_id;

-- One row, by primary key (as TaskInsert, plain parameters).
-- name: TaskUpdate :execrows
UPDATE cks_outbox_tasks SET
    title = @title, description = @description, acceptance_criteria = @acceptance_criteria,
    payload = @payload::jsonb, state = @state, priority = @priority, attempts = @attempts,
    max_attempts = @max_attempts, restarts = @restarts, revision = @revision,
    parent_id = sqlc.narg(parent_id), dedupe_key = @dedupe_key, claimed_by = @claimed_by,
    claimed_at = sqlc.narg(claimed_at), lease_token_hash = @lease_token_hash,
    lease_expires_at = sqlc.narg(lease_expires_at), lease_renewed_at = sqlc.narg(lease_renewed_at),
    lease_ms = @lease_ms, run_after = sqlc.narg(run_after), result = @result,
    last_error = @last_error, question = @question, answer = @answer, review_note = @review_note,
    updated_at = @updated_at, state_changed_at = sqlc.narg(state_changed_at),
    metadata = @metadata::jsonb, attempt_timeout_ms = @attempt_timeout_ms,
    expires_at = sqlc.narg(expires_at)
WHERE task_id = @task_id;

-- A state move, written narrowly: only the columns a move of the
-- lifecycle changes, by primary key (the jsonb and descriptive columns are
-- neither sent nor parsed again), and the moves' events in the same
-- statement (a data-modifying CTE: it runs whether or not the UPDATE
-- refers to it). The rows the UPDATE wrote are its count.
-- name: TaskMoveMany :execrows
WITH events AS (
    INSERT INTO cks_task_events (task_id, at, actor, from_state, to_state, attempt, reason,
        claimed_at, started_at, worker)
    SELECT e.task_id, e.at, e.actor, e.from_state, e.to_state, e.attempt, e.reason,
        NULLIF(e.claimed_at, '0001-01-01 00:00:00Z'), NULLIF(e.started_at, '0001-01-01 00:00:00Z'), e.worker
    FROM (SELECT
        unnest(@event_task_ids::bigint[]) AS task_id,
        unnest(@event_ats::timestamptz[]) AS at,
        unnest(@event_actors::text[]) AS actor,
        unnest(@event_from_states::text[]) AS from_state,
        unnest(@event_to_states::text[]) AS to_state,
        unnest(@event_attempts::int[]) AS attempt,
        unnest(@event_reasons::text[]) AS reason,
        unnest(@event_claimed_ats::timestamptz[]) AS claimed_at,
        unnest(@event_started_ats::timestamptz[]) AS started_at,
        unnest(@event_workers::text[]) AS worker) AS e
)
UPDATE cks_outbox_tasks t SET
    state = u.state, attempts = u.attempts, restarts = u.restarts, claimed_by = u.claimed_by,
    claimed_at = NULLIF(u.claimed_at, '0001-01-01 00:00:00Z'), lease_token_hash = u.lease_token_hash,
    lease_expires_at = NULLIF(u.lease_expires_at, '0001-01-01 00:00:00Z'),
    lease_renewed_at = NULLIF(u.lease_renewed_at, '0001-01-01 00:00:00Z'),
    lease_ms = u.lease_ms, run_after = NULLIF(u.run_after, '0001-01-01 00:00:00Z'),
    result = u.result, last_error = u.last_error, question = u.question, answer = u.answer,
    review_note = u.review_note, updated_at = u.updated_at,
    state_changed_at = NULLIF(u.state_changed_at, '0001-01-01 00:00:00Z')
FROM (SELECT
    unnest(@task_ids::bigint[]) AS task_id,
    unnest(@states::text[]) AS state,
    unnest(@attemptss::int[]) AS attempts,
    unnest(@restartss::int[]) AS restarts,
    unnest(@claimed_bys::text[]) AS claimed_by,
    unnest(@claimed_ats::timestamptz[]) AS claimed_at,
    unnest(@lease_token_hashes::text[]) AS lease_token_hash,
    unnest(@lease_expires_ats::timestamptz[]) AS lease_expires_at,
    unnest(@lease_renewed_ats::timestamptz[]) AS lease_renewed_at,
    unnest(@lease_mss::bigint[]) AS lease_ms,
    unnest(@run_afters::timestamptz[]) AS run_after,
    unnest(@results::text[]) AS result,
    unnest(@last_errors::text[]) AS last_error,
    unnest(@questions::text[]) AS question,
    unnest(@answers::text[]) AS answer,
    unnest(@review_notes::text[]) AS review_note,
    unnest(@updated_ats::timestamptz[]) AS updated_at,
    unnest(@state_changed_ats::timestamptz[]) AS state_changed_at) AS u
WHERE t.task_id = u.task_id;

-- One move with its one event (as TaskInsert, plain parameters).
-- name: TaskMove :execrows
WITH events AS (
    INSERT INTO cks_task_events (task_id, at, actor, from_state, to_state, attempt, reason,
        claimed_at, started_at, worker)
    VALUES (@event_task_id, @event_at, @event_actor, @event_from_state, @event_to_state, @event_attempt,
        @event_reason, sqlc.narg(event_claimed_at), sqlc.narg(event_started_at), @event_worker)
)
UPDATE cks_outbox_tasks t SET
    state = @state, attempts = @attempts, restarts = @restarts, claimed_by = @claimed_by,
    claimed_at = sqlc.narg(claimed_at), lease_token_hash = @lease_token_hash,
    lease_expires_at = sqlc.narg(lease_expires_at), lease_renewed_at = sqlc.narg(lease_renewed_at),
    lease_ms = @lease_ms, run_after = sqlc.narg(run_after), result = @result, last_error = @last_error,
    question = @question, answer = @answer, review_note = @review_note, updated_at = @updated_at,
    state_changed_at = sqlc.narg(state_changed_at)
WHERE t.task_id = @task_id::bigint;

-- The claim queries come in three forms so that each has the plan it
-- needs: any type (idx_outbox_tasks_claim_open), one type as an equality
-- (idx_outbox_tasks_claim_type comes out in claim order; with = ANY the
-- planner sorts every candidate of the type), several types.
--
-- Both claim indexes are partial, WHERE state = 'OPEN' (driver/schema
-- renders it from ledger.Open), and the claims also name that literal
-- beside the ledger's @state: a plan made for any @state (the plan cache's
-- generic plan) can use a partial index only when the query implies its
-- WHERE. Without it every claim statement was planned anew, its plan
-- costing a third of the statement (TestClaimIsPlannedOnce). A ledger that
-- passed another state would claim nothing.
--
-- A type with a row in cks_paused_types (pause_type) is skipped. The claim
-- of one type asks once, about its parameter (a filter on the whole
-- statement, which leaves the plan of the claim index alone); the others
-- anti-join each candidate row with the paused types (a primary-key probe
-- per row). Comparing the rows with an array of the paused types instead
-- (type <> ALL(ARRAY(SELECT …))), or the one type's claim with a join,
-- made the planner sort every OPEN task of a type rather than walk the
-- claim index (TestQueriesUseIndexes).

-- TaskClaimable is the keyed claim's read (ledger's claimKeyed): the
-- claimable tasks, with or without keys, but for those holding a key of
-- @saturated (the keys at their limit), in claim order, locked. The keys
-- are looked at only for a task that has some.
-- name: TaskClaimable :many
-- variants: OfType OfTypes
SELECT * FROM cks_outbox_tasks
WHERE state = @state AND state = 'OPEN' AND state <> ALL(@excluded::text[])
    /*if OfType*/AND type = @type/*elif OfTypes*/AND type = ANY(@types::text[])/*end*/
    AND (run_after IS NULL OR run_after <= @now)
    AND NOT (concurrency_keys <> '' AND jsonb_exists_any(concurrency_keys::jsonb, @saturated::text[]))
    /*if OfType*/AND NOT EXISTS (SELECT 1 FROM cks_paused_types p WHERE p.type = @type)
    /*else*/AND NOT EXISTS (SELECT 1 FROM cks_paused_types p WHERE p.type = cks_outbox_tasks.type)/*end*/
ORDER BY priority DESC, created_at, task_id
LIMIT @limit
FOR UPDATE SKIP LOCKED;

-- A claim in one statement: the claimable rows are locked as
-- TaskClaimable locks them (the same three forms, for the same plans),
-- gathered in claim order into one array and zipped with the lease arrays
-- (ROWS FROM: the n-th row gets the n-th lease: token hash, claimer,
-- expiry, length; one claim may carry the claims of several callers;
-- leases past the rows pair with a NULL id, which updates nothing), and
-- written with the values the ledger passes (@then_to:
-- RUNNING at once, for an executor that starts the task straight away);
-- the rows come back as written, with their dependencies. No event: the
-- attempt is recorded whole by the event that ends it (issue 27). The zip
-- costs the same per row at any size; a subscript of the lease arrays per
-- row (its n-th lease) walked the text arrays from their start, 20 ms of
-- a 2,500-row claim (BenchmarkClaimRows, docs/benchmarks.md).

--
-- A task with concurrency keys is claimed here only while there is no
-- limit (cks_limits is empty): a claimer that has not yet learned of a new
-- limit then skips keyed tasks instead of overrunning it; the ledger
-- claims them with its keyed claim (TaskClaimable, then the ByIDs form,
-- which claims the tasks it chose, locked by that read in the same
-- transaction, in the order given).

-- name: TaskClaim :many
-- variants: OfType OfTypes ByIDs
WITH locked AS (
    SELECT o.task_id, o.priority, o.created_at FROM cks_outbox_tasks o
    WHERE o.state = @state AND o.state = 'OPEN'
        /*if ByIDs*/AND o.task_id = ANY(@ids::bigint[])
        /*else*/AND o.state <> ALL(@excluded::text[])
        AND (o.run_after IS NULL OR o.run_after <= @now)
        AND (o.concurrency_keys = '' OR NOT EXISTS (SELECT 1 FROM cks_limits))/*end*/
        /*if OfType*/AND o.type = @type/*elif OfTypes*/AND o.type = ANY(@types::text[])/*end*/
        /*if OfType*/AND NOT EXISTS (SELECT 1 FROM cks_paused_types p WHERE p.type = @type)
        /*elif ByIDs*//*else*/AND NOT EXISTS (SELECT 1 FROM cks_paused_types p WHERE p.type = o.type)/*end*/
    ORDER BY o.priority DESC, o.created_at, o.task_id
    LIMIT @limit
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT u.task_id, u.hash, u.agent_hash, u.claimed_by, u.expires_at, u.ms
    FROM (SELECT array_agg(task_id ORDER BY priority DESC, created_at, task_id) AS ids FROM locked) l
    CROSS JOIN LATERAL ROWS FROM (unnest(l.ids), unnest(@lease_token_hashes::text[]),
        unnest(@agent_token_hashes::text[]), unnest(@claimed_bys::text[]),
        unnest(@lease_expires_ats::timestamptz[]), unnest(@lease_mss::bigint[]))
        AS u(task_id, hash, agent_hash, claimed_by, expires_at, ms)
), claimed AS (
    UPDATE cks_outbox_tasks t SET state = COALESCE(NULLIF(@then_to::text, ''), @to_state::text), attempts = t.attempts + @attempts_added::int,
        claimed_by = p.claimed_by, claimed_at = @now::timestamptz, lease_token_hash = p.hash,
        agent_token_hash = p.agent_hash,
        lease_expires_at = p.expires_at, lease_renewed_at = @now::timestamptz,
        lease_ms = p.ms, run_after = sqlc.narg(run_after)::timestamptz,
        updated_at = @now::timestamptz, state_changed_at = @now::timestamptz
    FROM picked p
    WHERE t.task_id = p.task_id
    RETURNING t.*
)
SELECT c.*, ARRAY(SELECT d.depends_on FROM cks_task_deps d WHERE d.task_id = c.task_id
        ORDER BY d.depends_on)::bigint[] AS depends_on
FROM claimed c
ORDER BY c.priority DESC, c.created_at, c.task_id;

-- name: TaskLeaseExpired :many
SELECT * FROM cks_outbox_tasks
WHERE state = ANY(@states::text[]) AND state <> ALL(@excluded::text[])
    AND lease_expires_at <= @expired_at
    AND (lease_renewed_at IS NULL OR lease_renewed_at <= @renewed_before)
ORDER BY task_id
LIMIT @limit
FOR UPDATE SKIP LOCKED;

-- The running attempts that have a timeout, claimed by a time, by id
-- (idx_outbox_tasks_timed: only leased tasks with a timeout), unlocked:
-- the lease reaper computes each deadline (claimed_at + the timeout) and
-- locks only the overdue ones.
-- name: TaskAttemptsTimed :many
SELECT * FROM cks_outbox_tasks
WHERE attempt_timeout_ms > 0 AND lease_expires_at IS NOT NULL
    AND state = ANY(@states::text[]) AND claimed_at <= @claimed_before
    AND task_id > @after
ORDER BY task_id
LIMIT @limit;

-- The tasks that expire and have not ended, by expiry, unlocked
-- (idx_outbox_tasks_expiring, whose WHERE the query names as written):
-- the lease reaper cancels those whose time came and learns when the next
-- one's comes.
-- name: TaskExpiring :many
SELECT * FROM cks_outbox_tasks
WHERE expires_at IS NOT NULL AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')
ORDER BY expires_at, task_id
LIMIT @limit;

-- The filters of the task listings and counts: an empty @states or @types
-- selects every state or type; a null @state_changed_before no time, an
-- empty @created_by every creator, an empty @match every text (else a
-- substring of the title, description or criteria, case-folded as
-- cks.SearchKey folds it); @unconfirmed_abort keeps the tasks whose latest
-- abort is not confirmed.
-- fragment: task_filters
    AND (cardinality(@states::text[]) = 0 OR state = ANY(@states::text[]))
    AND (cardinality(@types::text[]) = 0 OR type = ANY(@types::text[]))
    AND (sqlc.narg(state_changed_before)::timestamptz IS NULL
        OR state_changed_at <= sqlc.narg(state_changed_before)::timestamptz)
    AND (@created_by::text = '' OR created_by = @created_by::text)
    AND (@match::text = '' OR strpos(translate(lower(title COLLATE "und-x-icu"), chr(962), chr(963)), @match::text) > 0
        OR strpos(translate(lower(description COLLATE "und-x-icu"), chr(962), chr(963)), @match::text) > 0
        OR strpos(translate(lower(acceptance_criteria COLLATE "und-x-icu"), chr(962), chr(963)), @match::text) > 0)
    AND (NOT @unconfirmed_abort::boolean OR EXISTS (SELECT 1 FROM cks_task_aborts a
        WHERE a.task_id = cks_outbox_tasks.task_id AND a.outcome <> 'abort_confirmed'
            AND a.abort_id = (SELECT max(b.abort_id) FROM cks_task_aborts b WHERE b.task_id = a.task_id)));

-- TaskList pages by task_id
-- (TaskListForUpdate: the selection of a bulk operation, the page locked);
-- its sorted forms by their key, then task_id, each after the cursor row
-- (@after 0: from the start). The sorts by updated_at read
-- idx_outbox_tasks_updated from the cursor on, in its order, and stop at the
-- page's end (issue 38.9: they sorted the table): the cursor is one row value
-- the index ranges over (the first page's is before, or after, every row).
-- TaskListPriority: highest priority first, then oldest, the order of a claim.
-- name: TaskList :many
-- variants: ForUpdate IDDesc Updated UpdatedDesc Priority
SELECT * FROM cks_outbox_tasks
WHERE /*if IDDesc*/(@after::bigint = 0 OR cks_outbox_tasks.task_id < @after::bigint)
    /*elif Updated*/(updated_at, cks_outbox_tasks.task_id) > (CASE WHEN @after::bigint = 0 THEN '-infinity'::timestamptz
        ELSE sqlc.narg(after_updated)::timestamptz END, @after::bigint)
    /*elif UpdatedDesc*/(updated_at, cks_outbox_tasks.task_id) < (CASE WHEN @after::bigint = 0 THEN 'infinity'::timestamptz
        ELSE sqlc.narg(after_updated)::timestamptz END,
        CASE WHEN @after::bigint = 0 THEN 9223372036854775807 ELSE @after::bigint END)
    /*elif Priority*/(@after::bigint = 0 OR priority < @after_priority::integer
        OR (priority = @after_priority::integer AND cks_outbox_tasks.task_id > @after::bigint))
    /*else*/cks_outbox_tasks.task_id > @after/*end*/
/*include task_filters*/
ORDER BY /*if IDDesc*/task_id DESC/*elif Updated*/updated_at, task_id/*elif UpdatedDesc*/updated_at DESC, task_id DESC
    /*elif Priority*/priority DESC, task_id/*else*/task_id/*end*/
LIMIT @limit
/*lock*/;

-- name: TaskCount :one
SELECT count(*) FROM cks_outbox_tasks
WHERE true
/*include task_filters*/;

-- name: TaskCountByState :many
SELECT state, count(*) AS count FROM cks_outbox_tasks
WHERE true
/*include task_filters*/
GROUP BY state
ORDER BY state;

-- Every task's count by state, unfiltered (the board's chips, the charts),
-- from the indexes, never a scan of the table: the settled states (most
-- of the table COMPLETED) by an index-only scan of idx_outbox_tasks_settled,
-- OPEN of idx_outbox_tasks_claim_open, CLAIMED and RUNNING (the tasks
-- leased now, few) through idx_outbox_tasks_leased. The three WHEREs are
-- those indexes' own, so a generic plan uses them too.
-- name: TaskCountByStateAll :many
SELECT state, count(*) AS count FROM cks_outbox_tasks WHERE state NOT IN ('OPEN', 'CLAIMED', 'RUNNING') GROUP BY state
UNION ALL
SELECT state, count(*) AS count FROM cks_outbox_tasks WHERE state = 'OPEN' GROUP BY state
UNION ALL
SELECT state, count(*) AS count FROM cks_outbox_tasks WHERE state IN ('CLAIMED', 'RUNNING') GROUP BY state;

-- The condition on an empty key lets the planner use the partial index of
-- keyed tasks.
-- name: TaskDedupeFindLive :one
SELECT task_id FROM cks_outbox_tasks
WHERE dedupe_key = @key AND dedupe_key <> '' AND state <> ALL(@terminal::text[])
ORDER BY task_id DESC
LIMIT 1;

-- A live task first (false sorts before true), else the newest.
-- name: TaskDedupeFindAny :one
SELECT task_id FROM cks_outbox_tasks
WHERE dedupe_key = @key AND dedupe_key <> ''
ORDER BY state = ANY(@terminal::text[]), task_id DESC
LIMIT 1;

-- Per key of @keys that a task has: the newest live task, else the newest
-- finished one (what TaskDedupeFindAny finds), and whether it is finished.
-- name: TaskDedupeFindMany :many
SELECT DISTINCT ON (dedupe_key) dedupe_key, task_id, (state = ANY(@terminal::text[]))::boolean AS terminal
FROM cks_outbox_tasks
WHERE dedupe_key = ANY(@keys::text[]) AND dedupe_key <> ''
ORDER BY dedupe_key, state = ANY(@terminal::text[]), task_id DESC;

-- name: TaskDepInsertMany :exec
INSERT INTO cks_task_deps (task_id, depends_on)
SELECT unnest(@task_ids::bigint[]), unnest(@depends_on::bigint[]);

-- name: TaskDepDeleteMany :exec
DELETE FROM cks_task_deps d
USING (SELECT
    unnest(@task_ids::bigint[]) AS task_id,
    unnest(@depends_on::bigint[]) AS depends_on) AS u
WHERE d.task_id = u.task_id AND d.depends_on = u.depends_on;

-- name: TaskDepList :many
SELECT task_id, depends_on FROM cks_task_deps
WHERE task_id = ANY(@ids::bigint[])
ORDER BY task_id, depends_on;

-- Both ends: idx_task_deps' primary key serves task_id, the dependency
-- index depends_on (a BitmapOr of the two).
-- name: TaskDepListAdjacent :many
SELECT task_id, depends_on FROM cks_task_deps
WHERE task_id = ANY(@ids::bigint[]) OR depends_on = ANY(@ids::bigint[])
ORDER BY task_id, depends_on;

-- The dependants are read by primary key from the ids the dependency index
-- gives (an ARRAY initplan), and the state is compared as an expression no
-- index serves: with a plain state term the planner, before the table has
-- statistics, walks every task in @state (every WAITING task at each
-- completion) instead.

-- name: TaskDependants :many
-- variants: ForUpdate ForUpdateSkip ForShare
SELECT * FROM cks_outbox_tasks
WHERE task_id = ANY(ARRAY(SELECT d.task_id FROM cks_task_deps d WHERE d.depends_on = ANY(@depends_on::bigint[])))
    AND (state || '') = @state::text
ORDER BY task_id
/*lock*/;

-- One lock per schema, held until the transaction ends.
-- name: TaskLockDependencyGraph :exec
SELECT pg_advisory_xact_lock(hashtextextended('cks.deps:' || current_schema(), 0));

-- name: TaskEventInsertMany :exec
INSERT INTO cks_task_events (task_id, at, actor, from_state, to_state, attempt, reason, changes,
    claimed_at, started_at, worker)
SELECT u.task_id, u.at, u.actor, u.from_state, u.to_state, u.attempt, u.reason, u.changes,
    NULLIF(u.claimed_at, '0001-01-01 00:00:00Z'), NULLIF(u.started_at, '0001-01-01 00:00:00Z'), u.worker
FROM (SELECT
    unnest(@task_ids::bigint[]) AS task_id,
    unnest(@ats::timestamptz[]) AS at,
    unnest(@actors::text[]) AS actor,
    unnest(@from_states::text[]) AS from_state,
    unnest(@to_states::text[]) AS to_state,
    unnest(@attempts::int[]) AS attempt,
    unnest(@reasons::text[]) AS reason,
    unnest(@changess::text[]) AS changes,
    unnest(@claimed_ats::timestamptz[]) AS claimed_at,
    unnest(@started_ats::timestamptz[]) AS started_at,
    unnest(@workers::text[]) AS worker) AS u;

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
    @reason, @requested_at, @deadline_at, @outcome, sqlc.narg(resolved_at))
RETURNING *;

-- name: AbortGet :one
-- variants: ForUpdate
SELECT * FROM cks_task_aborts WHERE abort_id = @abort_id /*lock*/;

-- name: AbortGetMany :many
-- variants: ForUpdate
SELECT * FROM cks_task_aborts WHERE abort_id = ANY(@ids::bigint[]) ORDER BY abort_id /*lock*/;

-- name: AbortFindLatest :one
-- variants: ForUpdate
SELECT * FROM cks_task_aborts
WHERE task_id = @task_id AND lease_token_hash = @lease_token_hash AND lease_token_hash <> ''
ORDER BY abort_id DESC
LIMIT 1
/*lock*/;

-- name: AbortUpdateMany :execrows
UPDATE cks_task_aborts a SET outcome = u.outcome,
    resolved_at = NULLIF(u.resolved_at, '0001-01-01 00:00:00Z')
FROM (SELECT
    unnest(@abort_ids::bigint[]) AS abort_id,
    unnest(@outcomes::text[]) AS outcome,
    unnest(@resolved_ats::timestamptz[]) AS resolved_at) AS u
WHERE a.abort_id = u.abort_id;

-- name: AbortList :many
SELECT * FROM cks_task_aborts WHERE task_id = @task_id ORDER BY abort_id;

-- name: TaskEventStoppedMany :many
SELECT DISTINCT ON (task_id) * FROM cks_task_events
WHERE task_id = ANY(@task_ids::bigint[]) AND to_state = 'STOPPED'
ORDER BY task_id, event_id DESC;

-- name: AbortLatestMany :many
SELECT DISTINCT ON (task_id) * FROM cks_task_aborts
WHERE task_id = ANY(@task_ids::bigint[])
ORDER BY task_id, abort_id DESC;

-- name: AbortPendingDue :many
SELECT * FROM cks_task_aborts
WHERE outcome = @outcome AND deadline_at <= @now
ORDER BY abort_id
LIMIT @limit
FOR UPDATE SKIP LOCKED;

-- The moves of a window counted per minute and transition, for task_stats.
-- History is written per attempt (issue 27), so the moves no event row
-- holds are read where they are kept: an ended attempt's claim and start
-- from the event that ended it, a running attempt's from its task row, the
-- creation of an OPEN task from the row. Each is skipped where an event of
-- its own (written before issue 27, or a start by someone else) holds it
-- (idx_task_events_at_brin for the events, the state index for the rows).
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
SELECT date_trunc('minute', at)::timestamptz AS minute, from_state::text AS from_state, to_state::text AS to_state,
    count(*) AS count
FROM moves
GROUP BY 1, 2, 3
ORDER BY minute, from_state COLLATE "C", to_state COLLATE "C";

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
    SELECT t.task_id, t.claimed_at, 9223372036854775807::bigint FROM cks_outbox_tasks t
    WHERE t.state IN ('CLAIMED', 'RUNNING') AND t.claimed_at >= @since AND t.claimed_at < @until
        AND NOT EXISTS (SELECT 1 FROM cks_task_events c WHERE c.task_id = t.task_id
            AND c.to_state = 'CLAIMED' AND c.from_state = 'OPEN' AND c.at = t.claimed_at)
)
SELECT c.claimed_at::timestamptz AS claimed_at,
    COALESCE((SELECT max(p.at) FROM cks_task_events p
        WHERE p.task_id = c.task_id AND p.event_id < c.before_id AND p.to_state = 'OPEN' AND p.at <= c.claimed_at),
        (SELECT t.created_at FROM cks_outbox_tasks t WHERE t.task_id = c.task_id), c.claimed_at)::timestamptz AS opened_at
FROM claims c
ORDER BY c.claimed_at DESC, c.task_id DESC
LIMIT @limit;

-- The task types with OPEN tasks due now: per type how many, and since
-- when the longest-waiting one has been OPEN (for the signal of a type no
-- worker claims, ledger.UnclaimedTypes, and the claims that wait). A
-- paused type has no task due: no claim would take one.
-- name: TaskTypesDue :many
SELECT type, count(*) AS due, min(COALESCE(state_changed_at, created_at))::timestamptz AS due_since
FROM cks_outbox_tasks
WHERE state = 'OPEN' AND (run_after IS NULL OR run_after <= @now)
    AND type <> ALL(ARRAY(SELECT p.type FROM cks_paused_types p))
GROUP BY type
ORDER BY type;

-- When the next OPEN task not yet due becomes due: the earliest run_after
-- after now (no row when none waits), for the claims that wait for work
-- (ledger's waiting room), which no notification wakes at that moment.
-- From idx_outbox_tasks_due (the query names its WHERE).
-- name: TaskNextDue :one
SELECT run_after FROM cks_outbox_tasks
WHERE state = 'OPEN' AND run_after IS NOT NULL AND run_after > @now
ORDER BY run_after
LIMIT 1;

-- The task types some worker holds a task of now (CLAIMED or RUNNING),
-- from idx_outbox_tasks_leased's rows.
-- name: TaskTypesHeld :many
SELECT DISTINCT type FROM cks_outbox_tasks
WHERE state IN ('CLAIMED', 'RUNNING')
ORDER BY type;

-- The concurrency keys held now: those of every CLAIMED or RUNNING task
-- that has keys (idx_outbox_tasks_keys_held, whose WHERE the query names).
-- name: TaskKeysHeld :many
SELECT concurrency_keys FROM cks_outbox_tasks
WHERE concurrency_keys <> '' AND state IN ('CLAIMED', 'RUNNING');

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
SELECT * FROM cks_paused_types ORDER BY type COLLATE "C";

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
ORDER BY seq LIMIT @limit;

-- The newest seq of each of the tasks that has output (the followers'
-- one read per wake).
-- name: OutputHeads :many
SELECT task_id, MAX(seq)::bigint AS seq FROM cks_task_output
WHERE task_id = ANY(@ids::bigint[])
GROUP BY task_id;
