package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/cks-dev/cks/ledger"
)

// column is one column of a table. Columns after a table's first release must be
// addable by ALTER TABLE ADD COLUMN: nullable or with a default.
type column struct {
	name string
	def  string
}

// table is the current shape of one table. ensureSchema creates it when missing
// and adds every column an older database lacks (the seeds' convention: no
// migration runner, no version table).
type table struct {
	name        string
	columns     []column
	constraints []string
	// backfill maps a column to the statement that fills it in the rows an
	// older database already holds; it runs only when that column is added.
	backfill map[string]string
	// after holds statements run after the table has its full shape (indexes,
	// triggers), each idempotent.
	after []string
}

func (t table) create() string {
	parts := make([]string, 0, len(t.columns)+len(t.constraints))
	for _, c := range t.columns {
		parts = append(parts, c.name+" "+c.def)
	}
	parts = append(parts, t.constraints...)
	return "CREATE TABLE IF NOT EXISTS " + t.name + " (\n    " + strings.Join(parts, ",\n    ") + "\n)"
}

var schema = []table{
	{
		name: "cks_agent_liveness",
		columns: []column{
			{"instance_id", "TEXT PRIMARY KEY"},
			{"process_kind", "TEXT NOT NULL"},
			{"hostname", "TEXT NOT NULL"},
			{"pid", "INTEGER NOT NULL"},
			{"liveness_interval_s", "REAL NOT NULL"},
			{"started_at", "TEXT NOT NULL"},
			{"last_heartbeat_at", "TEXT NOT NULL"},
			{"current_task_id", "INTEGER"},
			{"current_task_type", "TEXT"},
		},
		after: []string{
			`CREATE INDEX IF NOT EXISTS idx_agent_liveness_kind ON cks_agent_liveness(process_kind, last_heartbeat_at)`,
		},
	},
	{
		name: "cks_principals",
		columns: []column{
			{"principal_id", "TEXT PRIMARY KEY"},
			{"name", "TEXT NOT NULL"},
			{"token_hash", "TEXT NOT NULL UNIQUE"},
			{"created_at", "TEXT NOT NULL"},
		},
	},
	{
		name: "cks_grants",
		columns: []column{
			{"principal_id", "TEXT NOT NULL REFERENCES cks_principals(principal_id) ON DELETE CASCADE"},
			{"resource", "TEXT NOT NULL"},
			{"permission", "TEXT NOT NULL"},
		},
		constraints: []string{"PRIMARY KEY (principal_id, resource, permission)"},
	},
	{
		name: "cks_outbox_tasks",
		columns: []column{
			{"task_id", "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{"type", "TEXT NOT NULL"},
			{"title", "TEXT NOT NULL DEFAULT ''"},
			{"description", "TEXT NOT NULL DEFAULT ''"},
			{"acceptance_criteria", "TEXT NOT NULL DEFAULT ''"},
			{"payload", "TEXT NOT NULL DEFAULT '{}'"},
			{"state", "TEXT NOT NULL"},
			{"priority", "INTEGER NOT NULL DEFAULT 0"},
			{"attempts", "INTEGER NOT NULL DEFAULT 0"},
			{"max_attempts", "INTEGER NOT NULL DEFAULT 3"},
			{"restarts", "INTEGER NOT NULL DEFAULT 0"},
			{"revision", "INTEGER NOT NULL DEFAULT 1"},
			{"parent_id", "INTEGER REFERENCES cks_outbox_tasks(task_id)"},
			{"dedupe_key", "TEXT NOT NULL DEFAULT ''"},
			{"created_by", "TEXT NOT NULL DEFAULT ''"},
			{"claimed_by", "TEXT NOT NULL DEFAULT ''"},
			{"claimed_at", "TEXT"},
			{"lease_token", "TEXT NOT NULL DEFAULT ''"},
			{"lease_expires_at", "TEXT"},
			{"lease_renewed_at", "TEXT"},
			{"lease_ms", "INTEGER NOT NULL DEFAULT 0"},
			{"run_after", "TEXT"},
			{"result", "TEXT NOT NULL DEFAULT ''"},
			{"last_error", "TEXT NOT NULL DEFAULT ''"},
			{"question", "TEXT NOT NULL DEFAULT ''"},
			{"answer", "TEXT NOT NULL DEFAULT ''"},
			{"review_note", "TEXT NOT NULL DEFAULT ''"},
			{"created_at", "TEXT NOT NULL"},
			{"updated_at", "TEXT NOT NULL"},
			// Set at enqueue and by every transition; nullable only because
			// ALTER TABLE ADD COLUMN needs it. Older rows get updated_at (the
			// best estimate there is) when the column is added.
			{"state_changed_at", "TEXT"},
		},
		backfill: map[string]string{
			"state_changed_at": `UPDATE cks_outbox_tasks SET state_changed_at = updated_at`,
		},
		after: []string{
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_state_changed ON cks_outbox_tasks(state, state_changed_at)`,
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_claim ON cks_outbox_tasks(state, type, priority DESC, created_at, task_id)`,
			// Claims of any type (or of several): the OPEN tasks in claim order.
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_claim_open ON cks_outbox_tasks(state, priority DESC, created_at, task_id)
	WHERE state = ` + stateLiteral(ledger.Open),
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_lease ON cks_outbox_tasks(state, lease_expires_at)`,
			`CREATE INDEX IF NOT EXISTS idx_outbox_tasks_parent ON cks_outbox_tasks(parent_id)`,
			`CREATE UNIQUE INDEX IF NOT EXISTS idx_outbox_tasks_dedupe ON cks_outbox_tasks(dedupe_key)
	WHERE dedupe_key <> '' AND state NOT IN ` + terminalSQL(),
		},
	},
	{
		name: "cks_task_deps",
		columns: []column{
			{"task_id", "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			{"depends_on", "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
		},
		constraints: []string{"PRIMARY KEY (task_id, depends_on)"},
		after: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_deps_depends_on ON cks_task_deps(depends_on)`,
		},
	},
	{
		name: "cks_task_events",
		columns: []column{
			{"event_id", "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{"task_id", "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			{"at", "TEXT NOT NULL"},
			{"actor", "TEXT NOT NULL DEFAULT ''"},
			{"from_state", "TEXT NOT NULL DEFAULT ''"},
			{"to_state", "TEXT NOT NULL"},
			{"attempt", "INTEGER NOT NULL DEFAULT 0"},
			{"reason", "TEXT NOT NULL DEFAULT ''"},
		},
		after: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_events_task ON cks_task_events(task_id, event_id)`,
			// Append-only, enforced by the database itself (DESIGN §4).
			`CREATE TRIGGER IF NOT EXISTS cks_task_events_no_update BEFORE UPDATE ON cks_task_events
BEGIN SELECT RAISE(ABORT, 'cks_task_events is append-only: UPDATE refused'); END`,
			`CREATE TRIGGER IF NOT EXISTS cks_task_events_no_delete BEFORE DELETE ON cks_task_events
BEGIN SELECT RAISE(ABORT, 'cks_task_events is append-only: DELETE refused'); END`,
		},
	},
	{
		name: "cks_task_evidence",
		columns: []column{
			{"evidence_id", "INTEGER PRIMARY KEY AUTOINCREMENT"},
			{"task_id", "INTEGER NOT NULL REFERENCES cks_outbox_tasks(task_id)"},
			{"attempt", "INTEGER NOT NULL"},
			{"revision", "INTEGER NOT NULL"},
			{"kind", "TEXT NOT NULL"},
			{"body", "TEXT NOT NULL DEFAULT ''"},
			{"actor", "TEXT NOT NULL DEFAULT ''"},
			{"created_at", "TEXT NOT NULL"},
		},
		after: []string{
			`CREATE INDEX IF NOT EXISTS idx_task_evidence_task ON cks_task_evidence(task_id, attempt, evidence_id)`,
		},
	},
	{
		// ADR-015: a row only for a sweeper whose default was overridden.
		name: "cks_sweeper_control",
		columns: []column{
			{"agent_id", "TEXT PRIMARY KEY"},
			{"desired_running", "BOOLEAN NOT NULL"},
			{"updated_at", "TEXT NOT NULL"},
		},
	},
	{
		// The per-topic change counters behind WatchChanges (see publish).
		name: "cks_changes",
		columns: []column{
			{"topic", "TEXT PRIMARY KEY"},
			{"seq", "INTEGER NOT NULL"},
		},
	},
}

// ensureSchema brings the database to the current shape in one transaction.
func ensureSchema(ctx context.Context, db *sql.DB) error {
	tx, err := beginImmediate(ctx, db)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	for _, t := range schema {
		if _, err := tx.ExecContext(ctx, t.create()); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
		have, err := columnsOf(ctx, tx, t.name)
		if err != nil {
			return err
		}
		for _, c := range t.columns {
			if have[c.name] {
				continue
			}
			if _, err := tx.ExecContext(ctx, "ALTER TABLE "+t.name+" ADD COLUMN "+c.name+" "+c.def); err != nil {
				return fmt.Errorf("add column %s.%s: %w", t.name, c.name, err)
			}
			if fill := t.backfill[c.name]; fill != "" {
				if _, err := tx.ExecContext(ctx, fill); err != nil {
					return fmt.Errorf("backfill %s.%s: %w", t.name, c.name, err)
				}
			}
		}
		for _, stmt := range t.after {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("schema of %s: %w", t.name, err)
			}
		}
	}
	return tx.Commit()
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
