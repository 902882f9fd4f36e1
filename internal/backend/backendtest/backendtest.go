// Package backendtest opens fresh test databases of every dialect, for tests
// above the drivers (ledger, worker, hub, api …) that must run on both:
// SQLite in a temp directory, and Postgres in a scratch schema of the server
// named by CKS_TEST_DATABASE_URL (scripts/test starts one). Without that
// variable the Postgres half is skipped, or fails when CI=true. A store is
// the composite of package backend (backend.Open); a driver is the
// dialect's driver alone, for tests of a service over it. The databases
// themselves (PostgresURL, ReadOnlyURL, ReadOnlyFile, Ctx) are
// internal/driver/drivertest's, which the drivers' own tests use.
//
// The services' behaviour tests are tables of Cases in each service's own
// test files, run on both backends by Run. The fixtures they and the tests
// above share (T0, MustEnqueue, Into, Liveness, State, BadTexts, Watch,
// StorageFaults, the benchmarks …) are here, beside the openers.
package backendtest

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	driverpostgres "github.com/cks-dev/cks/internal/driver/postgres"
	driversqlite "github.com/cks-dev/cks/internal/driver/sqlite"
)

// NewStore returns a fresh, empty store for one test and arranges its cleanup.
type NewStore func(t testing.TB) *backend.Backend

// Opener opens a new, independent handle (with its own connections) on one
// database, closed when t ends. Several handles on one database behave like
// several processes sharing it.
type Opener func(t testing.TB, opts ...driver.Option) *backend.Backend

// NewDB creates a fresh, empty database for one test, arranges for it to be
// removed when t ends, and returns an Opener for it.
type NewDB func(t testing.TB) Opener

// Cases are behaviours of a service by name, each tested on a fresh
// database of every backend by Run.
type Cases map[string]func(t *testing.T, open Opener)

// Run runs the cases on every backend: a parallel subtest per backend (its
// name), in it a parallel subtest per case (its name, in name order), each
// case on a fresh database of that backend.
func Run(t *testing.T, cases Cases) {
	t.Helper()
	names := slices.Sorted(maps.Keys(cases))
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					cases[name](t, b.NewDB(t))
				})
			}
		})
	}
}

// Backend creates fresh databases of one backend.
type Backend struct {
	Name string
	// NewDB creates an empty database, dropped at the end of the test, and
	// returns an opener of handles on it.
	NewDB NewDB
}

// All returns the SQLite and the Postgres backend.
func All() []Backend {
	return []Backend{{"sqlite", SQLite}, {"postgres", Postgres}}
}

// ForEach runs f as a parallel subtest per backend, each on a fresh database.
func ForEach(t *testing.T, f func(t *testing.T, open Opener)) {
	t.Helper()
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f(t, b.NewDB(t))
		})
	}
}

// SQLite creates a database file in t's temp directory; its handles are
// stores opened by backend.Open.
func SQLite(t testing.TB) Opener {
	t.Helper()
	return opener(filepath.Join(t.TempDir(), "cks.db"))
}

// Postgres creates a scratch schema on CKS_TEST_DATABASE_URL's server; its
// handles are stores opened by backend.Open.
func Postgres(t testing.TB) Opener {
	t.Helper()
	return opener(PostgresURL(t))
}

// opener opens stores on url, each closed when the test that opened it ends.
func opener(url string) Opener {
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

// Store returns the composite store over a new handle on open's database,
// closed (with its driver) when t ends: for tests that hold both the
// services and the driver's primitives of one database.
func Store(t testing.TB, open DriverOpener, opts ...driver.Option) (*backend.Backend, driver.Driver) {
	t.Helper()
	d := open(t, opts...)
	s := backend.New(d, opts...)
	t.Cleanup(func() { s.Close() })
	return s, d
}

// Stores returns an Opener of composite stores over open's database.
func Stores(open DriverOpener) Opener {
	return func(t testing.TB, opts ...driver.Option) *backend.Backend {
		t.Helper()
		s, _ := Store(t, open, opts...)
		return s
	}
}

// The databases' support of internal/driver/drivertest, for the tests above the
// drivers (one implementation, the drivers' own tests use it too).

// PostgresURL creates a scratch schema on CKS_TEST_DATABASE_URL's server,
// dropped at the end of the test, and returns its URL (for tests that hand
// the database to a process): drivertest.PostgresURL. Without the variable
// the test is skipped, or fails when CI=true.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return drivertest.PostgresURL(t)
}

// ReadOnlyURL returns the Postgres URL u with every transaction of its
// connections read-only, as on a hot standby: drivertest.ReadOnlyURL.
func ReadOnlyURL(u string) string { return drivertest.ReadOnlyURL(u) }

// WithParam returns the Postgres URL u with the parameter key=value added:
// drivertest.WithParam.
func WithParam(u, key, value string) string { return drivertest.WithParam(u, key, value) }

// ReadOnlyFile makes the file at path unwritable for this process until the
// test ends (or skips the test): drivertest.ReadOnlyFile.
func ReadOnlyFile(t testing.TB, path string) {
	t.Helper()
	drivertest.ReadOnlyFile(t, path)
}

// Ctx returns a context that ends 30 s after the call, or when t ends, for
// a test's calls of the services: drivertest.Ctx.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	return drivertest.Ctx(t)
}

// DriverOpener opens handles on one fresh database of a driver, each closed
// when the test that opened it ends.
type DriverOpener func(t testing.TB, opts ...driver.Option) driver.Driver

// Driver creates fresh databases of one driver.
type Driver struct {
	Name  string
	NewDB func(t testing.TB) DriverOpener
}

// Drivers returns the SQLite and the Postgres driver, on databases made as
// SQLite's and Postgres' above.
func Drivers() []Driver {
	return []Driver{
		{"sqlite", func(t testing.TB) DriverOpener {
			t.Helper()
			path := filepath.Join(t.TempDir(), "cks.db")
			return func(t testing.TB, opts ...driver.Option) driver.Driver {
				t.Helper()
				d, err := driversqlite.Open(context.Background(), path, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				return d
			}
		}},
		{"postgres", func(t testing.TB) DriverOpener {
			t.Helper()
			url := PostgresURL(t)
			return func(t testing.TB, opts ...driver.Option) driver.Driver {
				t.Helper()
				d, err := driverpostgres.Open(context.Background(), url, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				return d
			}
		}},
	}
}

// ForEachDriver runs f as a parallel subtest per driver, each on a fresh
// database.
func ForEachDriver(t *testing.T, f func(t *testing.T, open DriverOpener)) {
	t.Helper()
	for _, d := range Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			f(t, d.NewDB(t))
		})
	}
}
