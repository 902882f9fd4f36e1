-- Before issue 12 a claim's credential was not bound to its lease: it was
-- named "task/ID WORKER" and the lease reaper deleted it once WORKER no
-- longer held task ID. Bind each to the lease WORKER holds on task ID now,
-- or, when it holds none, to none ('': it no longer authenticates, and the
-- reaper deletes it), as the reaper would have. (An operator's credential
-- for a task, "task/ID" without a worker, is not one.) It runs after the
-- plain lease tokens were hashed (upgrade/retire).
UPDATE cks_principals
SET task_id = CAST(substr(name, 6, instr(substr(name, 6), ' ') - 1) AS INTEGER),
    lease_token_hash = COALESCE((
        SELECT t.lease_token_hash FROM cks_outbox_tasks t
        WHERE t.task_id = CAST(substr(cks_principals.name, 6, instr(substr(cks_principals.name, 6), ' ') - 1) AS INTEGER)
            AND t.claimed_by = substr(cks_principals.name, 6 + instr(substr(cks_principals.name, 6), ' '))
            AND t.lease_token_hash <> ''), '')
WHERE name LIKE 'task/%'
    AND instr(substr(name, 6), ' ') BETWEEN 2 AND 20
    AND substr(name, 6, instr(substr(name, 6), ' ') - 1) GLOB '[1-9]*'
    AND substr(name, 6, instr(substr(name, 6), ' ') - 1) NOT GLOB '*[^0-9]*'
    AND substr(name, 6 + instr(substr(name, 6), ' ')) <> ''
