-- The rows the first SQLite backend (store/sqlite, last in commit 4442c20)
-- wrote into a database of first_backend_schema.sql, through the store API
-- with a clock fixed at drivertest.T0: processes (one asked to stop),
-- principals with grants, a sweeper override, task a (claimed by w1, run,
-- given evidence and a decision, stopped with a pending abort) and task b
-- waiting for it, a question with two versions, a claim supporting it by an
-- edge, and the change counters — every row, dumped with quote(), in rowid
-- order per table. drivertest.CheckLegacy checks what a driver reads of it.
INSERT INTO cks_agent_liveness (instance_id, process_kind, hostname, pid, liveness_interval_s, started_at, last_heartbeat_at, current_task_id, current_task_type, desired_state) VALUES ('i-1', 'agent', 'h', 10, 15.0, '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:01.000000000Z', 9, 'critique', 'stop_requested');
INSERT INTO cks_agent_liveness (instance_id, process_kind, hostname, pid, liveness_interval_s, started_at, last_heartbeat_at, current_task_id, current_task_type, desired_state) VALUES ('i-2', 'hub', 'h', 11, 2.5, '2026-11-30T12:01:00.000000000Z', '2026-11-30T12:01:00.000000000Z', NULL, NULL, NULL);
INSERT INTO cks_principals (principal_id, name, token_hash, created_at, task_id, lease_token_hash) VALUES ('admin', 'admin', 'hash-admin', '2026-11-30T12:00:00.000000000Z', NULL, NULL);
INSERT INTO cks_principals (principal_id, name, token_hash, created_at, task_id, lease_token_hash) VALUES ('reader', 'ci', 'hash-reader', '2026-11-30T12:00:01.000000000Z', NULL, NULL);
INSERT INTO cks_grants (principal_id, resource, permission) VALUES ('admin', '/', 'admin');
INSERT INTO cks_grants (principal_id, resource, permission) VALUES ('reader', '/tasks', 'read');
INSERT INTO cks_grants (principal_id, resource, permission) VALUES ('reader', '/objects', 'read');
INSERT INTO cks_outbox_tasks (task_id, type, title, description, acceptance_criteria, payload, state, priority, attempts, max_attempts, restarts, revision, parent_id, dedupe_key, created_by, claimed_by, claimed_at, lease_token_hash, lease_expires_at, lease_renewed_at, lease_ms, run_after, result, last_error, question, answer, review_note, metadata, created_at, updated_at, state_changed_at) VALUES (1, 'critique', 'a', '', '', '{"object_id": 7}', 'STOPPED', 0, 0, 3, 0, 1, NULL, 'k-a', 'cli', '', '2026-11-30T12:00:00.000000000Z', '', NULL, NULL, 60000, NULL, '', '', '', '', '', '{"owner": "x"}', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z');
INSERT INTO cks_outbox_tasks (task_id, type, title, description, acceptance_criteria, payload, state, priority, attempts, max_attempts, restarts, revision, parent_id, dedupe_key, created_by, claimed_by, claimed_at, lease_token_hash, lease_expires_at, lease_renewed_at, lease_ms, run_after, result, last_error, question, answer, review_note, metadata, created_at, updated_at, state_changed_at) VALUES (2, 'critique', 'b', '', '', '{}', 'WAITING', 0, 0, 3, 0, 1, NULL, '', '', '', NULL, '', NULL, NULL, 0, NULL, '', '', '', '', '', '{}', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z');
INSERT INTO cks_task_deps (task_id, depends_on) VALUES (2, 1);
INSERT INTO cks_task_events (event_id, task_id, at, actor, from_state, to_state, attempt, reason) VALUES (1, 1, '2026-11-30T12:00:00.000000000Z', 'cli', '', 'OPEN', 0, 'enqueued');
INSERT INTO cks_task_events (event_id, task_id, at, actor, from_state, to_state, attempt, reason) VALUES (2, 2, '2026-11-30T12:00:00.000000000Z', '', '', 'WAITING', 0, 'waiting for dependency 1');
INSERT INTO cks_task_events (event_id, task_id, at, actor, from_state, to_state, attempt, reason) VALUES (3, 1, '2026-11-30T12:00:00.000000000Z', 'w1', 'OPEN', 'CLAIMED', 1, 'claimed');
INSERT INTO cks_task_events (event_id, task_id, at, actor, from_state, to_state, attempt, reason) VALUES (4, 1, '2026-11-30T12:00:00.000000000Z', 'w1', 'CLAIMED', 'RUNNING', 1, 'running');
INSERT INTO cks_task_events (event_id, task_id, at, actor, from_state, to_state, attempt, reason) VALUES (5, 1, '2026-11-30T12:00:00.000000000Z', 'admin', 'RUNNING', 'STOPPED', 1, 'stopped: enough');
INSERT INTO cks_task_evidence (evidence_id, task_id, attempt, revision, kind, body, actor, created_at, restart) VALUES (1, 1, 1, 1, 'log', 'did it', 'w1', '2026-11-30T12:00:00.000000000Z', 0);
INSERT INTO cks_task_decisions (decision_id, task_id, attempt, restart, revision, derived_from_revision, kind, text, actor, created_at) VALUES (1, 1, 1, 0, 1, 1, 'approach', 'this way', 'w1', '2026-11-30T12:00:00.000000000Z');
INSERT INTO cks_task_aborts (abort_id, task_id, lease_token_hash, executor, attempt, restart, requested_by, reason, requested_at, deadline_at, outcome, resolved_at) VALUES (1, 1, 'cacf6937780854c50c2ffe92865bfa291949eca61d111ad2efed71396af47077', 'w1', 1, 0, 'admin', 'enough', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:01:00.000000000Z', 'abort_pending', NULL);
INSERT INTO cks_sweeper_control (agent_id, desired_running, updated_at) VALUES ('lease_reaper', 0, '2026-11-30T12:00:00.000000000Z');
INSERT INTO cks_object_versions (version_id, object_id, parents, content, content_hash, author, created_at, is_head) VALUES (1, 1, '[]', '{"q":"why?"}', '4ea84a788ce2b663109707295fc18eb6778eac1858414c51bd1d81290a261b00', 'cli', '2026-11-30T12:00:00.000000000Z', 0);
INSERT INTO cks_object_versions (version_id, object_id, parents, content, content_hash, author, created_at, is_head) VALUES (2, 2, '[]', '{}', '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', 'researcher', '2026-11-30T12:00:00.000000000Z', 1);
INSERT INTO cks_object_versions (version_id, object_id, parents, content, content_hash, author, created_at, is_head) VALUES (3, 1, '[1]', '{"q":"how?"}', '689592a795620f8a684d141ab86f275f780a29c359cb5c49ab6bf982dffac515', 'editor', '2026-11-30T12:00:00.000000000Z', 1);
INSERT INTO cks_objects (object_id, kind, title, content, content_hash, current_status, claimed_by, claim_token, claimed_at, round, created_by, created_at, updated_at, head_version, heads) VALUES (1, 'question', 'why?', '{"q":"how?"}', '689592a795620f8a684d141ab86f275f780a29c359cb5c49ab6bf982dffac515', 'awaiting_research', '', '', NULL, 0, 'cli', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z', 3, 1);
INSERT INTO cks_objects (object_id, kind, title, content, content_hash, current_status, claimed_by, claim_token, claimed_at, round, created_by, created_at, updated_at, head_version, heads) VALUES (2, 'claim', '', '{}', '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '', '', '', NULL, 0, 'researcher', '2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z', 2, 1);
INSERT INTO cks_edges (edge_id, src, dst, base_type, semantic_type, weight, created_at) VALUES (1, 2, 1, 'supports', '', 0.5, '2026-11-30T12:00:00.000000000Z');
INSERT INTO cks_transition_log (seq, object_id, ts, agent, action, transitioned_to, reasoning_node_id, content_hash, round) VALUES (1, 1, '2026-11-30T12:00:00.000000000Z', 'cli', 'created', 'awaiting_research', NULL, '4ea84a788ce2b663109707295fc18eb6778eac1858414c51bd1d81290a261b00', 0);
INSERT INTO cks_changes (topic, seq) VALUES ('agent_stop', 1);
INSERT INTO cks_changes (topic, seq) VALUES ('sweeper_control', 1);
INSERT INTO cks_changes (topic, seq) VALUES ('tasks_ready', 1);
INSERT INTO cks_changes (topic, seq) VALUES ('task_aborts', 1);
INSERT INTO cks_changes (topic, seq) VALUES ('objects', 1);
