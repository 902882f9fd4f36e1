package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/internal/driver/schema"
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
	err = withoutAppendOnly(ctx, tx, "task purge", []string{"cks_task_events", "cks_task_decisions"}, func() error {
		for _, del := range []func(context.Context, dbsqlc.DBTX, []int64) error{
			e.d.q.TaskPurgeDeps, e.d.q.TaskPurgeEvents, e.d.q.TaskPurgeEvidence, e.d.q.TaskPurgeOutput, e.d.q.TaskPurgeDecisions,
			e.d.q.TaskPurgeAborts, e.d.q.TaskPurgeSpend, e.d.q.TaskPurgePrincipals, e.d.q.TaskPurgeTasks,
		} {
			if err := del(ctx, tx, ids); err != nil {
				return mapErr("task purge", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr("task purge", err)
	}
	return ids, nil
}

// TransitionPurge implements driver.KnowledgeExecutor: purge.sql's
// statements on the transition log in one transaction (a savepoint of the
// caller's), its append-only triggers dropped before the delete and
// created again after; the DROP TRIGGER holds the log's lock until the
// commit, a batch's length.
func (e *executor) TransitionPurge(ctx context.Context, p driver.TransitionPurgeParams) ([]int64, error) {
	b, ok := e.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return nil, fmt.Errorf("postgres: transition purge: %T cannot begin a transaction", e.db)
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return nil, mapErr("transition purge", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	seqs, err := e.d.q.TransitionPurgeEligible(ctx, tx, dbsqlc.TransitionPurgeEligibleParams{Seqs: nonNil(p.Seqs),
		Before: driver.Time(p.Before), Statuses: nonNil(p.Statuses)})
	if err != nil || len(seqs) == 0 {
		return nil, mapErr("transition purge", err)
	}
	err = withoutAppendOnly(ctx, tx, "transition purge", []string{"cks_transition_log"}, func() error {
		return mapErr("transition purge", e.d.q.TransitionPurgeRows(ctx, tx, seqs))
	})
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr("transition purge", err)
	}
	return seqs, nil
}

// withoutAppendOnly runs del in tx with the append-only triggers of
// tables dropped, and creates them again after it (the same transaction:
// no other one sees the tables without them).
func withoutAppendOnly(ctx context.Context, tx pgx.Tx, op string, tables []string, del func() error) error {
	drop, restore := schema.LiftAppendOnly(schema.Postgres, tables...)
	for _, q := range drop {
		if _, err := tx.Exec(ctx, q); err != nil {
			return mapErr(op+": lift triggers", err)
		}
	}
	if err := del(); err != nil {
		return err
	}
	for _, q := range restore {
		if _, err := tx.Exec(ctx, q); err != nil {
			return mapErr(op+": restore triggers", err)
		}
	}
	return nil
}
