package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
)

// TestScanAllocsPerRow holds the allocations of reading a task row — the
// completion's locking read (TaskGetMany) and the claim (TaskClaim) — to
// the row's own: its non-empty text columns and its two JSON columns, each
// a string or slice of its own. A nullable time scanned through a pointer
// (one more a non-NULL time), a row value or list of destinations made for
// every row, or rows gathered in a slice of their own to be copied, would
// each add to it. The count per row is the difference between reading 20
// rows and 10, so what a call costs whatever its rows cancels out.
func TestScanAllocsPerRow(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	d := open(t, drivertest.PostgresURL(t))
	ctx := testCtx(t)
	ex := d.Executor()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rows := make([]driver.TaskRow, 20)
	leases := make([]driver.TaskClaimLease, len(rows))
	for i := range rows {
		// Text: type, title, state; after a claim claimed_by and
		// lease_token_hash too. Times: state_changed_at (nullable); after a
		// claim claimed_at, lease_expires_at, lease_renewed_at.
		rows[i] = driver.TaskRow{Type: "scan", Title: "a row", State: "OPEN", MaxAttempts: 3, Revision: 1,
			Payload: []byte(`{"n": 1}`), Metadata: []byte(`{}`), CreatedAt: now, UpdatedAt: now, StateChangedAt: now}
		leases[i] = driver.TaskClaimLease{TokenHash: fmt.Sprintf("hash-%d", i), ClaimedBy: "worker",
			ExpiresAt: now.Add(time.Minute), Ms: 60000}
	}
	inserted, err := ex.TaskInsertMany(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(inserted))
	for i, r := range inserted {
		ids[i] = r.ID
	}
	perRow := func(read func(n int)) float64 {
		return (testing.AllocsPerRun(20, func() { read(20) }) - testing.AllocsPerRun(20, func() { read(10) })) / 10
	}

	get := perRow(func(n int) {
		got, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids[:n], Lock: driver.LockUpdate})
		if err != nil || len(got) != n {
			t.Fatalf("TaskGetMany: %d rows, %v", len(got), err)
		}
	})
	if want := 3.0 + 2; get > want+0.5 {
		t.Errorf("TaskGetMany: %.1f allocations a row, want %.0f (3 strings, 2 JSON values)", get, want)
	}

	// A claim in a transaction rolled back: the rows stay OPEN for the next.
	rollback := errors.New("rollback")
	claim := perRow(func(n int) {
		err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			got, err := ex.TaskClaim(ctx, driver.TaskClaimParams{
				TaskClaimableParams: driver.TaskClaimableParams{State: "OPEN", Types: []string{"scan"}, Now: now, Limit: n},
				Leases:              leases[:n], To: "CLAIMED", AttemptsAdded: 1})
			if err != nil || len(got) != n {
				t.Fatalf("TaskClaim: %d rows, %v", len(got), err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("claim transaction: %v", err)
		}
	})
	if want := 5.0 + 2; claim > want+0.5 {
		t.Errorf("TaskClaim: %.1f allocations a row, want %.0f (5 strings, 2 JSON values)", claim, want)
	}
	t.Logf("allocations a row: TaskGetMany %.1f, TaskClaim %.1f", get, claim)
}
