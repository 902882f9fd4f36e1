package backend_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// opener opens handles of the composite on url with backend.Open.
func opener(url string) backendtest.Opener {
	return func(t testing.TB, opts ...driver.Option) *backend.Backend {
		t.Helper()
		s, err := backend.Open(context.Background(), url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// dialects makes fresh databases of each dialect, opened with backend.Open
// by the URL forms a deployment uses.
var dialects = []struct {
	name  string
	newDB backendtest.NewDB
}{
	{"sqlite", func(t testing.TB) backendtest.Opener {
		return opener("sqlite:" + filepath.Join(t.TempDir(), "cks.db"))
	}},
	{"postgres", func(t testing.TB) backendtest.Opener { return opener(backendtest.PostgresURL(t)) }},
}

// seeded opens a handle on a fresh database, writes backendtest.SeedTask and
// closes it.
func seeded(t testing.TB, open backendtest.Opener) {
	t.Helper()
	s := open(t)
	if _, _, err := s.Tasks.Enqueue(context.Background(), backendtest.SeedTask); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestStorageFaults runs the services' fault checks (backendtest.
// StorageFaults) on each dialect's database. SQLite: a file this process
// may not write, and one capped by max_page_count (a full disk), which
// takes the driver's writer connection (sqlite.CapPages). Postgres: a
// server that runs transactions read-only (a full one cannot be had from a
// test server; the driver's mapping of disk_full is tested on its own).
func TestStorageFaults(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		seededFile := func(t testing.TB) string {
			t.Helper()
			path := sqliteFile(t)
			seeded(t, opener(path))
			return path
		}
		backendtest.StorageFaults(t, backendtest.FaultStores{
			ReadOnly: func(t testing.TB, opts ...driver.Option) *backend.Backend {
				path := seededFile(t)
				backendtest.ReadOnlyFile(t, path)
				return opener(path)(t, opts...)
			},
			Full: func(t testing.TB, opts ...driver.Option) *backend.Backend {
				d, err := sqlite.Open(context.Background(), seededFile(t), opts...)
				if err != nil {
					t.Fatal(err)
				}
				s := backend.New(d, opts...)
				t.Cleanup(func() { s.Close() })
				if err := sqlite.CapPages(context.Background(), d, 4); err != nil {
					t.Fatal(err)
				}
				return s
			},
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := backendtest.PostgresURL(t)
		backendtest.StorageFaults(t, backendtest.FaultStores{
			ReadOnly: func(t testing.TB, opts ...driver.Option) *backend.Backend {
				seeded(t, opener(url))
				return opener(backendtest.ReadOnlyURL(url))(t, opts...)
			},
		})
	})
}

// TestReadOnlyHealthSaysWhy: the read-only report names the SQLite file
// and why, and the Postgres causes, for the hub's start-up error.
func TestReadOnlyHealthSaysWhy(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cks.db")
		seeded(t, opener(path))
		backendtest.ReadOnlyFile(t, path)
		err := opener(path)(t).StorageHealth(context.Background())
		if !errors.Is(err, cks.ErrStorageReadOnly) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not writable") {
			t.Fatalf("StorageHealth: %v, want read-only naming %s", err, path)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		url := backendtest.PostgresURL(t)
		seeded(t, opener(url))
		err := opener(backendtest.ReadOnlyURL(url))(t).StorageHealth(context.Background())
		if !errors.Is(err, cks.ErrStorageReadOnly) || !strings.Contains(err.Error(), "hot standby") ||
			!strings.Contains(err.Error(), "default_transaction_read_only") {
			t.Fatalf("StorageHealth: %v, want ErrStorageReadOnly naming the causes", err)
		}
	})
}

// TestOpenURLForms: every accepted form opens its dialect; anything else is
// refused with cks.ErrInvalid naming the accepted forms.
func TestOpenURLForms(t *testing.T) {
	dir := t.TempDir()
	for _, url := range []string{"sqlite:" + filepath.Join(dir, "a.db"), "sqlite://" + filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")} {
		s := opener(url)(t)
		if s.Dialect() != "sqlite" {
			t.Errorf("%s: Dialect() = %q, want sqlite", url, s.Dialect())
		}
	}
	for _, url := range []string{"", "mysql://localhost/db"} {
		s, err := backend.Open(context.Background(), url)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", url)
			continue
		}
		if !errors.Is(err, cks.ErrInvalid) || !strings.Contains(err.Error(), "postgres://USER@HOST:PORT/DB") {
			t.Errorf("Open(%q): %v, want ErrInvalid naming the forms", url, err)
		}
	}
	if s := opener(backendtest.PostgresURL(t))(t); s.Dialect() != "postgres" {
		t.Errorf("Dialect() = %q, want postgres", s.Dialect())
	}
}

// The benchmarks of the store conformance suite, against the composite.
func BenchmarkStore(b *testing.B) {
	for _, d := range dialects {
		b.Run(d.name, func(b *testing.B) { backendtest.Bench(b, func(t testing.TB) *backend.Backend { return d.newDB(t)(t) }) })
	}
}

func BenchmarkLedger(b *testing.B) {
	for _, d := range dialects {
		b.Run(d.name, func(b *testing.B) {
			backendtest.BenchLedger(b, func(t testing.TB) *backend.Backend { return d.newDB(t)(t) })
		})
	}
}

func BenchmarkKnowledge(b *testing.B) {
	for _, d := range dialects {
		b.Run(d.name, func(b *testing.B) {
			backendtest.BenchKnowledge(b, func(t testing.TB) *backend.Backend { return d.newDB(t)(t) })
		})
	}
}
