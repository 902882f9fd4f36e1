-- The schema of the first SQLite backend (store/sqlite, deleted in issue 13;
-- last in commit 4442c20): the statements of the sqlite_master of an empty
-- file it created, in creation order. TestRendersTheFirstBackendsSchema and
-- TestOpensTheFirstBackendsDatabase recreate that database from it, so the
-- proof that a database the first backend wrote opens unchanged outlives it.
CREATE TABLE cks_agent_liveness (
    instance_id TEXT PRIMARY KEY,
    process_kind TEXT NOT NULL,
    hostname TEXT NOT NULL,
    pid INTEGER NOT NULL,
    liveness_interval_s REAL NOT NULL,
    started_at TEXT NOT NULL,
    last_heartbeat_at TEXT NOT NULL,
    current_task_id INTEGER,
    current_task_type TEXT,
    desired_state TEXT
);
CREATE INDEX idx_agent_liveness_kind ON cks_agent_liveness(process_kind, last_heartbeat_at);
CREATE INDEX idx_agent_liveness_latest ON cks_agent_liveness(process_kind, started_at DESC, last_heartbeat_at DESC, instance_id);
CREATE TABLE cks_principals (
    principal_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    task_id INTEGER,
    lease_token_hash TEXT
);
CREATE INDEX idx_principals_lease ON cks_principals(task_id) WHERE task_id IS NOT NULL;
CREATE TABLE cks_grants (
    principal_id TEXT NOT NULL REFERENCES cks_principals(principal_id) ON DELETE CASCADE,
    resource TEXT NOT NULL,
    permission TEXT NOT NULL,
    PRIMARY KEY (principal_id, resource, permission)
);
CREATE TABLE cks_outbox_tasks (
    task_id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    acceptance_criteria TEXT NOT NULL DEFAULT '',
    payload TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    restarts INTEGER NOT NULL DEFAULT 0,
    revision INTEGER NOT NULL DEFAULT 1,
    parent_id INTEGER REFERENCES cks_outbox_tasks(task_id),
    dedupe_key TEXT NOT NULL DEFAULT '',
    created_by TEXT NOT NULL DEFAULT '',
    claimed_by TEXT NOT NULL DEFAULT '',
    claimed_at TEXT,
    lease_token_hash TEXT NOT NULL DEFAULT '',
    lease_expires_at TEXT,
    lease_renewed_at TEXT,
    lease_ms INTEGER NOT NULL DEFAULT 0,
    run_after TEXT,
    result TEXT NOT NULL DEFAULT '',
    last_error TEXT NOT NULL DEFAULT '',
    question TEXT NOT NULL DEFAULT '',
    answer TEXT NOT NULL DEFAULT '',
    review_note TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state_changed_at TEXT
);
CREATE INDEX idx_outbox_tasks_state_changed ON cks_outbox_tasks(state, state_changed_at);
CREATE INDEX idx_outbox_tasks_claim ON cks_outbox_tasks(state, type, priority DESC, created_at, task_id);
CREATE INDEX idx_outbox_tasks_claim_open ON cks_outbox_tasks(state, priority DESC, created_at, task_id)
	WHERE state = 'OPEN';
CREATE INDEX idx_outbox_tasks_lease ON cks_outbox_tasks(state, lease_expires_at);
CREATE INDEX idx_outbox_tasks_parent ON cks_outbox_tasks(parent_id);
CREATE INDEX idx_outbox_tasks_dedupe_all ON cks_outbox_tasks(dedupe_key) WHERE dedupe_key <> '';
CREATE UNIQUE INDEX idx_outbox_tasks_dedupe ON cks_outbox_tasks(dedupe_key)
	WHERE dedupe_key <> '' AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');
CREATE TABLE cks_task_deps (
    task_id INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id),
    depends_on INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id),
    PRIMARY KEY (task_id, depends_on)
);
CREATE INDEX idx_task_deps_depends_on ON cks_task_deps(depends_on);
CREATE TABLE cks_task_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id),
    at TEXT NOT NULL,
    actor TEXT NOT NULL DEFAULT '',
    from_state TEXT NOT NULL DEFAULT '',
    to_state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX idx_task_events_task ON cks_task_events(task_id, event_id);
CREATE TRIGGER cks_task_events_no_update BEFORE UPDATE ON cks_task_events
BEGIN SELECT RAISE(ABORT, 'cks_task_events is append-only: UPDATE refused'); END;
CREATE TRIGGER cks_task_events_no_delete BEFORE DELETE ON cks_task_events
BEGIN SELECT RAISE(ABORT, 'cks_task_events is append-only: DELETE refused'); END;
CREATE TABLE cks_task_evidence (
    evidence_id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id),
    attempt INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    restart INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_task_evidence_task ON cks_task_evidence(task_id, attempt, evidence_id);
