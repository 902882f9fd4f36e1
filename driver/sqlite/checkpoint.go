package sqlite

import (
	"context"
	"database/sql"
	"net/url"
	"sync"
	"time"
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
// checkpoints then.
type checkpointer struct {
	db   *sql.DB
	wake chan struct{}
	stop context.CancelFunc
	done chan struct{}

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
// goroutine; Close ends both.
func startCheckpointer(path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn(path, url.Values{"_pragma": {"busy_timeout(0)"}}))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, wake: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go c.loop(ctx)
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

func (c *checkpointer) loop(ctx context.Context) {
	defer close(c.done)
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

// close stops the goroutine and closes the connection.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}
