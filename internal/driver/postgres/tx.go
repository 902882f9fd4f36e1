package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
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
//
// BEGIN is not a round trip of its own: it goes out in one pipeline with
// the transaction's first statement (lazyTx), and a transaction that sends
// no statement sends neither BEGIN nor COMMIT.
func (d *Driver) WithTx(ctx context.Context, opts driver.TxOptions, fn func(ctx context.Context, ex driver.Executor) error) error {
	txo := pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
	if opts.ReadOnly {
		txo = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	for try := 1; ; try++ {
		err := d.txOnce(ctx, txo, opts.Single, fn)
		if try == maxTxTries || !retryable(err) || ctx.Err() != nil {
			// A storage fault is remembered for Health: the services
			// write only in transactions.
			return d.faults.Note(err, driver.Time(d.clock.Now()))
		}
	}
}

func (d *Driver) txOnce(ctx context.Context, txo pgx.TxOptions, single bool, fn func(ctx context.Context, ex driver.Executor) error) error {
	if single {
		return fn(ctx, &executor{d: d, db: &singleTx{pool: d.pool}})
	}
	t := &lazyTx{pool: d.pool, txo: txo}
	defer t.rollback(ctx)
	if err := fn(ctx, &executor{d: d, db: t}); err != nil {
		return err
	}
	return t.commit(ctx)
}

// singleTx is dbsqlc.DBTX in a transaction of one statement
// (driver.TxOptions.Single): the statement runs on the pool as its own
// implicit transaction, so the claim's transaction is one round trip, as
// River's is; a second statement fails with driver.ErrSingle.
type singleTx struct {
	pool *pgxpool.Pool
	sent bool
}

var _ dbsqlc.DBTX = (*singleTx)(nil)

// next marks the statement sent, or says that one was.
func (t *singleTx) next() error {
	if t.sent {
		return driver.ErrSingle
	}
	t.sent = true
	return nil
}

// Exec implements dbsqlc.DBTX.
func (t *singleTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.next(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.pool.Exec(ctx, sql, args...)
}

// Query implements dbsqlc.DBTX.
func (t *singleTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.next(); err != nil {
		return nil, err
	}
	return t.pool.Query(ctx, sql, args...)
}

// QueryRow implements dbsqlc.DBTX.
func (t *singleTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.next(); err != nil {
		return errRow{err}
	}
	return t.pool.QueryRow(ctx, sql, args...)
}

// SendBatch implements dbsqlc.DBTX: a batch is one implicit transaction
// too (one pipeline, one sync), and counts as the statement.
func (t *singleTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.next(); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return t.pool.SendBatch(ctx, b)
}

// Begin implements dbsqlc.DBTX: a savepoint needs a transaction block.
func (t *singleTx) Begin(context.Context) (pgx.Tx, error) {
	return nil, fmt.Errorf("savepoint: %w", driver.ErrSingle)
}

// lazyTx is dbsqlc.DBTX in a transaction that begins with its first
// statement: that statement (or batch) is sent in one pgx batch after
// BEGIN (pgx.Batch.BeginTx), so the pool connection is acquired, the
// transaction begun and the statement run in one round trip, and no
// backend sits idle in transaction waiting for the statement after its
// BEGIN. Later statements run on the transaction (a pgxpool.Tx), which
// releases the connection when it commits or rolls back. Like pgx.Tx it is
// for one goroutine.
type lazyTx struct {
	pool *pgxpool.Pool
	txo  pgx.TxOptions
	// tx is the transaction once the first statement was sent.
	tx pgx.Tx
	// beginErr is why BEGIN failed (acquiring the connection, or BEGIN
	// itself); every later statement and the commit return it.
	beginErr error
}

var _ dbsqlc.DBTX = (*lazyTx)(nil)

// errBegin is the error of a statement whose transaction did not begin.
func (t *lazyTx) errBegin() error { return fmt.Errorf("begin: %w", t.beginErr) }

// begin sends BEGIN and the statements queue adds in one batch and reads
// BEGIN's result; the caller reads the statements' results and closes br.
// pgx's statement cache applies to the batch as to any statement: a
// statement the connection has not prepared yet is prepared first, once
// per connection.
func (t *lazyTx) begin(ctx context.Context, queue func(*pgx.Batch)) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.BeginTx(t.txo)
	queue(b)
	br := t.pool.SendBatch(ctx, b)
	t.tx = br.Tx() // rolled back by txOnce; closed already if BEGIN fails
	if _, err := br.Exec(); err != nil {
		br.Close() //nolint:errcheck // err says why
		t.beginErr = err
		return nil, t.errBegin()
	}
	return br, nil
}

// Exec implements dbsqlc.DBTX.
func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	switch {
	case t.beginErr != nil:
		return pgconn.CommandTag{}, t.errBegin()
	case t.tx != nil:
		return t.tx.Exec(ctx, sql, args...)
	}
	br, err := t.begin(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query implements dbsqlc.DBTX.
func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	switch {
	case t.beginErr != nil:
		return nil, t.errBegin()
	case t.tx != nil:
		return t.tx.Query(ctx, sql, args...)
	}
	br, err := t.begin(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close() //nolint:errcheck // err says why
		return nil, err
	}
	return &firstRows{Rows: rows, br: br}, nil
}

// QueryRow implements dbsqlc.DBTX.
func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	switch {
	case t.beginErr != nil:
		return errRow{t.errBegin()}
	case t.tx != nil:
		return t.tx.QueryRow(ctx, sql, args...)
	}
	br, err := t.begin(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return errRow{err}
	}
	return firstRow{row: br.QueryRow(), br: br}
}

