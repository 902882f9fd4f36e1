package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
	"github.com/cks-dev/cks/store/sqlite"
	"github.com/cks-dev/cks/store/storetest"
)

// seeded creates a database holding storetest.SeedTask and returns its path,
// closed.
func seeded(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cks.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Enqueue(context.Background(), storetest.SeedTask); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStorageFaults: a database file this process may not write (SQLite
// then opens it read-only) and one capped by max_page_count (a full disk).
func TestStorageFaults(t *testing.T) {
	storetest.StorageFaults(t, storetest.FaultStores{
		ReadOnly: func(t testing.TB, opts ...store.Option) store.Store {
			path := seeded(t)
			backendtest.ReadOnlyFile(t, path)
			return open(t, path, opts...)
		},
		Full: func(t testing.TB, opts ...store.Option) store.Store {
			s := open(t, seeded(t), opts...)
			if err := sqlite.CapPages(s, context.Background(), 4); err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}

// TestReadOnlyHealthNamesTheFile: the read-only report says which file and
// why, for the hub's start-up error.
func TestReadOnlyHealthNamesTheFile(t *testing.T) {
	path := seeded(t)
	backendtest.ReadOnlyFile(t, path)
	err := open(t, path).StorageHealth(context.Background())
	if !errors.Is(err, store.ErrStorageReadOnly) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("StorageHealth: %v, want read-only naming %s", err, path)
	}
}
