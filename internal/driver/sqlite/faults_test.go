package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

// TestStorageFaults: the driver's errors say what the storage did — a file
// this process may not write is ErrStorageReadOnly for every write (reads
// go on), a file at its size cap ErrStorageFull — so the services above can
// report them (cks.ErrUnavailable) instead of an internal error.
func TestStorageFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("ReadOnly", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cks.db")
		d := open(t, path)
		if _, err := d.Executor().TaskInsertMany(ctx, []driver.TaskRow{drivertest.SeedTask()}); err != nil {
			t.Fatal(err)
		}
		d.Close()
		drivertest.ReadOnlyFile(t, path)
		d = open(t, path)
		err := drivertest.CheckReadOnly(t, d)
		// A notification is a write of SQLite's (a counter's bump).
		drivertest.WantFault(t, "Notify in a transaction", d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			return ex.Notify(ctx, cks.TopicTasksReady)
		}), cks.ErrStorageReadOnly)
		// Health says so, naming the file and why, for the hub's start-up
		// error.
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("Health of a read-only file: %v, want it naming %s, not writable", err, path)
		}
	})
	t.Run("Full", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cks.db")
		clk := clock.NewFake(drivertest.T0)
		d := open(t, path, driver.WithClock(clk))
		if err := sqlite.CapPages(ctx, d, 4); err != nil {
			t.Fatal(err)
		}
		if err := d.Health(ctx); err != nil {
			t.Fatalf("Health before any write failed: %v", err)
		}
		big := drivertest.SeedTask()
		big.Description = strings.Repeat("x", 8<<10)
		var err error
		written := 0
		for ; written < 1000 && err == nil; written++ {
			err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				_, err := ex.TaskInsertMany(ctx, []driver.TaskRow{big})
				return err
			})
		}
		drivertest.WantFault(t, "TaskInsertMany into a full database", err, cks.ErrStorageFull)
		n, cerr := d.Executor().TaskCount(ctx, driver.TaskCountParams{})
		if cerr != nil || n != written-1 {
			t.Fatalf("%d tasks (%v) after %d inserts, the last refused; want %d", n, cerr, written, written-1)
		}
		// Health remembers the fault for driver.FaultMemory, by the clock of
		// the options.
		drivertest.WantFault(t, "Health after a write met a full disk", d.Health(ctx), cks.ErrStorageFull)
		clk.Advance(driver.FaultMemory - time.Second)
		drivertest.WantFault(t, "Health within FaultMemory", d.Health(ctx), cks.ErrStorageFull)
		clk.Advance(time.Second)
		if err := d.Health(ctx); err != nil {
			t.Fatalf("Health FaultMemory after the failed write: %v, want nil", err)
		}
	})
}

// TestOpenReadOnlyNeedsCurrentSchema: a read-only file whose schema would
// have to change (tables to create; a journal mode to switch to WAL) is
// refused at Open with cks.ErrStorageReadOnly, naming the file.
func TestOpenReadOnlyNeedsCurrentSchema(t *testing.T) {
	for _, c := range []struct{ name, setup string }{
		{"no tables", `PRAGMA journal_mode = WAL; CREATE TABLE unrelated (x INTEGER)`},
		{"not WAL", `CREATE TABLE unrelated (x INTEGER)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cks.db")
			if err := rawExec(t, path, c.setup); err != nil {
				t.Fatal(err)
			}
			drivertest.ReadOnlyFile(t, path)
			d, err := sqlite.Open(context.Background(), path)
			if err == nil {
				d.Close()
				t.Fatal("Open of a read-only file without the schema succeeded")
			}
			if !errors.Is(err, cks.ErrStorageReadOnly) || !strings.Contains(err.Error(), path+" is read-only") ||
				!strings.Contains(err.Error(), "not writable") {
				t.Fatalf("Open of a read-only file without the schema: %v, want ErrStorageReadOnly naming the file", err)
			}
		})
	}
}
