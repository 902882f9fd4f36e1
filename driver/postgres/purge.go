package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/driver/schema"
)

// TaskPurge implements driver.TaskExecutor: purge.sql's statements in one
// transaction (a savepoint of the caller's), the append-only triggers of
// events and decisions dropped before them and created again after. The
// DROP TRIGGER locks the two tables until the commit: a batch keeps
// other writers of events waiting for its length (a few milliseconds).
func (e *executor) TaskPurge(ctx context.Context, p driver.TaskPurgeParams) ([]int64, error) {
	b, ok := e.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return nil, fmt.Errorf("postgres: task purge: %T cannot begin a transaction", e.db)
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return nil, mapErr("task purge", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	ids, err := e.d.q.TaskPurgeEligible(ctx, tx, dbsqlc.TaskPurgeEligibleParams{IDs: nonNil(p.IDs),
		Before: nullTime(p.Before), States: nonNil(p.States)})
	if err != nil || len(ids) == 0 {
		return nil, mapErr("task purge", err)
	}
	drop, restore := schema.LiftAppendOnly(schema.Postgres, "cks_task_events", "cks_task_decisions")
	for _, q := range drop {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, mapErr("task purge: lift triggers", err)
		}
	}
	for _, del := range []func(context.Context, dbsqlc.DBTX, []int64) error{
		e.d.q.TaskPurgeDeps, e.d.q.TaskPurgeEvents, e.d.q.TaskPurgeEvidence, e.d.q.TaskPurgeDecisions,
		e.d.q.TaskPurgeAborts, e.d.q.TaskPurgePrincipals, e.d.q.TaskPurgeTasks,
	} {
		if err := del(ctx, tx, ids); err != nil {
			return nil, mapErr("task purge", err)
		}
	}
	for _, q := range restore {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, mapErr("task purge: restore triggers", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr("task purge", err)
	}
	return ids, nil
}
