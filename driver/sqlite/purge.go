package sqlite

import (
	"context"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/schema"
	"github.com/cks-dev/cks/driver/sqlite/internal/dbsqlc"
)

// TaskPurge implements driver.TaskExecutor: purge.sql's statements in one
// write transaction (the caller's, or its own), the append-only triggers
// of events and decisions dropped before them and created again after.
func (e *executor) TaskPurge(ctx context.Context, p driver.TaskPurgeParams) ([]int64, error) {
	var out []int64
	err := e.write(ctx, "task purge", func(w *wtx) error {
		ids, err := e.d.q.TaskPurgeEligible(ctx, w, dbsqlc.TaskPurgeEligibleParams{IDs: jsonList(p.IDs),
			Before: fmtNullTime(p.Before), States: jsonList(p.States)})
		if err != nil || len(ids) == 0 {
			return mapErr("task purge", err)
		}
		drop, restore := schema.LiftAppendOnly(schema.SQLite, "cks_task_events", "cks_task_decisions")
		for _, q := range drop {
			if _, err := w.Tx.ExecContext(ctx, q); err != nil {
				return mapErr("task purge: lift triggers", err)
			}
		}
		list := jsonList(ids)
		for _, del := range []func(context.Context, dbsqlc.DBTX, string) error{
			e.d.q.TaskPurgeDeps, e.d.q.TaskPurgeEvents, e.d.q.TaskPurgeEvidence, e.d.q.TaskPurgeDecisions,
			e.d.q.TaskPurgeAborts, e.d.q.TaskPurgePrincipals, e.d.q.TaskPurgeTasks,
		} {
			if err := del(ctx, w, list); err != nil {
				return mapErr("task purge", err)
			}
		}
		for _, q := range restore {
			if _, err := w.Tx.ExecContext(ctx, q); err != nil {
				return mapErr("task purge: restore triggers", err)
			}
		}
		out = ids
		return nil
	})
	return out, err
}
