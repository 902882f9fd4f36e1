package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/postgres"
)

// TestStorageFaults: a server that runs this driver's transactions
// read-only (a hot standby, default_transaction_read_only) makes every
// write ErrStorageReadOnly while reads go on; disk_full is ErrStorageFull
// (a test server cannot be filled: its mapping is checked on the error).
func TestStorageFaults(t *testing.T) {
	ctx := context.Background()
	url := drivertest.PostgresURL(t)
	if _, err := open(t, url).Executor().TaskInsertMany(ctx, []driver.TaskRow{drivertest.SeedTask()}); err != nil {
		t.Fatal(err)
	}
	// Health says why, for the hub's start-up error; a writable handle on
	// the same schema is healthy.
	err := drivertest.CheckReadOnly(t, open(t, drivertest.ReadOnlyURL(url)))
	if err == nil || !strings.Contains(err.Error(), "hot standby") || !strings.Contains(err.Error(), "default_transaction_read_only") {
		t.Errorf("Health of a read-only server: %v, want it naming the causes", err)
	}
	if err := open(t, url).Health(ctx); err != nil {
		t.Errorf("Health of a writable server: %v", err)
	}
	drivertest.WantFault(t, "disk_full", postgres.MapErr("task insert", &pgconn.PgError{Code: "53100", Message: "could not extend file"}),
		cks.ErrStorageFull)
	if err := postgres.MapErr("task insert", &pgconn.PgError{Code: "23502"}); errors.Is(err, cks.ErrUnavailable) {
		t.Errorf("a not-null violation maps to %v, want no storage fault", err)
	}
}

// TestOpenReadOnlyNeedsCurrentSchema: Open on a read-only server whose
// schema would have to be created or upgraded fails at once with
// ErrStorageReadOnly, saying why, before the schema step's DDL would.
func TestOpenReadOnlyNeedsCurrentSchema(t *testing.T) {
	url := drivertest.PostgresURL(t)
	d, err := postgres.Open(testCtx(t), drivertest.ReadOnlyURL(url))
	if err == nil {
		d.Close()
		t.Fatal("Open of a read-only server with an empty schema succeeded")
	}
	if !errors.Is(err, cks.ErrStorageReadOnly) || !strings.Contains(err.Error(), "hot standby") || !strings.Contains(err.Error(), "default_transaction_read_only") {
		t.Fatalf("Open of a read-only server with an empty schema: %v, want ErrStorageReadOnly naming the causes", err)
	}
}
