package postgres_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/postgres"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/internal/waitfor"
)

// tripConn counts round trips on a connection: a write that follows an
// answer (or is the first) is one (the client sends again after it heard
// back). Counted at the write, not at the read after it: pgconn may have a
// read in flight while it writes (its background reader), which a count at
// the read's start would miss.
type tripConn struct {
	net.Conn
	trips *atomic.Int64
	mu    sync.Mutex
	wrote bool
}

func (c *tripConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.wrote {
		c.wrote = true
		c.trips.Add(1)
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *tripConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.wrote = false
		c.mu.Unlock()
	}
	return n, err
}

// openCounting opens a Driver on url with one pool connection whose round
// trips trips counts; the pool does not ping the connection it hands out,
// so every trip counted is a statement's.
func openCounting(t testing.TB, url string, trips *atomic.Int64) *postgres.Driver {
	t.Helper()
	d, err := postgres.OpenConfigured(testCtx(t), url, func(cfg *pgxpool.Config) {
		cfg.MaxConns, cfg.MinConns = 1, 0
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		dial := cfg.ConnConfig.DialFunc
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &tripConn{Conn: c, trips: trips}, nil
		}
	})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestTxRoundTrips: BEGIN goes out with a transaction's first statement,
// whichever way that statement is sent (Exec, Query, QueryRow, a batch): a
// one-statement transaction is two round trips (BEGIN and the statement,
// then COMMIT), not three, once the connection has prepared its
// statements; a transaction that sends nothing costs none.
func TestTxRoundTrips(t *testing.T) {
	url := drivertest.PostgresURL(t)
	var trips atomic.Int64
	d := openCounting(t, url, &trips)
	ctx := testCtx(t)
	if err := rawExec(t, url, `CREATE TABLE trips (n int)`); err != nil {
		t.Fatal(err)
	}
	query := func(ctx context.Context, db dbsqlc.DBTX) error {
		rows, err := db.Query(ctx, `SELECT n FROM trips`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	for _, c := range []struct {
		name     string
		readOnly bool
		fn       func(ctx context.Context, db dbsqlc.DBTX) error
		want     int64
	}{
		{"Exec", false, func(ctx context.Context, db dbsqlc.DBTX) error {
			_, err := db.Exec(ctx, `INSERT INTO trips VALUES ($1)`, 1)
			return err
		}, 2},
		{"Query", false, query, 2},
		{"QueryRead", true, query, 2},
		{"QueryRow", true, func(ctx context.Context, db dbsqlc.DBTX) error {
			var n int
			return db.QueryRow(ctx, `SELECT count(*) FROM trips WHERE n > $1`, 0).Scan(&n)
		}, 2},
		{"SendBatch", false, func(ctx context.Context, db dbsqlc.DBTX) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO trips VALUES ($1)`, 2)
			b.Queue(`INSERT INTO trips VALUES ($1)`, 3)
			return db.SendBatch(ctx, b).Close()
		}, 2},
		{"TwoStatements", false, func(ctx context.Context, db dbsqlc.DBTX) error {
			if err := query(ctx, db); err != nil {
				return err
			}
			_, err := db.Exec(ctx, `INSERT INTO trips VALUES ($1)`, 4)
			return err
		}, 3},
		{"None", false, func(context.Context, dbsqlc.DBTX) error { return nil }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The first run prepares the connection's statements.
			for run := range 2 {
				before := trips.Load()
				if err := postgres.WithTxDB(ctx, d, driver.TxOptions{ReadOnly: c.readOnly}, c.fn); err != nil {
					t.Fatal(err)
				}
				if got := trips.Load() - before; run == 1 && got != c.want {
					t.Errorf("%d round trips, want %d", got, c.want)
				}
			}
		})
	}
}

// TestSingleTx: a Single transaction is its one statement, sent alone
// (one round trip, no BEGIN or COMMIT), committed as it ends; an error of
// the statement leaves nothing; a second statement fails with
// driver.ErrSingle.
func TestSingleTx(t *testing.T) {
	url := drivertest.PostgresURL(t)
	var trips atomic.Int64
	d := openCounting(t, url, &trips)
	ctx := testCtx(t)
	if err := rawExec(t, url, `CREATE TABLE single (k int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	single := driver.TxOptions{Single: true}
	count := func() int {
		t.Helper()
		var n int
		err := postgres.WithTxDB(ctx, d, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, db dbsqlc.DBTX) error {
			return db.QueryRow(ctx, `SELECT count(*) FROM single`).Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for k, c := range []struct {
		name string
		fn   func(ctx context.Context, db dbsqlc.DBTX, k int) error
	}{
		{"Exec", func(ctx context.Context, db dbsqlc.DBTX, k int) error {
			_, err := db.Exec(ctx, `INSERT INTO single VALUES ($1)`, k)
			return err
		}},
		{"Query", func(ctx context.Context, db dbsqlc.DBTX, k int) error {
			rows, err := db.Query(ctx, `INSERT INTO single VALUES ($1) RETURNING k`, k)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		}},
		{"QueryRow", func(ctx context.Context, db dbsqlc.DBTX, k int) error {
			var got int
			return db.QueryRow(ctx, `INSERT INTO single VALUES ($1) RETURNING k`, k).Scan(&got)
		}},
		{"SendBatch", func(ctx context.Context, db dbsqlc.DBTX, k int) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO single VALUES ($1)`, k)
			return db.SendBatch(ctx, b).Close()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The first run prepares the connection's statement.
			for run := range 2 {
				rows := count()
				before := trips.Load()
				key := 100*k + run
				if err := postgres.WithTxDB(ctx, d, single, func(ctx context.Context, db dbsqlc.DBTX) error {
					return c.fn(ctx, db, key)
				}); err != nil {
					t.Fatal(err)
				}
				if got := trips.Load() - before; run == 1 && got != 1 {
					t.Errorf("%d round trips, want 1", got)
				}
				if got := count(); got != rows+1 {
					t.Errorf("%d rows after the insert, want %d: not committed", got, rows+1)
				}
			}
			// A key taken fails, and writes nothing (a failed batch makes
			// pgx prepare its statements again: last, not to count).
			rows := count()
			err := postgres.WithTxDB(ctx, d, single, func(ctx context.Context, db dbsqlc.DBTX) error {
				return c.fn(ctx, db, 100*k)
			})
			if !errors.Is(err, driver.ErrUniqueViolation) && sqlState(err) != "23505" {
				t.Errorf("duplicate insert: %v, want a unique violation", err)
			}
			if got := count(); got != rows {
				t.Errorf("%d rows after a failed insert, want %d", got, rows)
			}
		})
	}
	err := postgres.WithTxDB(ctx, d, single, func(ctx context.Context, db dbsqlc.DBTX) error {
		if _, err := db.Exec(ctx, `INSERT INTO single VALUES (1000)`); err != nil {
			return err
		}
		_, err := db.Exec(ctx, `INSERT INTO single VALUES (1001)`)
		return err
	})
	if !errors.Is(err, driver.ErrSingle) {
		t.Errorf("a second statement: %v, want driver.ErrSingle", err)
	}
}

// sqlState is the SQLSTATE of err's Postgres error, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// TestTxFirstStatementInTransaction: the first statement runs in the
// transaction BEGIN opened, with its isolation level and access mode, and
// the second in the same one.
func TestTxFirstStatementInTransaction(t *testing.T) {
	d := open(t, drivertest.PostgresURL(t))
	ctx := testCtx(t)
	for _, c := range []struct {
		readOnly        bool
		iso, readOnlyOn string
	}{
		{false, "read committed", "off"},
		{true, "repeatable read", "on"},
	} {
		var iso, ro string
		var xid1, xid2 int64
		err := postgres.WithTxDB(ctx, d, driver.TxOptions{ReadOnly: c.readOnly}, func(ctx context.Context, db dbsqlc.DBTX) error {
			err := db.QueryRow(ctx, `SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'),
				txid_current()`).Scan(&iso, &ro, &xid1)
			if err != nil {
				return err
			}
			return db.QueryRow(ctx, `SELECT txid_current()`).Scan(&xid2)
		})
		if err != nil {
			t.Fatal(err)
		}
		if iso != c.iso || ro != c.readOnlyOn || xid1 != xid2 {
			t.Errorf("read-only %v: isolation %q, read only %q, transactions %d and %d; want %q, %q, one transaction",
				c.readOnly, iso, ro, xid1, xid2, c.iso, c.readOnlyOn)
		}
	}
}

// TestTxFirstStatementErrors: an error of the first statement is the
// statement's, the transaction is rolled back (nothing of it stays) and
// the connection serves the next one; an error before BEGIN (a closed
// pool) is the statement's and WithTx's, naming the begin.
func TestTxFirstStatementErrors(t *testing.T) {
	url := drivertest.PostgresURL(t)
	var trips atomic.Int64
	d := openCounting(t, url, &trips)
	ctx := testCtx(t)
	if err := rawExec(t, url, `CREATE TABLE once (k int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(ctx context.Context, db dbsqlc.DBTX) error {
		_, err := db.Exec(ctx, `INSERT INTO once VALUES ($1)`, 1)
		return err
	}
	if err := postgres.WithTxDB(ctx, d, driver.TxOptions{}, insert); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Exec", "Query", "QueryRow", "SendBatch"} {
		var stmtErr error
		err := postgres.WithTxDB(ctx, d, driver.TxOptions{}, func(ctx context.Context, db dbsqlc.DBTX) error {
			const q = `INSERT INTO once VALUES ($1), ($2) RETURNING k`
			switch kind {
			case "Exec":
				_, stmtErr = db.Exec(ctx, q, 2, 1)
			case "Query":
				rows, err := db.Query(ctx, q, 2, 1)
				if err == nil {
					for rows.Next() {
					}
					rows.Close()
					err = rows.Err()
				}
				stmtErr = err
			case "QueryRow":
				var k int
				stmtErr = db.QueryRow(ctx, q, 2, 1).Scan(&k)
			case "SendBatch":
				b := &pgx.Batch{}
				b.Queue(q, 2, 1)
				stmtErr = db.SendBatch(ctx, b).Close()
			}
			return stmtErr
		})
		if sqlState(stmtErr) != "23505" || !errors.Is(err, stmtErr) {
			t.Errorf("%s: statement error %v, WithTx %v; want the unique violation from both", kind, stmtErr, err)
		}
	}
	var n int
	err := postgres.WithTxDB(ctx, d, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, db dbsqlc.DBTX) error {
		return db.QueryRow(ctx, `SELECT count(*) FROM once`).Scan(&n)
	})
	if err != nil || n != 1 {
		t.Fatalf("after the failed inserts: %d rows (%v), want the first insert's one", n, err)
	}

	d.Close()
	var stmtErr error
	err = postgres.WithTxDB(ctx, d, driver.TxOptions{}, func(ctx context.Context, db dbsqlc.DBTX) error {
		stmtErr = insert(ctx, db)
		return stmtErr
	})
	if stmtErr == nil || !strings.Contains(stmtErr.Error(), "begin: ") || !errors.Is(err, stmtErr) {
		t.Errorf("on a closed pool: statement error %v, WithTx %v; want a begin error from both", stmtErr, err)
	}
	// fn ignoring the statement's error: WithTx still fails.
	err = postgres.WithTxDB(ctx, d, driver.TxOptions{}, func(ctx context.Context, db dbsqlc.DBTX) error {
		_ = insert(ctx, db)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "begin: ") {
		t.Errorf("on a closed pool, the error ignored: WithTx = %v, want the begin error", err)
	}
}

// TestTxCanceledFirstStatement: a context canceled while the first
// statement waits (for a row lock) ends the transaction with the
// cancellation, and the pool's one connection is not handed out again in
// a transaction: the next one runs, and no session of the pool stays idle
// in transaction.
func TestTxCanceledFirstStatement(t *testing.T) {
	url := drivertest.PostgresURL(t)
	var trips atomic.Int64
	d := openCounting(t, url, &trips)
	ctx := testCtx(t)
	if err := rawExec(t, url, `CREATE TABLE locked (k int PRIMARY KEY); INSERT INTO locked VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	holder := conn(t, url)
	hold, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT k FROM locked FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	update := func(ctx context.Context, db dbsqlc.DBTX) error {
		_, err := db.Exec(ctx, `UPDATE locked SET k = k WHERE k = $1`, 1)
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- postgres.WithTxDB(cctx, d, driver.TxOptions{}, update) }()
	watch := conn(t, url)
	waitfor.Until(t, "the first statement to wait for the row lock", func() bool {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE 'UPDATE locked%'`).Scan(&n)
		return err == nil && n == 1
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WithTx = %v, want the cancellation", err)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := postgres.WithTxDB(ctx, d, driver.TxOptions{}, update); err != nil {
		t.Fatalf("the next transaction: %v", err)
	}
	// The canceled connection is closed, but its server session ends a
	// moment later (the backend sees the socket close in its own time): wait
	// for it to go. A connection handed out again in its transaction would
	// stay idle in transaction and fail the wait.
	waitfor.Until(t, "no session of the pool left idle in transaction", func() bool {
		var idle int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND state LIKE 'idle in transaction%'`).Scan(&idle)
		return err == nil && idle == 0
	})
}

// TestTxPurgeSavepoint: the purges' nested transaction (a savepoint) works
// as a transaction's first statement.
func TestTxPurgeSavepoint(t *testing.T) {
	d := open(t, drivertest.PostgresURL(t))
	ctx := testCtx(t)
	err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		ids, err := ex.TaskPurge(ctx, driver.TaskPurgeParams{IDs: []int64{1}})
		if len(ids) != 0 {
			t.Errorf("purged %v of an empty ledger", ids)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
