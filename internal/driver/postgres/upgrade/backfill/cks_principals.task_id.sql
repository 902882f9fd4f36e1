-- Before issue 12 a claim's credential was not bound to its lease: it was
-- named "task/ID WORKER" and the lease reaper deleted it once WORKER no
-- longer held task ID. Bind each to the lease WORKER holds on task ID now,
-- or, when it holds none, to none ('': it no longer authenticates, and the
-- reaper deletes it), as the reaper would have. (An operator's credential
-- for a task, "task/ID" without a worker, is not one.) It runs after the
-- plain lease tokens were hashed (upgrade/retire).
UPDATE cks_principals p
SET task_id = split_part(substr(p.name, 6), ' ', 1)::bigint,
    lease_token_hash = COALESCE((
        SELECT t.lease_token_hash FROM cks_outbox_tasks t
        WHERE t.task_id = split_part(substr(p.name, 6), ' ', 1)::bigint
            AND t.claimed_by = substr(p.name, 7 + length(split_part(substr(p.name, 6), ' ', 1)))
            AND t.lease_token_hash <> ''), '')
WHERE p.name ~ '^task/[1-9][0-9]{0,17} .'