// SendBatch implements dbsqlc.DBTX: as the first statement, b's queries
// follow BEGIN in the same batch.
func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	switch {
	case t.beginErr != nil:
		return pgx.FailedBatchResults(b, t.errBegin())
	case t.tx != nil:
		return t.tx.SendBatch(ctx, b)
	}
	br, err := t.begin(ctx, func(tb *pgx.Batch) { tb.QueuedQueries = append(tb.QueuedQueries, b.QueuedQueries...) })
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

// Begin starts a nested transaction (a savepoint), as pgx.Tx's Begin: the
// purges run in one. As the first statement it begins the transaction
// alone first (the purges are rare and long).
func (t *lazyTx) Begin(ctx context.Context) (pgx.Tx, error) {
	switch {
	case t.beginErr != nil:
		return nil, t.errBegin()
	case t.tx == nil:
		br, err := t.begin(ctx, func(*pgx.Batch) {})
		if err != nil {
			return nil, err
		}
		if err := br.Close(); err != nil {
			return nil, err
		}
	}
	return t.tx.Begin(ctx)
}

// commit commits the transaction, if a statement began it.
func (t *lazyTx) commit(ctx context.Context) error {
	switch {
	case t.beginErr != nil:
		return mapErr("begin", t.beginErr)
	case t.tx == nil:
		return nil
	}
	return mapErr("commit", t.tx.Commit(ctx))
}

// rollback rolls the transaction back and releases its connection (a
// no-op after commit; a connection that cannot roll back, say for a
// canceled ctx, is closed, not returned to the pool).
func (t *lazyTx) rollback(ctx context.Context) {
	if t.tx != nil {
		t.tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	}
}

// firstRows are the rows of a transaction's first statement: when they
// end, the rest of its batch (the pipeline's sync) is read, which leaves
// the connection free for the next statement.
type firstRows struct {
	pgx.Rows
	br   pgx.BatchResults
	done bool
	err  error
}

func (r *firstRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *firstRows) Close() { r.finish() }

func (r *firstRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

func (r *firstRows) finish() {
	if !r.done {
		r.done = true
		r.Rows.Close()
		r.err = r.br.Close()
	}
}

// firstRow is the row of a transaction's first statement; Scan also reads
// the rest of its batch.
type firstRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r firstRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// errRow is a row whose statement could not be sent.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

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
