package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/sqlite"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
)

// object is a valid object row whose content is size bytes of JSON.
func object(size int) driver.ObjectRow {
	return driver.ObjectRow{Kind: "note", Content: []byte(`{"a":"` + strings.Repeat("x", size) + `"}`), ContentHash: "h",
		HeadVersion: 1, Heads: 1}
}

// TestWriteToReadOnlyFile: a database file this process may not write opens
// (SQLite opens it read-only), reads work, and a write fails with
// store.ErrStorageReadOnly, matching store.ErrUnavailable.
func TestWriteToReadOnlyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	seed := open(t, path)
	if _, err := seed.Executor().ObjectInsertMany(context.Background(), []driver.ObjectRow{object(1)}); err != nil {
		t.Fatal(err)
	}
	seed.Close()
	backendtest.ReadOnlyFile(t, path)
	d := open(t, path)
	if got, err := d.Executor().ObjectList(context.Background(), driver.ObjectListParams{Limit: 10}); err != nil || len(got) != 1 {
		t.Fatalf("read of a read-only file: %d objects, %v", len(got), err)
	}
	_, err := d.Executor().ObjectInsertMany(context.Background(), []driver.ObjectRow{object(1)})
	if !errors.Is(err, store.ErrStorageReadOnly) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write to a read-only file: %v, want ErrStorageReadOnly", err)
	}
}

// TestWriteToFullDatabase: a write the file has no room for fails with
// store.ErrStorageFull and writes nothing; a small write still fits.
func TestWriteToFullDatabase(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "cks.db"))
	ctx := context.Background()
	if err := sqlite.CapPages(ctx, d, pageCount(t, d.Path())+1); err != nil {
		t.Fatal(err)
	}
	_, err := d.Executor().ObjectInsertMany(ctx, []driver.ObjectRow{object(64 << 10)})
	if !errors.Is(err, store.ErrStorageFull) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write beyond the cap: %v, want ErrStorageFull", err)
	}
	if got, err := d.Executor().ObjectList(ctx, driver.ObjectListParams{Limit: 10}); err != nil || len(got) != 0 {
		t.Fatalf("after the refused write: %d objects, %v", len(got), err)
	}
}

// pageCount is the page count of the database at path.
func pageCount(t testing.TB, path string) int {
	t.Helper()
	var n int
	if err := rawDB(t, path).QueryRow("PRAGMA page_count").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
