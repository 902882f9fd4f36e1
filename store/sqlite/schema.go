package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/internal/schema"
)

// tables is the current schema, in creation order.
var tables = []schema.Table{
	{
		Name: "cks_agent_liveness",
		Columns: []schema.Column{
			{Name: "instance_id", Def: "TEXT PRIMARY KEY"},
			{Name: "process_kind", Def: "TEXT NOT NULL"},
			{Name: "hostname", Def: "TEXT NOT NULL"},
			{Name: "pid", Def: "INTEGER NOT NULL"},
			{Name: "liveness_interval_s", Def: "REAL NOT NULL"},
			{Name: "started_at", Def: "TEXT NOT NULL"},
			{Name: "last_heartbeat_at", Def: "TEXT NOT NULL"},
			{Name: "current_task_id", Def: "INTEGER"},
			{Name: "current_task_type", Def: "TEXT"},
			// ADR-016: NULL = no stop requested, 'stop_requested' = pending.
			{Name: "desired_state", Def: "TEXT"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_agent_liveness_kind ON cks_agent_liveness(process_kind, last_heartbeat_at)`,
			// process_status: the newest instance of a kind, in LatestAgentLiveness' order.
			`CREATE INDEX IF NOT EXISTS idx_agent_liveness_latest ON cks_agent_liveness(process_kind, started_at DESC, last_heartbeat_at DESC, instance_id)`,
		},
	},
	{
		Name: "cks_principals",
		Columns: []schema.Column{
			{Name: "principal_id", Def: "TEXT PRIMARY KEY"},
			{Name: "name", Def: "TEXT NOT NULL"},
			{Name: "token_hash", Def: "TEXT NOT NULL UNIQUE"},
			{Name: "created_at", Def: "TEXT NOT NULL"},
			// The lease binding (store.LeaseBinding) of a claim's credential:
			// both NULL for every other principal.
			{Name: "task_id", Def: "INTEGER"},
			{Name: "lease_token_hash", Def: "TEXT"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_principals_lease ON cks_principals(task_id) WHERE task_id IS NOT NULL`,
		},
	},
	{
		Name: "cks_grants",
		Columns: []schema.Column{
			{Name: "principal_id", Def: "TEXT NOT NULL REFERENCES cks_principals(principal_id) ON DELETE CASCADE"},
			{Name: "resource", Def: "TEXT NOT NULL"},
			{Name: "permission", Def: "TEXT NOT NULL"},
		},
		Constraints: []string{"PRIMARY KEY (principal_id, resource, permission)"},
	},
	{
		Name: "cks_outbox_tasks",
		Columns: []schema.Column{
			{Name: "task_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "type", Def: "TEXT NOT NULL"},
			{Name: "title", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "description", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "acceptance_criteria", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "payload", Def: "TEXT NOT NULL DEFAULT '{}'"},
			{Name: "state", Def: "TEXT NOT NULL"},
			{Name: "priority", Def: "INTEGER NOT NULL DEFAULT 0"},
			{Name: "attempts", Def: "INTEGER NOT NULL DEFAULT 0"},
			{Name: "max_attempts", Def: "INTEGER NOT NULL DEFAULT 3"},
			{Name: "restarts", Def: "INTEGER NOT NULL DEFAULT 0"},
			{Name: "revision", Def: "INTEGER NOT NULL DEFAULT 1"},
			{Name: "parent_id", Def: "INTEGER REFERENCES cks_outbox_tasks(task_id)"},
			{Name: "dedupe_key", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "created_by", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "claimed_by", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "claimed_at", Def: "TEXT"},
			// HashLeaseToken of the current lease's token; '' when none. The
			// plain token is never stored (databases that held it in
			// lease_token are upgraded by retireLeaseTokens).
			{Name: "lease_token_hash", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "lease_expires_at", Def: "TEXT"},
			{Name: "lease_renewed_at", Def: "TEXT"},
			{Name: "lease_ms", Def: "INTEGER NOT NULL DEFAULT 0"},
			{Name: "run_after", Def: "TEXT"},
			{Name: "result", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "last_error", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "question", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "answer", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "review_note", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "metadata", Def: "TEXT NOT NULL DEFAULT '{}'"},
			{Name: "created_at", Def: "TEXT NOT NULL"},
			{Name: "updated_at", Def: "TEXT NOT NULL"},
			// Set at enqueue and by every transition; nullable only because
			// ALTER TABLE ADD COLUMN needs it. Older rows get updated_at (the
			// best estimate there is) when the column is added.
			{Name: "state_changed_at", Def: "TEXT"},
		},
		Backfill: map[string]string{
			"state_changed_at": `UPDATE cks_outbox_tasks SET state_changed_at = updated_at`,
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_state_changed ON cks_outbox_tasks(state, state_changed_at)`,
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_claim ON cks_outbox_tasks(state, type, priority DESC, created_at, task_id)`,
			// Claims of any type (or of several): the OPEN tasks in claim order.
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_claim_open ON cks_outbox_tasks(state, priority DESC, created_at, task_id)
	WHERE state = ` + stateLiteral(ledger.Open),
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_lease ON cks_outbox_tasks(state, lease_expires_at)`,
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_parent ON cks_outbox_tasks(parent_id)`,
			// DedupeOnce looks a key up in every state.
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_dedupe_all ON cks_outbox_tasks(dedupe_key) WHERE dedupe_key <> ''`,
			`CREATE UNIQUE INDEX IF NOT EXISTS idx_outbox_tasks_dedupe ON cks_outbox_tasks(dedupe_key)
	WHERE dedupe_key <> '' AND state NOT IN ` + terminalSQL(),
		},
	},
	{
		Name: "cks_task_deps",
		Columns: []schema.Column{
			{Name: "task_id", Def: "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			{Name: "depends_on", Def: "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
		},
		Constraints: []string{"PRIMARY KEY (task_id, depends_on)"},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_deps_depends_on ON cks_task_deps(depends_on)`,
		},
	},
	{
		Name: "cks_task_events",
		Columns: []schema.Column{
			{Name: "event_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "task_id", Def: "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			{Name: "at", Def: "TEXT NOT NULL"},
			{Name: "actor", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "from_state", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "to_state", Def: "TEXT NOT NULL"},
			{Name: "attempt", Def: "INTEGER NOT NULL DEFAULT 0"},
			{Name: "reason", Def: "TEXT NOT NULL DEFAULT ''"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_events_task ON cks_task_events(task_id, event_id)`,
			// Append-only, enforced by the database itself (DESIGN §4).
			`CREATE TRIGGER IF NOT EXISTS cks_task_events_no_update BEFORE UPDATE ON cks_task_events
BEGIN SELECT RAISE(ABORT, 'cks_task_events is append-only: UPDATE refused'); END`,
			`CREATE TRIGGER IF NOT EXISTS cks_task_events_no_delete BEFORE DELETE ON cks_task_events
BEGIN SELECT RAISE(ABORT, 'cks_task_events is append-only: DELETE refused'); END`,
		},
	},
	{
		Name: "cks_task_evidence",
		Columns: []schema.Column{
			{Name: "evidence_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "task_id", Def: "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			{Name: "attempt", Def: "INTEGER NOT NULL"},
			{Name: "revision", Def: "INTEGER NOT NULL"},
			{Name: "kind", Def: "TEXT NOT NULL"},
			{Name: "body", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "actor", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "created_at", Def: "TEXT NOT NULL"},
			{Name: "restart", Def: "INTEGER NOT NULL DEFAULT 0"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_evidence_task ON cks_task_evidence(task_id, attempt, evidence_id)`,
		},
	},
	{
		// Decisions of executors (ADR 0020 §6), append-only.
		Name: "cks_task_decisions",
		Columns: []schema.Column{
			{Name: "decision_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "task_id", Def: "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			{Name: "attempt", Def: "INTEGER NOT NULL"},
			{Name: "restart", Def: "INTEGER NOT NULL"},
			{Name: "revision", Def: "INTEGER NOT NULL"},
			{Name: "derived_from_revision", Def: "INTEGER NOT NULL"},
			{Name: "kind", Def: "TEXT NOT NULL"},
			{Name: "text", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "actor", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "created_at", Def: "TEXT NOT NULL"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_decisions_task ON cks_task_decisions(task_id, decision_id)`,
			`CREATE TRIGGER IF NOT EXISTS cks_task_decisions_no_update BEFORE UPDATE ON cks_task_decisions
BEGIN SELECT RAISE(ABORT, 'cks_task_decisions is append-only: UPDATE refused'); END`,
			`CREATE TRIGGER IF NOT EXISTS cks_task_decisions_no_delete BEFORE DELETE ON cks_task_decisions
BEGIN SELECT RAISE(ABORT, 'cks_task_decisions is append-only: DELETE refused'); END`,
		},
	},
	{
		// Abort requests of stop, update and cancel (ADR 0020 §5).
		Name: "cks_task_aborts",
		Columns: []schema.Column{
			{Name: "abort_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "task_id", Def: "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			// HashLeaseToken of the revoked lease's token.
			{Name: "lease_token_hash", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "executor", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "attempt", Def: "INTEGER NOT NULL"},
			{Name: "restart", Def: "INTEGER NOT NULL"},
			{Name: "requested_by", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "reason", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "requested_at", Def: "TEXT NOT NULL"},
			{Name: "deadline_at", Def: "TEXT NOT NULL"},
			{Name: "outcome", Def: "TEXT NOT NULL"},
			{Name: "resolved_at", Def: "TEXT"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_aborts_lease ON cks_task_aborts(task_id, lease_token_hash)`,
			`CREATE INDEX IF NOT EXISTS idx_task_aborts_pending ON cks_task_aborts(deadline_at) WHERE outcome = 'abort_pending'`,
		},
	},
	{
		// ADR-015: a row only for a sweeper whose default was overridden.
		Name: "cks_sweeper_control",
		Columns: []schema.Column{
			{Name: "agent_id", Def: "TEXT PRIMARY KEY"},
			{Name: "desired_running", Def: "BOOLEAN NOT NULL"},
			{Name: "updated_at", Def: "TEXT NOT NULL"},
		},
	},
	{
		// The versions of objects (issue 8): one row per content write,
		// forming a DAG through parents (a JSON array of version ids,
		// ascending). is_head marks the versions no later version is based
		// on. It precedes cks_objects, whose upgrade backfills it.
		Name: "cks_object_versions",
		Columns: []schema.Column{
			{Name: "version_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "object_id", Def: "INTEGER NOT NULL REFERENCES cks_objects(object_id)"},
			{Name: "parents", Def: "TEXT NOT NULL DEFAULT '[]'"},
			{Name: "content", Def: "TEXT NOT NULL DEFAULT '{}'"},
			{Name: "content_hash", Def: "TEXT NOT NULL"},
			{Name: "author", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "created_at", Def: "TEXT NOT NULL"},
			{Name: "is_head", Def: "INTEGER NOT NULL DEFAULT 1"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_object_versions_object ON cks_object_versions(object_id, version_id)`,
			// Heads: the head versions of one object, ascending (the rowid
			// is version_id).
			`CREATE INDEX IF NOT EXISTS idx_object_versions_head ON cks_object_versions(object_id) WHERE is_head = 1`,
			// A version is never rewritten or removed: only is_head changes.
			`CREATE TRIGGER IF NOT EXISTS cks_object_versions_no_update
BEFORE UPDATE OF object_id, parents, content, content_hash, author, created_at ON cks_object_versions
BEGIN SELECT RAISE(ABORT, 'cks_object_versions is append-only: UPDATE refused (only is_head changes)'); END`,
			`CREATE TRIGGER IF NOT EXISTS cks_object_versions_no_delete BEFORE DELETE ON cks_object_versions
BEGIN SELECT RAISE(ABORT, 'cks_object_versions is append-only: DELETE refused'); END`,
		},
	},
	{
		// Objects of the knowledge store (ADR-007): nodes of the knowledge
		// graph, with the pipeline status and claim of each.
		Name: "cks_objects",
		Columns: []schema.Column{
			{Name: "object_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "kind", Def: "TEXT NOT NULL"},
			{Name: "title", Def: "TEXT NOT NULL DEFAULT ''"},
			// Canonical JSON (store.CanonicalJSON); content_hash its SHA-256, hex.
			{Name: "content", Def: "TEXT NOT NULL DEFAULT '{}'"},
			{Name: "content_hash", Def: "TEXT NOT NULL"},
			{Name: "current_status", Def: "TEXT NOT NULL DEFAULT ''"},
			// '' when unclaimed; claimed_at is then NULL.
			{Name: "claimed_by", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "claim_token", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "claimed_at", Def: "TEXT"},
			{Name: "round", Def: "INTEGER NOT NULL DEFAULT 0"},
			{Name: "created_by", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "created_at", Def: "TEXT NOT NULL"},
			{Name: "updated_at", Def: "TEXT NOT NULL"},
			// The latest written version (cks_object_versions), whose content
			// the row carries; heads counts the object's head versions (more
			// than one: a fork). Objects written before versions existed get a
			// first version from their content when head_version is added.
			{Name: "head_version", Def: "INTEGER NOT NULL DEFAULT 0"},
			{Name: "heads", Def: "INTEGER NOT NULL DEFAULT 1"},
		},
		Backfill: map[string]string{
			"head_version": backfillVersionsSQL,
		},
		After: []string{
			// ForkedObjects: only forked objects are in it.
			`CREATE INDEX IF NOT EXISTS idx_objects_forked ON cks_objects(object_id) WHERE heads > 1`,
			// ClaimObjects: the unclaimed objects of one status, oldest first.
			`CREATE INDEX IF NOT EXISTS idx_objects_claim ON cks_objects(current_status, claimed_by, object_id)`,
			`CREATE INDEX IF NOT EXISTS idx_objects_kind ON cks_objects(kind, object_id)`,
			// ReleaseStaleClaims: only claimed objects have a claimed_at.
			`CREATE INDEX IF NOT EXISTS idx_objects_claimed_at ON cks_objects(claimed_at) WHERE claimed_at IS NOT NULL`,
		},
	},
	{
		// Edges of the knowledge graph: base_type is structural (graph
		// algorithms), semantic_type what the edge means (ADR-007 §4).
		Name: "cks_edges",
		Columns: []schema.Column{
			{Name: "edge_id", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "src", Def: "INTEGER NOT NULL REFERENCES cks_objects(object_id)"},
			{Name: "dst", Def: "INTEGER NOT NULL REFERENCES cks_objects(object_id)"},
			{Name: "base_type", Def: "TEXT NOT NULL"},
			{Name: "semantic_type", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "weight", Def: "REAL"},
			{Name: "created_at", Def: "TEXT NOT NULL"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_edges_src ON cks_edges(src)`,
			`CREATE INDEX IF NOT EXISTS idx_edges_dst ON cks_edges(dst)`,
		},
	},
	{
		// The transition log of objects (ADR-007 §1, §4), append-only.
		Name: "cks_transition_log",
		Columns: []schema.Column{
			{Name: "seq", Def: "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{Name: "object_id", Def: "INTEGER NOT NULL REFERENCES cks_objects(object_id)"},
			{Name: "ts", Def: "TEXT NOT NULL"},
			{Name: "agent", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "action", Def: "TEXT NOT NULL"},
			{Name: "transitioned_to", Def: "TEXT NOT NULL DEFAULT ''"},
			{Name: "reasoning_node_id", Def: "INTEGER REFERENCES cks_objects(object_id)"},
			{Name: "content_hash", Def: "TEXT NOT NULL"},
			{Name: "round", Def: "INTEGER NOT NULL DEFAULT 0"},
		},
		After: []string{
			`CREATE INDEX IF NOT EXISTS idx_transition_log_object ON cks_transition_log(object_id, seq)`,
			// Append-only, enforced by the database itself (DESIGN §4).
			`CREATE TRIGGER IF NOT EXISTS cks_transition_log_no_update BEFORE UPDATE ON cks_transition_log
BEGIN SELECT RAISE(ABORT, 'cks_transition_log is append-only: UPDATE refused'); END`,
			`CREATE TRIGGER IF NOT EXISTS cks_transition_log_no_delete BEFORE DELETE ON cks_transition_log
BEGIN SELECT RAISE(ABORT, 'cks_transition_log is append-only: DELETE refused'); END`,
		},
	},
	{
		// The per-topic change counters behind WatchChanges (see publish).
		Name: "cks_changes",
		Columns: []schema.Column{
			{Name: "topic", Def: "TEXT PRIMARY KEY"},
			{Name: "seq", Def: "INTEGER NOT NULL"},
		},
	},
}

// backfillVersionsSQL gives every object of a database older than versions
// its first version (its content, by its creator, at its last update) and
// points head_version at it. It runs in the upgrade that adds head_version,
// after cks_object_versions was created (it precedes cks_objects in tables).
const backfillVersionsSQL = `INSERT INTO cks_object_versions (object_id, parents, content, content_hash, author, created_at, is_head)
SELECT object_id, '[]', content, content_hash, created_by, updated_at, 1 FROM cks_objects WHERE head_version = 0
ORDER BY object_id;
UPDATE cks_objects SET head_version = (SELECT max(v.version_id) FROM cks_object_versions v
	WHERE v.object_id = cks_objects.object_id) WHERE head_version = 0`

// ensureSchema brings the database to the current shape in one transaction.
func ensureSchema(ctx context.Context, db *sql.DB) error {
	tx, err := beginImmediate(ctx, db)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	had := map[string]map[string]bool{}
	for _, t := range tables {
		if _, err := tx.ExecContext(ctx, t.Create()); err != nil {
			return fmt.Errorf("create %s: %w", t.Name, err)
		}
		have, err := columnsOf(ctx, tx, t.Name)
		if err != nil {
			return err
		}
		had[t.Name] = have
		for _, stmt := range t.Upgrade(have) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("schema of %s: %q: %w", t.Name, stmt, err)
			}
		}
	}
	if err := retireLeaseTokens(ctx, tx, had); err != nil {
		return err
	}
	if !had["cks_principals"]["task_id"] {
		if err := bindClaimPrincipals(ctx, tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// retireLeaseTokens upgrades a database written before lease tokens were
// stored hashed: the plain tokens of cks_outbox_tasks and cks_task_aborts
// (column lease_token) are hashed into lease_token_hash, in Go (SQLite has
// no SHA-256), so live leases and pending aborts keep working, and the
// plain column is dropped. had holds each table's columns as the database
// had them; a table without lease_token needs nothing.
func retireLeaseTokens(ctx context.Context, tx *sql.Tx, had map[string]map[string]bool) error {
	for _, r := range []struct {
		table, key string
		// dependents must go before the column can (SQLite refuses to drop
		// an indexed column).
		dependents []string
	}{
		{"cks_outbox_tasks", "task_id", nil},
		{"cks_task_aborts", "abort_id", []string{`DROP INDEX IF EXISTS idx_task_aborts_task`}},
	} {
		if !had[r.table]["lease_token"] {
			continue
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+r.key+`, lease_token FROM `+r.table+` WHERE lease_token <> ''`)
		if err != nil {
			return fmt.Errorf("upgrade lease tokens of %s: %w", r.table, err)
		}
		type plain struct {
			key   int64
			token string
		}
		toks, err := collect(rows, "upgrade lease tokens", func(sc scanner) (plain, error) {
			var p plain
			return p, sc.Scan(&p.key, &p.token)
		})
		if err != nil {
			return err
		}
		for _, p := range toks {
			if _, err := tx.ExecContext(ctx, `UPDATE `+r.table+` SET lease_token_hash = ? WHERE `+r.key+` = ?`,
				store.HashLeaseToken(p.token), p.key); err != nil {
				return fmt.Errorf("upgrade lease tokens of %s: %w", r.table, err)
			}
		}
		for _, stmt := range append(r.dependents, `ALTER TABLE `+r.table+` DROP COLUMN lease_token`) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("upgrade lease tokens of %s: %q: %w", r.table, stmt, err)
			}
		}
	}
	return nil
}

// bindClaimPrincipals upgrades a database written before credentials were
// bound to leases: each principal an HTTP claim made (named "task/ID
// WORKER", see schema.ClaimPrincipal) is bound to the lease WORKER holds on
// task ID now, or, when it holds none, to no lease (it no longer
// authenticates and the lease reaper deletes it), as the reaper would have.
// It runs after retireLeaseTokens, which hashed the leases.
func bindClaimPrincipals(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT principal_id, name FROM cks_principals WHERE name LIKE 'task/%'`)
	if err != nil {
		return fmt.Errorf("upgrade principals: %w", err)
	}
	type named struct{ id, name string }
	ps, err := collect(rows, "upgrade principals", func(sc scanner) (named, error) {
		var p named
		return p, sc.Scan(&p.id, &p.name)
	})
	if err != nil {
		return err
	}
	for _, p := range ps {
		taskID, worker, ok := schema.ClaimPrincipal(p.name)
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE cks_principals SET task_id = ?, lease_token_hash = COALESCE(
	(SELECT lease_token_hash FROM cks_outbox_tasks WHERE task_id = ? AND claimed_by = ? AND state IN `+
			stateList([]ledger.State{ledger.Claimed, ledger.Running})+`), '')
WHERE principal_id = ?`, taskID, taskID, worker, p.id); err != nil {
			return fmt.Errorf("upgrade principal %s: %w", p.id, err)
		}
	}
	return nil
}

func columnsOf(ctx context.Context, tx *sql.Tx, table string) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		have[name] = true
	}
	return have, rows.Err()
}
