// Package drivertest is the conformance suite of driver.Driver: every
// primitive, transactions, notifications and the database facts the rules
// rely on, run by each driver's tests against a real database, so that both
// dialects behave alike. Run runs all of it; the per-domain functions
// (Liveness, Control, Principals, Knowledge, …) run one part, for a driver's own tests
// and for the domains added later (tasks, knowledge).
//
// A primitive a driver does not implement yet returns an error wrapping
// errors.ErrUnsupported; the tests that need it are skipped, not failed.
package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// DB is one fresh, empty database of the driver under test.
type DB struct {
	// Name is what names the database outside the driver (a URL, a path).
	Name string
	// Open opens a new Driver on the database; each call is another
	// handle (another writer connection or pool), closed when t ends.
	Open func(t testing.TB, opts ...driver.Option) driver.Driver
	// Exec runs one SQL statement on the database outside any Driver (test
	// fixtures, and the database facts the suite checks) and returns its
	// error. The suite only passes statements valid in every dialect.
	Exec func(t testing.TB, sql string) error
}

// NewDB creates a fresh database for one test, dropped when t ends.
type NewDB func(t testing.TB) DB

// Run runs the whole suite, each part as a parallel subtest on its own
// database.
func Run(t *testing.T, newDB NewDB) {
	parts := []struct {
		name string
		run  func(t *testing.T, newDB NewDB)
	}{
		{"Liveness", Liveness},
		{"LivenessHistory", LivenessHistory},
		{"Purge", Purge},
		{"Control", Control},
		{"Leaders", Leaders},
		{"SweeperPasses", SweeperPasses},
		{"Schedules", Schedules},
		{"Principals", Principals},
		{"Knowledge", Knowledge},
		{"Tasks", Tasks},
		{"Tx", Tx},
		{"Notify", Notify},
		{"Times", Times},
		{"Facts", Facts},
	}
	for _, p := range parts {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			p.run(t, newDB)
		})
	}
}

// T0 is the suite's reference time (a whole second, as a wall clock would
// give it after driver.Time).
var T0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// T0SQL is T0 as a literal both dialects read as a time (Postgres casts it,
// SQLite stores it as the text it is, in the SQLite driver's format).
const T0SQL = "'2026-11-30T12:00:00.000000000Z'"

// open opens one handle of a fresh database.
func open(t testing.TB, newDB NewDB, opts ...driver.Option) (driver.Driver, DB) {
	t.Helper()
	db := newDB(t)
	return db.Open(t, opts...), db
}

// exec runs a fixture statement, failing the test on an error.
func exec(t testing.TB, db DB, sql string) {
	t.Helper()
	if err := db.Exec(t, sql); err != nil {
		t.Fatalf("fixture %q: %v", sql, err)
	}
}

// skipUnsupported skips the test when err says a primitive is not there
// yet, and fails it on any other error.
func skipUnsupported(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("%s: %v", what, err)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// must fails the test on err.
func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// isNoRows fails the test unless err is driver.ErrNoRows.
func isNoRows(t testing.TB, what string, err error) {
	t.Helper()
	if !errors.Is(err, driver.ErrNoRows) {
		t.Fatalf("%s: err = %v, want driver.ErrNoRows", what, err)
	}
}

// WantFault fails the test unless err is the storage fault kind
// (cks.ErrStorageReadOnly or cks.ErrStorageFull, and so
// cks.ErrUnavailable) and no input error: what a driver's storage fault
// tests expect of every write.
func WantFault(t testing.TB, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) || !errors.Is(err, cks.ErrUnavailable) || errors.Is(err, cks.ErrInvalid) {
		t.Errorf("%s: err = %v, want %v", what, err, kind)
	}
}

// SeedTask is the task a storage fault test writes before the fault.
func SeedTask() driver.TaskRow { return task("seed", "OPEN") }

// CheckReadOnly checks driver d on a database that refuses writes and
// holds one task, SeedTask, written before: every write — a task insert, a
// liveness upsert, an update in a transaction — fails
// with cks.ErrStorageReadOnly, reads go on, and Health reports the fault.
// It returns Health's error, for the facts of the dialect (what it names).
func CheckReadOnly(t testing.TB, d driver.Driver) error {
	t.Helper()
	ctx := Ctx(t)
	ex := d.Executor()
	_, err := ex.TaskInsertMany(ctx, []driver.TaskRow{SeedTask()})
	WantFault(t, "TaskInsertMany", err, cks.ErrStorageReadOnly)
	WantFault(t, "LivenessUpsert", ErrOnly(ex.LivenessUpsert(ctx, row("i", "k", 0))), cks.ErrStorageReadOnly)
	err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{1}, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		_, err = ex.TaskUpdateMany(ctx, rows)
		return err
	})
	WantFault(t, "a write transaction", err, cks.ErrStorageReadOnly)
	rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{1, 2}})
	if err != nil || len(rows) != 1 || rows[0].Type != "seed" {
		t.Fatalf("reads of a read-only database: %+v, %v; want the seed task alone", rows, err)
	}
	err = d.Health(ctx)
	WantFault(t, "Health", err, cks.ErrStorageReadOnly)
	return err
}
