package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/cks-dev/cks/internal/base/lifecycle"
)

// checkpointInterval is the least time between two checkpoints: while
// writes go on, the WAL holds at most this long's pages beyond what readers
// still need.
const checkpointInterval = 250 * time.Millisecond

// checkpointer moves the WAL's pages into the database file off the write
// path. SQLite's automatic checkpoint runs inside the commit that crosses
// its threshold, on the one writer connection, so every write queued behind
// that commit waits for it (3 % of bench ledger's CPU at 16 workers, all of
// it on the writer's serial path). The writer runs with
// wal_autocheckpoint(0) instead, and this goroutine, on a connection of its
// own, runs a PASSIVE checkpoint (which waits for no writer or reader) after
// commits, at most once per checkpointInterval — as Litestream does.
// Whatever is left when the last connection to the file closes, SQLite
// checkpoints then. The goroutine is a lifecycle.Base: started with the
// Driver, stopped (and waited for) by its Close.
type checkpointer struct {
	db   *sql.DB
	wake chan struct{}
	base *lifecycle.Base

	mu sync.Mutex
	// runs counts the checkpoints that ran; last is the latest one's
	// outcome (for tests).
	runs int
	last checkpoint
}

// checkpoint is what PRAGMA wal_checkpoint reports: whether another
// connection held the checkpoint, the frames in the WAL, and how many of
// them are in the database file now.
type checkpoint struct {
	Busy, Log, Checkpointed int
}

// startCheckpointer opens the checkpoint connection of path and starts its
// goroutine; close ends both.
func startCheckpointer(ctx context.Context, path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn(path, url.Values{"_pragma": {"busy_timeout(0)"}}))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, wake: make(chan struct{}, 1)}
	c.base = lifecycle.New(lifecycle.Config{Run: c.loop, OnPanic: func(v any, stack []byte) {
		// The WAL then grows until the last connection closes; reads
		// still find every page.
		slog.Default().Error("sqlite: the WAL checkpointer panicked; no more checkpoints", "panic", v, "stack", string(stack))
	}})
	if err := c.base.Start(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return c, nil
}

// poke tells the checkpointer that a commit added to the WAL; it never
// blocks.
func (c *checkpointer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// loop is the Base's loop: a checkpoint after each poke, at most one per
// checkpointInterval, until ctx ends.
func (c *checkpointer) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		var ck checkpoint
		// A failed checkpoint (the file gone read-only, say) leaves the
		// pages in the WAL, where reads find them; the next commit's poke
		// tries again.
		if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&ck.Busy, &ck.Log, &ck.Checkpointed); err == nil {
			c.mu.Lock()
			c.runs++
			c.last = ck
			c.mu.Unlock()
		}
		// Wall time, not the Driver's clock: the pause paces file I/O,
		// and a test's fake clock must not see a timer it did not arm.
		t := time.NewTimer(checkpointInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// close stops the goroutine, waits for it to end and closes the
// connection.
func (c *checkpointer) close() error {
	c.base.Stop(context.Background()) //nolint:errcheck // without a deadline Stop only returns nil
	return c.db.Close()
}