CREATE TABLE cks_task_decisions (
    decision_id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id),
    attempt INTEGER NOT NULL,
    restart INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    derived_from_revision INTEGER NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX idx_task_decisions_task ON cks_task_decisions(task_id, decision_id);
CREATE TRIGGER cks_task_decisions_no_update BEFORE UPDATE ON cks_task_decisions
BEGIN SELECT RAISE(ABORT, 'cks_task_decisions is append-only: UPDATE refused'); END;
CREATE TRIGGER cks_task_decisions_no_delete BEFORE DELETE ON cks_task_decisions
BEGIN SELECT RAISE(ABORT, 'cks_task_decisions is append-only: DELETE refused'); END;
CREATE TABLE cks_task_aborts (
    abort_id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id),
    lease_token_hash TEXT NOT NULL DEFAULT '',
    executor TEXT NOT NULL DEFAULT '',
    attempt INTEGER NOT NULL,
    restart INTEGER NOT NULL,
    requested_by TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL DEFAULT '',
    requested_at TEXT NOT NULL,
    deadline_at TEXT NOT NULL,
    outcome TEXT NOT NULL,
    resolved_at TEXT
);
CREATE INDEX idx_task_aborts_lease ON cks_task_aborts(task_id, lease_token_hash);
CREATE INDEX idx_task_aborts_pending ON cks_task_aborts(deadline_at) WHERE outcome = 'abort_pending';
CREATE TABLE cks_sweeper_control (
    agent_id TEXT PRIMARY KEY,
    desired_running BOOLEAN NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE cks_object_versions (
    version_id INTEGER PRIMARY KEY AUTOINCREMENT,
    object_id INTEGER NOT NULL REFERENCES cks_objects(object_id),
    parents TEXT NOT NULL DEFAULT '[]',
    content TEXT NOT NULL DEFAULT '{}',
    content_hash TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    is_head INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX idx_object_versions_object ON cks_object_versions(object_id, version_id);
CREATE INDEX idx_object_versions_head ON cks_object_versions(object_id) WHERE is_head = 1;
CREATE TRIGGER cks_object_versions_no_update
BEFORE UPDATE OF object_id, parents, content, content_hash, author, created_at ON cks_object_versions
BEGIN SELECT RAISE(ABORT, 'cks_object_versions is append-only: UPDATE refused (only is_head changes)'); END;
CREATE TRIGGER cks_object_versions_no_delete BEFORE DELETE ON cks_object_versions
BEGIN SELECT RAISE(ABORT, 'cks_object_versions is append-only: DELETE refused'); END;
CREATE TABLE cks_objects (
    object_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL DEFAULT '{}',
    content_hash TEXT NOT NULL,
    current_status TEXT NOT NULL DEFAULT '',
    claimed_by TEXT NOT NULL DEFAULT '',
    claim_token TEXT NOT NULL DEFAULT '',
    claimed_at TEXT,
    round INTEGER NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    head_version INTEGER NOT NULL DEFAULT 0,
    heads INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX idx_objects_forked ON cks_objects(object_id) WHERE heads > 1;
CREATE INDEX idx_objects_claim ON cks_objects(current_status, claimed_by, object_id);
CREATE INDEX idx_objects_kind ON cks_objects(kind, object_id);
CREATE INDEX idx_objects_claimed_at ON cks_objects(claimed_at) WHERE claimed_at IS NOT NULL;
CREATE TABLE cks_edges (
    edge_id INTEGER PRIMARY KEY AUTOINCREMENT,
    src INTEGER NOT NULL REFERENCES cks_objects(object_id),
    dst INTEGER NOT NULL REFERENCES cks_objects(object_id),
    base_type TEXT NOT NULL,
    semantic_type TEXT NOT NULL DEFAULT '',
    weight REAL,
    created_at TEXT NOT NULL
);
CREATE INDEX idx_edges_src ON cks_edges(src);
CREATE INDEX idx_edges_dst ON cks_edges(dst);
CREATE TABLE cks_transition_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    object_id INTEGER NOT NULL REFERENCES cks_objects(object_id),
    ts TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT '',
    action TEXT NOT NULL,
    transitioned_to TEXT NOT NULL DEFAULT '',
    reasoning_node_id INTEGER REFERENCES cks_objects(object_id),
    content_hash TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_transition_log_object ON cks_transition_log(object_id, seq);
CREATE TRIGGER cks_transition_log_no_update BEFORE UPDATE ON cks_transition_log
BEGIN SELECT RAISE(ABORT, 'cks_transition_log is append-only: UPDATE refused'); END;
CREATE TRIGGER cks_transition_log_no_delete BEFORE DELETE ON cks_transition_log
BEGIN SELECT RAISE(ABORT, 'cks_transition_log is append-only: DELETE refused'); END;
CREATE TABLE cks_changes (
    topic TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
);
