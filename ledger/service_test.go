package ledger_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/postgres"
	"github.com/cks-dev/cks/driver/sqlite"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
	oldpostgres "github.com/cks-dev/cks/store/postgres"
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

// drivers are the dialects a ledger test runs on: each makes a fresh
// database and returns an opener of handles on it.
var drivers = []struct {
	name  string
	newDB func(t testing.TB) handles
}{
	{"sqlite", func(t testing.TB) handles {
		firstOpen := backendtest.SQLite(t)
		return func(t testing.TB, opts ...store.Option) (driver.Driver, store.Store) {
			t.Helper()
			first := firstOpen(t, opts...)
			d, err := sqlite.Open(context.Background(), first.(interface{ Path() string }).Path(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d, first
		}
	}},
	{"postgres", func(t testing.TB) handles {
		url := backendtest.PostgresURL(t)
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
	}},
}

// TestConformance runs the store conformance suite against the service on
// both dialects.
func TestConformance(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t testing.TB) storetest.Opener { return opener(d.newDB(t)) })
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
