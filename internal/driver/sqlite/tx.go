package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/sqlite/internal/dbsqlc"
)

// WithTx implements driver.Driver: a write transaction is BEGIN IMMEDIATE on
// the one writer connection (so it never needs to be run again: no other
// writer can interleave), shared with the write transactions that queued
// beside it (group commit, see Driver.write); a read-only one is a deferred transaction on the
// reader pool, whose snapshot is taken at its first read. After a commit
// that notified, this Driver's listeners are woken at once.
func (d *Driver) WithTx(ctx context.Context, opts driver.TxOptions, fn func(ctx context.Context, ex driver.Executor) error) error {
	if opts.ReadOnly {
		tx, err := d.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return mapErr("begin read-only transaction", err)
		}
		defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
		if err := fn(ctx, &executor{d: d, read: tx, readOnly: true}); err != nil {
			return ended(ctx, err)
		}
		return ended(ctx, mapErr("commit read-only transaction", tx.Commit()))
	}
	return d.write(ctx, func(w *wtx) error { return fn(ctx, &executor{d: d, read: w, tx: w}) })
}

// ended names ctx's end as the cause of err once ctx has ended: then
// database/sql rolls the transaction back by itself, and the statements
// that follow fail with "statement is closed" or sql.ErrTxDone, which say
// nothing of why.
func ended(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", context.Cause(ctx), err)
}

// beginImmediate starts a BEGIN IMMEDIATE transaction on the writer (the
// DSN's _txlock=immediate makes BeginTx do that). The writer's busy_timeout
// is zero and the wait for the write lock happens here instead, polling with
// short jittered sleeps (from 50µs, doubling up to 2ms) until
// WriteLockTimeout passes or ctx ends. SQLite's own busy handler backs off
// to 100ms sleeps, so writers that loop tightly starve the waiting ones;
// fine polling keeps many handles or processes writing one file fair enough.
// The transaction itself is bound to no context that can end: database/sql
// rolls back a transaction whose context ends, and a group's transaction
// outlives the contexts of its members (see wtx).
func beginImmediate(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	var tx *sql.Tx
	err := pollLock(ctx, func() error {
		var err error
		tx, err = db.BeginTx(context.WithoutCancel(ctx), nil)
		return err
	})
	return tx, err
}

// pollLock runs try until it does not fail with SQLITE_BUSY, sleeping a
// little more each time, for at most WriteLockTimeout.
func pollLock(ctx context.Context, try func() error) error {
	deadline := time.Now().Add(WriteLockTimeout)
	sleep := 50 * time.Microsecond
	for {
		err := try()
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(sleep/2 + rand.N(sleep))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		sleep = min(2*sleep, 2*time.Millisecond)
	}
}

// executor is driver.Executor on the reader pool (outside a transaction) or
// inside one transaction.
type executor struct {
	d *Driver
	// read runs the reads: the reader pool, or the transaction.
	read dbsqlc.DBTX
	// tx is the write transaction the executor belongs to; nil outside one
	// (then every write runs in its own write transaction) and in a
	// read-only one.
	tx       *wtx
	readOnly bool
}

// errReadOnly is the error of a write inside a read-only transaction.
var errReadOnly = errors.New("sqlite: write in a read-only transaction")

// write runs fn with the transaction to write in: the executor's own, or a
// new one for fn alone. what names the primitive in errors.
func (e *executor) write(ctx context.Context, what string, fn func(w *wtx) error) error {
	if e.readOnly {
		return fmt.Errorf("%s: %w", what, errReadOnly)
	}
	if e.tx != nil {
		return fn(e.tx)
	}
	return e.d.write(ctx, fn)
}

// Notify implements driver.Executor: it bumps topic's counter in
// cks_changes, which the listeners of every process poll, and marks the
// transaction so that its commit wakes this Driver's listeners at once.
func (e *executor) Notify(ctx context.Context, topic string) error {
	return e.write(ctx, "notify", func(w *wtx) error {
		if err := e.d.q.ChangeBump(ctx, w, topic); err != nil {
			return mapErr("notify "+topic, err)
		}
		w.notified = true
		return nil
	})
}
