package sqlite

import (
	"context"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/schema"
	"github.com/cks-dev/cks/internal/driver/sqlite/internal/dbsqlc"
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
		list := jsonList(ids)
		err = withoutAppendOnly(ctx, w, "task purge", []string{"cks_task_events", "cks_task_decisions"}, func() error {
			for _, del := range []func(context.Context, dbsqlc.DBTX, string) error{
				e.d.q.TaskPurgeDeps, e.d.q.TaskPurgeEvents, e.d.q.TaskPurgeEvidence, e.d.q.TaskPurgeOutput, e.d.q.TaskPurgeDecisions,
				e.d.q.TaskPurgeAborts, e.d.q.TaskPurgeSpend, e.d.q.TaskPurgePrincipals, e.d.q.TaskPurgeTasks,
			} {
				if err := del(ctx, w, list); err != nil {
					return mapErr("task purge", err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		out = ids
		return nil
	})
	return out, err
}

// TransitionPurge implements driver.KnowledgeExecutor: purge.sql's
// statements on the transition log in one write transaction, its
// append-only triggers dropped before the delete and created again after.
func (e *executor) TransitionPurge(ctx context.Context, p driver.TransitionPurgeParams) ([]int64, error) {
	var out []int64
	err := e.write(ctx, "transition purge", func(w *wtx) error {
		seqs, err := e.d.q.TransitionPurgeEligible(ctx, w, dbsqlc.TransitionPurgeEligibleParams{Seqs: jsonList(p.Seqs),
			Before: fmtTime(p.Before), Statuses: jsonList(p.Statuses)})
		if err != nil || len(seqs) == 0 {
			return mapErr("transition purge", err)
		}
		err = withoutAppendOnly(ctx, w, "transition purge", []string{"cks_transition_log"}, func() error {
			return mapErr("transition purge", e.d.q.TransitionPurgeRows(ctx, w, jsonList(seqs)))
		})
		if err != nil {
			return err
		}
		out = seqs
		return nil
	})
	return out, err
}

// withoutAppendOnly runs del in w with the append-only triggers of tables
// dropped, and creates them again after it (the same transaction: no
// other one sees the tables without them).
func withoutAppendOnly(ctx context.Context, w *wtx, op string, tables []string, del func() error) error {
	drop, restore := schema.LiftAppendOnly(schema.SQLite, tables...)
	for _, q := range drop {
		if _, err := w.Tx.ExecContext(ctx, q); err != nil {
			return mapErr(op+": lift triggers", err)
		}
	}
	if err := del(); err != nil {
		return err
	}
	for _, q := range restore {
		if _, err := w.Tx.ExecContext(ctx, q); err != nil {
			return mapErr(op+": restore triggers", err)
		}
	}
	return nil
}
