package ledger_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/postgres"
	"github.com/cks-dev/cks/driver/sqlite"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
	oldpostgres "github.com/cks-dev/cks/store/postgres"
	oldsqlite "github.com/cks-dev/cks/store/sqlite"
	"github.com/cks-dev/cks/store/storetest"
)

// ledgerStore is a store.Store whose tasks are the ledger service's: the
// conformance suite runs against it. The parts that are not the ledger's
// (liveness, principals, knowledge, versions, sweeper control) are served
// by the first backend on the same database, which shares its tables, and
// changes come from the driver's Listener.
type ledgerStore struct {
	*ledger.Service
	store.Liveness
	store.Principals
	store.Knowledge
	store.Versions
	store.SweeperControl
	changes
	first store.Store
}

func (s ledgerStore) Backend() string { return s.d.Dialect() }

func (s ledgerStore) StorageHealth(ctx context.Context) error { return s.first.StorageHealth(ctx) }

func (s ledgerStore) Close() error { return errors.Join(s.first.Close(), s.d.Close()) }

// changes is store.Changes over the driver's Listener, one listener per
// watch (the composite's notifier multiplexes one; a test needs no more).
type changes struct{ d driver.Driver }

func (c changes) WatchChanges(ctx context.Context, topics []string, f func(topic string)) error {
	set, err := store.ValidateTopics(topics)
	if err != nil {
		return err
	}
	sorted := slices.Sorted(maps.Keys(set))
	for ctx.Err() == nil {
		l := c.d.Listener()
		if err := l.Connect(ctx); err != nil {
			select { // retried until ctx ends
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		for _, topic := range sorted {
			f(topic)
		}
		for {
			got, err := l.WaitForTopics(ctx)
			if err != nil {
				break
			}
			for _, topic := range got {
				if set[topic] {
					f(topic)
				}
			}
		}
		l.Close(context.WithoutCancel(ctx))
	}
	return nil
}

// handles opens, on one database, a driver and a handle of the first
// backend.
type handles func(t testing.TB, opts ...store.Option) (driver.Driver, store.Store)

// opener returns an Opener of ledger stores over the handles open makes.
func opener(open handles) storetest.Opener {
	return func(t testing.TB, opts ...store.Option) store.Store {
		t.Helper()
		d, first := open(t, opts...)
		return ledgerStore{Service: ledger.NewService(d, opts...), Liveness: first, Principals: first,
			Knowledge: first, Versions: first, SweeperControl: first, changes: changes{d}, first: first}
	}
}

// sqliteHandles opens handles on the SQLite database at path.
func sqliteHandles(path string) handles {
	return func(t testing.TB, opts ...store.Option) (driver.Driver, store.Store) {
		t.Helper()
		first, err := oldsqlite.Open(context.Background(), path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { first.Close() })
		d, err := sqlite.Open(context.Background(), path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d, first
	}
}

// postgresHandles opens handles on the Postgres schema of url.
func postgresHandles(url string) handles {
	return func(t testing.TB, opts ...store.Option) (driver.Driver, store.Store) {
		t.Helper()
		first, err := oldpostgres.Open(context.Background(), url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { first.Close() })
		d, err := postgres.Open(context.Background(), url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d, first
	}
}

// drivers are the dialects a ledger test runs on: each makes a fresh
// database and returns an opener of handles on it.
var drivers = []struct {
	name  string
	newDB func(t testing.TB) handles
}{
	{"sqlite", func(t testing.TB) handles { return sqliteHandles(filepath.Join(t.TempDir(), "cks.db")) }},
	{"postgres", func(t testing.TB) handles { return postgresHandles(backendtest.PostgresURL(t)) }},
}

// TestConformance runs the task ledger's part of the store conformance
// suite against the service on both dialects (the test composite's other
// parts are the first backend's, whose knowledge store predates the new
// schema's per-object version numbers).
func TestConformance(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunTasks(t, func(t testing.TB) storetest.Opener { return opener(d.newDB(t)) })
		})
	}
}

// BenchmarkLedger is storetest.BenchLedger over the service, per dialect
// (compare with the first backends' BenchmarkLedger in store/sqlite and
// store/postgres).
func BenchmarkLedger(b *testing.B) {
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			storetest.BenchLedger(b, func(t testing.TB) store.Store { return opener(d.newDB(t))(t) })
		})
	}
}

// TestStorageFaults: the service's writes on a database that refuses them
// fail with store.ErrStorageReadOnly (the drivers classify the error; the
// service passes it on) and write nothing, while reads go on. On SQLite the
// whole of storetest.StorageFaults' read-only case runs against the
// composite; on Postgres the first backend will not open a read-only
// server, so the service's writes are checked alone. (A full database is
// the drivers' own test: the service adds nothing to the error.)
func TestStorageFaults(t *testing.T) {
	seeded := func(t testing.TB, open handles) {
		t.Helper()
		d, first := open(t)
		if _, _, err := ledger.NewService(d).Enqueue(context.Background(), storetest.SeedTask); err != nil {
			t.Fatal(err)
		}
		first.Close()
		d.Close()
	}
	t.Run("sqlite", func(t *testing.T) {
		storetest.StorageFaults(t, storetest.FaultStores{ReadOnly: func(t testing.TB, opts ...store.Option) store.Store {
			path := filepath.Join(t.TempDir(), "cks.db")
			open := sqliteHandles(path)
			seeded(t, open)
			backendtest.ReadOnlyFile(t, path)
			return opener(open)(t, opts...)
		}})
	})
	t.Run("postgres", func(t *testing.T) {
		url := backendtest.PostgresURL(t)
		seeded(t, postgresHandles(url))
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		d, err := postgres.Open(context.Background(), url+sep+"default_transaction_read_only=on")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		s, ctx := ledger.NewService(d), context.Background()
		for name, write := range map[string]func() error{
			"Enqueue": func() error { _, _, err := s.Enqueue(ctx, store.NewTask{Type: "t"}); return err },
			"Claim":   func() error { _, err := s.Claim(ctx, "w", nil, 1, time.Minute); return err },
			"Cancel":  func() error { _, err := s.Cancel(ctx, 1, "op", "no"); return err },
			"Update": func() error {
				title := "x"
				_, err := s.Update(ctx, 1, "op", store.TaskPatch{Title: &title}, 0)
				return err
			},
			"ExpireAborts": func() error { _, err := s.ExpireAborts(ctx, time.Now()); return err },
		} {
			if err := write(); !errors.Is(err, store.ErrStorageReadOnly) || !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s on a read-only server: %v, want ErrStorageReadOnly", name, err)
			}
		}
		page, err := s.ListTasks(ctx, store.TaskFilter{})
		if err != nil || len(page.Tasks) != 1 || page.Tasks[0].Title != storetest.SeedTask.Title || page.Tasks[0].State != ledger.Open {
			t.Fatalf("reads of a read-only server: %+v %v, want the seed task alone, OPEN", page.Tasks, err)
		}
	})
}
