package peers

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the driver cks uses; River's riversqlite runs over it too

	"github.com/riverqueue/river/riverdriver/riversqlite"
)

// sqliteDSN is a modernc.org/sqlite DSN for path with the settings cks's
// writer connection uses: WAL, synchronous NORMAL, BEGIN IMMEDIATE
// transactions. busyTimeout is SQLite's busy_timeout.
func sqliteDSN(path string, busyTimeout time.Duration) string {
	q := url.Values{}
	for _, p := range []string{
		fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"journal_mode(WAL)",
		"synchronous(NORMAL)",
	} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// openRiverSQLite opens the database at path for River with one connection,
// as riversqlite's documentation advises (River runs operations in parallel;
// SQLite allows one writer), and creates River's tables.
func openRiverSQLite(ctx context.Context, path string) (*sql.DB, *riversqlite.Driver, error) {
	db, err := sql.Open("sqlite", sqliteDSN(path, 5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("peers: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	drv := riversqlite.New(db)
	if err := migrateRiver(ctx, drv, ""); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, drv, nil
}

// sqliteCeiling measures the raw commit ceiling of SQLite with cks's
// settings: n transactions of one single-row INSERT each, on one
// connection, as fast as they go.
func sqliteCeiling(ctx context.Context, path string, n int, progress func(string, int, int)) (time.Duration, error) {
	db, err := sql.Open("sqlite", sqliteDSN(path, 0))
	if err != nil {
		return 0, fmt.Errorf("peers: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		return 0, fmt.Errorf("peers: sqlite ceiling: %w", err)
	}
	stmt, err := db.PrepareContext(ctx, `INSERT INTO t (v) VALUES (?)`)
	if err != nil {
		return 0, fmt.Errorf("peers: sqlite ceiling: %w", err)
	}
	defer stmt.Close()
	start := time.Now()
	for i := range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, fmt.Errorf("peers: sqlite ceiling: %w", err)
		}
		if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, fmt.Sprintf("row %d", i)); err != nil {
			tx.Rollback()
			return 0, fmt.Errorf("peers: sqlite ceiling: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return 0, fmt.Errorf("peers: sqlite ceiling: %w", err)
		}
		if i%5000 == 0 {
			progress("commit", i, n)
		}
	}
	d := time.Since(start)
	progress("commit", n, n)
	return d, nil
}
