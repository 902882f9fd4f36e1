package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/drivertest"
	"github.com/cks-dev/cks/driver/sqlite"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
)

// seedRow is the task a fault test's database holds before the fault.
func seedRow() driver.TaskRow {
	return driver.TaskRow{Type: "seed", State: "OPEN", MaxAttempts: 3, Revision: 1, Payload: []byte(`{}`),
		Metadata: []byte(`{}`), CreatedAt: drivertest.T0, UpdatedAt: drivertest.T0, StateChangedAt: drivertest.T0}
}

// wantFault fails the test unless err is the storage fault kind (and so
// ErrUnavailable), and no input error.
func wantFault(t testing.TB, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrInvalid) {
		t.Errorf("%s: err = %v, want %v", what, err, kind)
	}
}

// TestStorageFaults: the driver's errors say what the storage did — a file
// this process may not write is ErrStorageReadOnly for every write (reads
// go on), a file at its size cap ErrStorageFull — so the services above can
// report them (store.ErrUnavailable) instead of an internal error.
func TestStorageFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("ReadOnly", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cks.db")
		d := open(t, path)
		if _, err := d.Executor().TaskInsertMany(ctx, []driver.TaskRow{seedRow()}); err != nil {
			t.Fatal(err)
		}
		d.Close()
		backendtest.ReadOnlyFile(t, path)
		d = open(t, path)
		ex := d.Executor()
		_, err := ex.TaskInsertMany(ctx, []driver.TaskRow{seedRow()})
		wantFault(t, "TaskInsertMany", err, store.ErrStorageReadOnly)
		wantFault(t, "LivenessUpsert", ex.LivenessUpsert(ctx, driver.LivenessRow{InstanceID: "i", ProcessKind: "k",
			Hostname: "h", PID: 1, LivenessIntervalS: 1, StartedAt: drivertest.T0, LastHeartbeatAt: drivertest.T0}), store.ErrStorageReadOnly)
		err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			return ex.Notify(ctx, store.TopicTasksReady)
		})
		wantFault(t, "Notify in a transaction", err, store.ErrStorageReadOnly)
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{1, 2}})
		if err != nil || len(rows) != 1 || rows[0].Type != "seed" {
			t.Fatalf("reads of a read-only database: %+v, %v; want the seed task alone", rows, err)
		}
	})
	t.Run("Full", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cks.db")
		d := open(t, path)
		if err := sqlite.CapPages(ctx, d, 4); err != nil {
			t.Fatal(err)
		}
		big := seedRow()
		big.Description = strings.Repeat("x", 8<<10)
		var err error
		written := 0
		for ; written < 1000 && err == nil; written++ {
			_, err = d.Executor().TaskInsertMany(ctx, []driver.TaskRow{big})
		}
		wantFault(t, "TaskInsertMany into a full database", err, store.ErrStorageFull)
		n, cerr := d.Executor().TaskCount(ctx, driver.TaskCountParams{})
		if cerr != nil || n != written-1 {
			t.Fatalf("%d tasks (%v) after %d inserts, the last refused; want %d", n, cerr, written, written-1)
		}
	})
}
