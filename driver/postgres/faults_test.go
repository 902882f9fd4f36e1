package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
)

// TestWriteToReadOnlyServer: on a connection whose transactions are
// read-only (as on a hot standby, or with default_transaction_read_only
// set), an up-to-date schema opens, reads work, and a write fails with
// store.ErrStorageReadOnly, matching store.ErrUnavailable.
func TestWriteToReadOnlyServer(t *testing.T) {
	url := backendtest.PostgresURL(t)
	row := driver.ObjectRow{Kind: "note", Content: []byte(`{}`), ContentHash: "h", HeadVersion: 1, Heads: 1}
	if _, err := open(t, url).Executor().ObjectInsertMany(testCtx(t), []driver.ObjectRow{row}); err != nil {
		t.Fatal(err)
	}
	d := open(t, url+"&default_transaction_read_only=on")
	if got, err := d.Executor().ObjectList(testCtx(t), driver.ObjectListParams{Limit: 10}); err != nil || len(got) != 1 {
		t.Fatalf("read on a read-only connection: %d objects, %v", len(got), err)
	}
	_, err := d.Executor().ObjectInsertMany(testCtx(t), []driver.ObjectRow{row})
	if !errors.Is(err, store.ErrStorageReadOnly) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write on a read-only connection: %v, want ErrStorageReadOnly", err)
	}
	err = d.WithTx(testCtx(t), driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		return ex.Notify(ctx, "t")
	})
	if err != nil && !errors.Is(err, store.ErrStorageReadOnly) {
		t.Fatalf("a transaction on a read-only connection: %v, want nil or ErrStorageReadOnly", err)
	}
}
