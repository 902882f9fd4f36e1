package peers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// The kinds of the retained rows: neither system's benchmark claims or
// counts them.
const (
	retainedType      = "peers-retained"
	retainedRiverKind = "peers_retained"
)

// retainCks loads n completed tasks with their history into the cks schema
// of setupURL, as a ledger that keeps its finished tasks holds them: one
// task is enqueued, claimed and completed through the ledger, and its task
// row and history rows are copied n-1 times by INSERT … SELECT
// generate_series (every column as the template has it, except the id, the
// title and the times, which step back 10 ms per copy), so the copies are
// whatever the schema writes for a completed task. The tables are then
// vacuumed and analysed, as autovacuum would have done long before.
func retainCks(ctx context.Context, m *meter, setupURL, schema string, n int) error {
	if n <= 0 {
		return nil
	}
	st, err := backend.Open(ctx, setupURL)
	if err != nil {
		return fmt.Errorf("peers: open cks: %w", err)
	}
	t, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: retainedType, Title: "retained 0"})
	if err == nil {
		var ts []cks.ClaimedTask
		ts, err = st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "peers-retained", Types: []string{retainedType}, N: 1,
			Lease: time.Minute, Running: true})
		switch {
		case err != nil:
		case len(ts) != 1 || ts[0].ID != t.ID:
			err = fmt.Errorf("claimed %d tasks, want the template %d", len(ts), t.ID)
		default:
			_, err = st.Tasks.Complete(ctx, t.ID, ts[0].LeaseToken, false, "ok")
		}
	}
	st.Close()
	if err != nil {
		return fmt.Errorf("peers: retained template task: %w", err)
	}
	if n > 1 {
		tasks, err := copyRows(ctx, m, schema, "cks_outbox_tasks", "task_id", map[string]string{"task_id": "t.task_id + g",
			"title": "'retained ' || g"})
		if err != nil {
			return err
		}
		events, err := copyRows(ctx, m, schema, "cks_task_events", "event_id", map[string]string{"task_id": "t.task_id + g"})
		if err != nil {
			return err
		}
		for _, q := range []string{tasks, events} {
			if err := m.exec(ctx, q, n-1, t.ID); err != nil {
				return fmt.Errorf("peers: load retained tasks: %w", err)
			}
		}
		if err := m.exec(ctx, fmt.Sprintf("SELECT setval(pg_get_serial_sequence('%[1]s.cks_outbox_tasks', 'task_id'), "+
			"(SELECT max(task_id) FROM %[1]s.cks_outbox_tasks))", schema)); err != nil {
			return fmt.Errorf("peers: load retained tasks: %w", err)
		}
	}
	if err := vacuum(ctx, m, schema+".cks_outbox_tasks", schema+".cks_task_events"); err != nil {
		return err
	}
	// The harness checks: n completed tasks, each with its history.
	if err := expectCount(ctx, m, "SELECT count(*) FROM "+schema+".cks_outbox_tasks WHERE type = $1 AND state = 'COMPLETED'", n, retainedType); err != nil {
		return fmt.Errorf("peers: retained tasks: %w", err)
	}
	hist, err := m.count(ctx, "SELECT count(DISTINCT e.task_id) FROM "+schema+".cks_task_events e JOIN "+schema+
		".cks_outbox_tasks t USING (task_id) WHERE t.type = $1", retainedType)
	if err != nil || hist != int64(n) {
		return fmt.Errorf("peers: retained tasks: %d of %d have history rows (%v)", hist, n, err)
	}
	return nil
}

// copyRows returns the INSERT … SELECT that copies the rows of table
// (aliased t) of task $2 $1 times (g = 1…$1), with the expressions of set
// for their columns, each timestamp a copy's g × 10 ms earlier, and column
// skip left to its default (an identity).
func copyRows(ctx context.Context, m *meter, schema, table, skip string, set map[string]string) (string, error) {
	rows, err := m.conn.Query(ctx, meterTag+`SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, table)
	if err != nil {
		return "", fmt.Errorf("peers: columns of %s: %w", table, err)
	}
	type column struct{ name, typ string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		return c, r.Scan(&c.name, &c.typ)
	})
	if err != nil || len(cols) == 0 {
		return "", fmt.Errorf("peers: columns of %s: %d found: %w", table, len(cols), err)
	}
	var names, exprs []string
	for _, c := range cols {
		if c.name == skip {
			continue
		}
		e, ok := set[c.name]
		switch {
		case ok:
		case c.typ == "timestamp with time zone":
			e = "t." + c.name + " - g * interval '10 milliseconds'"
		default:
			e = "t." + c.name
		}
		names = append(names, c.name)
		exprs = append(exprs, e)
	}
	return fmt.Sprintf("INSERT INTO %[1]s.%[2]s (%[3]s) SELECT %[4]s FROM %[1]s.%[2]s t, generate_series(1, $1::bigint) g WHERE t.task_id = $2",
		schema, table, strings.Join(names, ", "), strings.Join(exprs, ", ")), nil
}

// retainRiver loads n completed River jobs into the River schema, each as
// River leaves a job it completed (state completed, attempted once,
// finalized), by INSERT … SELECT generate_series, then vacuums and
// analyses the table. River keeps no history beside the job row.
func retainRiver(ctx context.Context, m *meter, schema string, n int) error {
	if n <= 0 {
		return nil
	}
	err := m.exec(ctx, `INSERT INTO `+schema+`.river_job (state, attempt, max_attempts, attempted_at, created_at, finalized_at,
		scheduled_at, priority, args, attempted_by, kind, metadata, queue, tags)
		SELECT 'completed', 1, 25, at, at, at, at, 1, jsonb_build_object('seq', g), ARRAY['peers-retained'], $2, '{}', 'default', '{}'
		FROM generate_series(1, $1::bigint) g, LATERAL (SELECT now() - g * interval '10 milliseconds' AS at) a`, n, retainedRiverKind)
	if err != nil {
		return fmt.Errorf("peers: load retained River jobs: %w", err)
	}
	if err := vacuum(ctx, m, schema+".river_job"); err != nil {
		return err
	}
	return expectCount(ctx, m, "SELECT count(*) FROM "+schema+".river_job WHERE kind = $1 AND state = 'completed'", n, retainedRiverKind)
}

// vacuum runs VACUUM (ANALYZE) on the tables.
func vacuum(ctx context.Context, m *meter, tables ...string) error {
	if err := m.exec(ctx, "VACUUM (ANALYZE) "+strings.Join(tables, ", ")); err != nil {
		return fmt.Errorf("peers: vacuum %s: %w", strings.Join(tables, ", "), err)
	}
	return nil
}
