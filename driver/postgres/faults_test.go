package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/drivertest"
	"github.com/cks-dev/cks/driver/postgres"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
	"github.com/jackc/pgx/v5/pgconn"
)

// wantFault fails the test unless err is the storage fault kind (and so
// ErrUnavailable), and no input error.
func wantFault(t testing.TB, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrInvalid) {
		t.Errorf("%s: err = %v, want %v", what, err, kind)
	}
}

// TestStorageFaults: a server that runs this driver's transactions
// read-only (a hot standby, default_transaction_read_only) makes every
// write ErrStorageReadOnly while reads go on; disk_full is ErrStorageFull
// (a test server cannot be filled: its mapping is checked on the error).
func TestStorageFaults(t *testing.T) {
	ctx := context.Background()
	url := backendtest.PostgresURL(t)
	seed := driver.TaskRow{Type: "seed", State: "OPEN", MaxAttempts: 3, Revision: 1,
		CreatedAt: drivertest.T0, UpdatedAt: drivertest.T0, StateChangedAt: drivertest.T0}
	if _, err := open(t, url).Executor().TaskInsertMany(ctx, []driver.TaskRow{seed}); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	d := open(t, url+sep+"default_transaction_read_only=on")
	ex := d.Executor()
	_, err := ex.TaskInsertMany(ctx, []driver.TaskRow{seed})
	wantFault(t, "TaskInsertMany", err, store.ErrStorageReadOnly)
	err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{1}, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		_, err = ex.TaskUpdateMany(ctx, rows)
		return err
	})
	wantFault(t, "a write transaction", err, store.ErrStorageReadOnly)
	rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{1, 2}})
	if err != nil || len(rows) != 1 || rows[0].Type != "seed" {
		t.Fatalf("reads of a read-only server: %+v, %v; want the seed task alone", rows, err)
	}
	// Health says so, and why, for the hub's start-up error; a writable
	// handle on the same schema is healthy.
	err = d.Health(ctx)
	wantFault(t, "Health", err, store.ErrStorageReadOnly)
	if err == nil || !strings.Contains(err.Error(), "hot standby") || !strings.Contains(err.Error(), "default_transaction_read_only") {
		t.Errorf("Health of a read-only server: %v, want it naming the causes", err)
	}
	if err := open(t, url).Health(ctx); err != nil {
		t.Errorf("Health of a writable server: %v", err)
	}
	wantFault(t, "disk_full", postgres.MapErr("task insert", &pgconn.PgError{Code: "53100", Message: "could not extend file"}),
		store.ErrStorageFull)
	if err := postgres.MapErr("task insert", &pgconn.PgError{Code: "23502"}); errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a not-null violation maps to %v, want no storage fault", err)
	}
}

// TestOpenReadOnlyNeedsCurrentSchema: Open on a read-only server whose
// schema would have to be created or upgraded fails at once with
// ErrStorageReadOnly, saying why, before the schema step's DDL would.
func TestOpenReadOnlyNeedsCurrentSchema(t *testing.T) {
	url := backendtest.PostgresURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	d, err := postgres.Open(testCtx(t), url+sep+"default_transaction_read_only=on")
	if err == nil {
		d.Close()
		t.Fatal("Open of a read-only server with an empty schema succeeded")
	}
	if !errors.Is(err, store.ErrStorageReadOnly) || !strings.Contains(err.Error(), "hot standby") || !strings.Contains(err.Error(), "default_transaction_read_only") {
		t.Fatalf("Open of a read-only server with an empty schema: %v, want ErrStorageReadOnly naming the causes", err)
	}
}
