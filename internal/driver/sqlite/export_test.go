package sqlite

import (
	"context"

	"github.com/cks-dev/cks/internal/driver"
)

// Queued reports how many write transactions of d wait for the next group
// commit.
func Queued(d *Driver) int { return d.writes.Queued() }

// Commits reports how many write transactions d has committed.
func Commits(d *Driver) int64 { return d.commits.Load() }

// ExecInTx runs q in ex's write transaction, as the primitives run theirs.
func ExecInTx(ctx context.Context, ex driver.Executor, q string) error {
	_, err := ex.(*executor).tx.ExecContext(ctx, q)
	return err
}

// Checkpoint is what a checkpoint of d's checkpointer reported.
type Checkpoint = checkpoint

// Checkpoints reports how many checkpoints d's checkpointer ran and the
// latest one's outcome.
func Checkpoints(d *Driver) (int, Checkpoint) {
	d.ckpt.mu.Lock()
	defer d.ckpt.mu.Unlock()
	return d.ckpt.runs, d.ckpt.last
}

// WriterPragma reads PRAGMA name on d's writer connection.
func WriterPragma(ctx context.Context, d *Driver, name string) (int, error) {
	var v int
	err := d.writer.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	return v, err
}

// CheckpointerStopped returns a channel closed once d's checkpointer
// goroutine has ended.
func CheckpointerStopped(d *Driver) <-chan struct{} { return d.ckpt.base.Stopped() }

// LockShared is the shared lock a Driver takes at Open.
func LockShared(ctx context.Context, path string) (*FileLock, error) { return lockShared(ctx, path) }
