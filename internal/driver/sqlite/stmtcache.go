package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxCachedStatements bounds the prepared-statement cache.
const maxCachedStatements = 256

// stmtCache holds statements prepared on the writer, by query text. Parsing
// is a large share of a small write's cost, so the hot statements are
// prepared once. A statement is prepared after the transaction that first
// ran it (the writer has one connection, which that transaction held).
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func (c *stmtCache) get(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[q]
}

// prepare prepares the queries not cached yet on db, while there is room.
// A query that fails to prepare runs unprepared next time too.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB, queries []string) {
	for _, q := range queries {
		c.mu.Lock()
		_, have := c.stmts[q]
		full := len(c.stmts) >= maxCachedStatements
		c.mu.Unlock()
		if have || full {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		if _, have := c.stmts[q]; have {
			st.Close()
		} else {
			c.stmts[q] = st
		}
		c.mu.Unlock()
	}
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	c.stmts = nil
	return errors.Join(errs...)
}

// wtx is a write transaction (dbsqlc.DBTX) that runs cached statements
// where it can and remembers the queries it ran unprepared.
//
// Its statements run under ctx, which never ends, whatever context the
// caller passes: SQLite answers a context's end by interrupting the
// statement, and an interrupted write inside a transaction may roll back
// the whole transaction — in a group commit the other members' writes too.
// The caller's context is checked before each statement instead: once it
// has ended, the statement fails with its error without running.
type wtx struct {
	*sql.Tx
	cache  *stmtCache
	ctx    context.Context
	missed []string
	// bound are the cached statements bound to this transaction, so that
	// the many executions of one statement in a group bind it once.
	bound map[*sql.Stmt]*sql.Stmt
	// local are the queries not cached yet, prepared on this transaction
	// at their first execution in it: a bulk write's first transaction
	// (a thousand inserts of an enqueue) would otherwise parse its
	// statement once a row.
	local map[string]*sql.Stmt
	// notified is set by Notify: the commit wakes this Driver's listeners.
	notified bool
	// times are the texts of the times written lately.
	times timeTexts
}

func (w *wtx) stmt(q string) *sql.Stmt {
	if st := w.cache.get(q); st != nil {
		if b, ok := w.bound[st]; ok {
			return b
		}
		if w.bound == nil {
			w.bound = map[*sql.Stmt]*sql.Stmt{}
		}
		b := w.Tx.StmtContext(w.ctx, st)
		w.bound[st] = b
		return b
	}
	if st, ok := w.local[q]; ok {
		return st
	}
	w.missed = append(w.missed, q)
	if w.local == nil {
		w.local = map[string]*sql.Stmt{}
	}
	// A query that fails to prepare runs unprepared (nil), and its error
	// is the execution's.
	st, err := w.Tx.PrepareContext(w.ctx, q)
	if err != nil {
		st = nil
	}
	w.local[q] = st
	return st
}

// QueryContext runs q in the transaction, unless ctx has ended.
func (w *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if st := w.stmt(q); st != nil {
		return st.QueryContext(w.ctx, args...)
	}
	return w.Tx.QueryContext(w.ctx, q, args...)
}

// QueryRowContext runs q in the transaction, unless ctx has ended (then
// database/sql returns the row of ctx's error without touching the
// connection).
func (w *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if ctx.Err() != nil {
		return w.Tx.QueryRowContext(ctx, q, args...)
	}
	if st := w.stmt(q); st != nil {
		return st.QueryRowContext(w.ctx, args...)
	}
	return w.Tx.QueryRowContext(w.ctx, q, args...)
}

// ExecContext runs q in the transaction, unless ctx has ended.
func (w *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if st := w.stmt(q); st != nil {
		return st.ExecContext(w.ctx, args...)
	}
	return w.Tx.ExecContext(w.ctx, q, args...)
}
