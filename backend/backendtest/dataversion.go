package backendtest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/cks-dev/cks/backend"
)

// Commits counts the commits to a SQLite store's database file, for a
// harness (a fuzz target's) to tell that a refused request wrote nothing:
// PRAGMA data_version, read on a read-only connection of its own, moves
// with every commit of any other connection.
type Commits struct {
	s    *backend.Backend
	conn *sql.Conn
}

// WatchCommits opens the connection of Commits on s, whose file is path;
// it is closed when tb ends.
func WatchCommits(tb testing.TB, s *backend.Backend, path string) *Commits {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		db.Close()
	})
	return &Commits{s: s, conn: conn}
}

// Count is the count of commits so far, once the store has published the
// task moves it made (tasks_moved, which it publishes after them, in the
// background): a move of a setup must not count against the request that
// follows it.
func (c *Commits) Count(tb testing.TB) int64 {
	tb.Helper()
	if err := c.s.FlushMoves(context.Background()); err != nil {
		tb.Fatal(err)
	}
	var v int64
	if err := c.conn.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&v); err != nil {
		tb.Fatal(err)
	}
	return v
}
