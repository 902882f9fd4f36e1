package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/waitfor"
)

func liveness(id string) driver.LivenessRow {
	return driver.LivenessRow{InstanceID: id, ProcessKind: "agent", Hostname: "h", PID: 1, LivenessIntervalS: 1,
		StartedAt: time.Unix(0, 0), LastHeartbeatAt: time.Unix(0, 0)}
}

// TestWithTxRunsDeadlockedAgain: two transactions that lock two rows in
// opposite order deadlock; Postgres aborts one, which WithTx runs again, and
// both commit.
func TestWithTxRunsDeadlockedAgain(t *testing.T) {
	d := open(t, drivertest.PostgresURL(t))
	ctx := testCtx(t)
	for _, id := range []string{"a", "b"} {
		if err := drivertest.ErrOnly(d.Executor().LivenessUpsert(ctx, liveness(id))); err != nil {
			t.Fatal(err)
		}
	}
	var holding sync.WaitGroup
	holding.Add(2)
	done := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var runs [2]atomic.Int32
	lockBoth := func(me int, first, second string) error {
		defer close(done[me])
		return d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			if runs[me].Add(1) > 1 {
				// Run again: let the other commit first, or this run could
				// take the freed row before the other and deadlock anew.
				<-done[1-me]
			}
			if _, err := ex.LivenessSetDesiredState(ctx, first, "x"); err != nil {
				return err
			}
			if runs[me].Load() == 1 { // both hold their first row, then want the other's
				holding.Done()
				holding.Wait()
			}
			_, err := ex.LivenessSetDesiredState(ctx, second, "x")
			return err
		})
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = lockBoth(0, "a", "b") })
	wg.Go(func() { errs[1] = lockBoth(1, "b", "a") })
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("WithTx = %v, %v; want both committed", errs[0], errs[1])
	}
	if n := runs[0].Load() + runs[1].Load(); n != 3 {
		t.Fatalf("fn ran %d and %d times, want 3 in all (the deadlocked one twice)", runs[0].Load(), runs[1].Load())
	}
}

// TestWithTxRetryLimits: a serialization failure is run again up to three
// times in all, then returned; any other error is returned at once.
func TestWithTxRetryLimits(t *testing.T) {
	d := open(t, drivertest.PostgresURL(t))
	for _, c := range []struct {
		err   error
		tries int32
	}{
		{&pgconn.PgError{Code: "40001", Message: "could not serialize"}, 3},
		{&pgconn.PgError{Code: "40P01", Message: "deadlock detected"}, 3},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key"}, 1},
		{errors.New("boom"), 1},
	} {
		var tries atomic.Int32
		err := d.WithTx(testCtx(t), driver.TxOptions{}, func(context.Context, driver.Executor) error {
			tries.Add(1)
			return c.err
		})
		if !errors.Is(err, c.err) || tries.Load() != c.tries {
			t.Errorf("%v: WithTx = %v after %d runs, want it after %d", c.err, err, tries.Load(), c.tries)
		}
	}
}

// TestGrantCountLocksHolders: the count of the last-admin check locks the
// grants it counts, so a concurrent delete of the other admin waits for it,
// and then counts right — of two admins deleting themselves at once, one is
// refused.
func TestGrantCountLocksHolders(t *testing.T) {
	url := drivertest.PostgresURL(t)
	d := open(t, url)
	ctx := testCtx(t)
	ex := d.Executor()
	for _, id := range []string{"a", "b"} {
		p := driver.PrincipalRow{ID: id, Name: id, TokenHash: "h-" + id, CreatedAt: time.Unix(0, 0)}
		if err := ex.PrincipalInsert(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := ex.GrantInsertMany(ctx, []driver.GrantRow{{PrincipalID: id, Resource: "/", Permission: "admin"}}); err != nil {
			t.Fatal(err)
		}
	}
	errLast := errors.New("last admin")
	deleteSelf := func(id string, counted func()) error {
		return d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			n, err := ex.PrincipalCountWithGrant(ctx, "/", "admin", id)
			if err != nil {
				return err
			}
			counted()
			if n == 0 {
				return errLast
			}
			_, err = ex.PrincipalDelete(ctx, id)
			return err
		})
	}
	aCounted, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	var aErr, bErr error
	var wg sync.WaitGroup
	defer wg.Wait()
	defer letGo() // also when the test fails, so that a's transaction ends
	wg.Go(func() { aErr = deleteSelf("a", func() { close(aCounted); <-release }) })
	<-aCounted
	wg.Go(func() { bErr = deleteSelf("b", func() {}) })
	// b's count waits for a's locks.
	c := conn(t, url)
	waitfor.Until(t, "the second count to wait for the first's locks", func() bool {
		var n int
		err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%GrantHoldersLock%'`).Scan(&n)
		return err == nil && n == 1
	})
	letGo()
	wg.Wait()
	if aErr != nil || !errors.Is(bErr, errLast) {
		t.Fatalf("deletes = %v, %v; want the first to succeed and the second refused as the last admin", aErr, bErr)
	}
}

// TestAppendOnlyRefusesTruncate: TRUNCATE (which row triggers do not see)
// is refused on every append-only table, also when it would only cascade
// to one (cks_objects, cks_outbox_tasks) or names several.
func TestAppendOnlyRefusesTruncate(t *testing.T) {
	url := drivertest.PostgresURL(t)
	open(t, url)
	for _, tb := range []string{"cks_task_events", "cks_task_decisions", "cks_transition_log", "cks_object_versions",
		"cks_objects", "cks_outbox_tasks", "cks_objects, cks_edges, cks_transition_log, cks_object_versions"} {
		err := rawExec(t, url, "TRUNCATE "+tb+" CASCADE")
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("TRUNCATE %s: err = %v, want the append-only refusal", tb, err)
		}
	}
}
