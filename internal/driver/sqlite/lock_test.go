package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

// TestOpenHoldsTheDatabaseLock: a Driver holds its database's lock from
// Open to Close, so the exclusive lock a restore takes is refused while
// it is open (ErrInUse, naming this process) and had once it is closed;
// while the exclusive lock is held, an Open gives up when its context
// ends, naming the holder, and one that waits opens once it is released.
func TestOpenHoldsTheDatabaseLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	d := open(t, path)
	_, err := sqlite.LockExclusive(path)
	if self := fmt.Sprintf("process %d", os.Getpid()); !errors.Is(err, sqlite.ErrInUse) || !strings.Contains(err.Error(), self) {
		t.Fatalf("LockExclusive of an open database = %v, want ErrInUse naming %s", err, self)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := sqlite.LockExclusive(path)
	if err != nil {
		t.Fatalf("LockExclusive of a closed database: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sqlite.Open(ctx, path); !errors.Is(err, sqlite.ErrInUse) || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("Open under the exclusive lock = %v, want ErrInUse saying a restore holds it", err)
	}
	opened := make(chan error, 1)
	go func() {
		d, err := sqlite.Open(context.Background(), path)
		if err == nil {
			err = d.Close()
		}
		opened <- err
	}()
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open once the exclusive lock is released: %v", err)
	}
}

// TestLockInAReadOnlyDirectory: where the lock file can be neither made
// nor opened (a directory this process may not write), Open takes no lock
// rather than failing: no restore can replace the database there either.
func TestLockInAReadOnlyDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	drivertest.ReadOnlyFile(t, dir)
	l, err := sqlite.LockShared(context.Background(), filepath.Join(dir, "cks.db"))
	if err != nil || l != nil {
		t.Fatalf("the lock in a read-only directory = %v, %v; want none and no error", l, err)
	}
}
