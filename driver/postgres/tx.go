package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
)

// maxTxTries is how often WithTx runs a transaction Postgres aborted as a
// deadlock or a serialization failure.
const maxTxTries = 3

// WithTx implements driver.Driver: a pool transaction, READ COMMITTED for
// writes (rows are locked by the primitives that read them for update),
// REPEATABLE READ READ ONLY for a consistent snapshot. A transaction that
// Postgres aborts to break a deadlock (SQLSTATE 40P01; rare, e.g. a cancel
// blocking dependants while another completion releases them) or as a
// serialization failure (40001) is run again, up to maxTxTries times in all;
// fn must therefore only assign its results. The storage fault a
// transaction ends with is remembered for Health.
func (d *Driver) WithTx(ctx context.Context, opts driver.TxOptions, fn func(ctx context.Context, ex driver.Executor) error) error {
	txo := pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
	if opts.ReadOnly {
		txo = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	for try := 1; ; try++ {
		err := d.txOnce(ctx, txo, fn)
		if try == maxTxTries || !retryable(err) || ctx.Err() != nil {
			// A storage fault is remembered for Health: the services
			// write only in transactions.
			return d.faults.Note(err, driver.Time(d.clock.Now()))
		}
	}
}

func (d *Driver) txOnce(ctx context.Context, txo pgx.TxOptions, fn func(ctx context.Context, ex driver.Executor) error) error {
	tx, err := d.pool.BeginTx(ctx, txo)
	if err != nil {
		return mapErr("begin", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	if err := fn(ctx, &executor{d: d, db: tx}); err != nil {
		return err
	}
	return mapErr("commit", tx.Commit(ctx))
}

// executor is driver.Executor on the pool or inside one transaction.
type executor struct {
	d  *Driver
	db dbsqlc.DBTX
}

// Notify implements driver.Executor with pg_notify on the changes channel,
// which Postgres delivers when (and only if) the transaction commits (at
// once outside a transaction).
func (e *executor) Notify(ctx context.Context, topic string) error {
	return mapErr("notify "+topic, e.d.q.ChangeNotify(ctx, e.db, topic))
}
