package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/postgres"
)

// TestOneTaskReadIsPlannedOnce: a read of one task (every single-task
// operation, an executor's lease check) goes through the one-row query,
// which Postgres's plan cache settles on a generic plan for; the array form
// is planned anew at every execution.
func TestOneTaskReadIsPlannedOnce(t *testing.T) {
	// One connection, so that the statements and their counts are its own.
	d := open(t, drivertest.WithParam(drivertest.PostgresURL(t), "pool_max_conns", "1"))
	ctx, ex := testCtx(t), d.Executor()
	rows, err := ex.TaskInsertMany(ctx, []driver.TaskRow{drivertest.SeedTask(), drivertest.SeedTask()})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		got, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{rows[0].ID}})
		if err != nil || len(got) != 1 || got[0].ID != rows[0].ID {
			t.Fatalf("read of task %d: %v %v", rows[0].ID, got, err)
		}
		if got, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{rows[0].ID + 1000}}); err != nil || len(got) != 0 {
			t.Fatalf("read of a missing task: %v %v, want nothing", got, err)
		}
		if got, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{rows[0].ID, rows[1].ID}}); err != nil || len(got) != 2 {
			t.Fatalf("read of two tasks: %v %v", got, err)
		}
	}
	generic, custom, err := postgres.PlansOf(ctx, d, "-- name: TaskGet :many")
	if err != nil {
		t.Fatal(err)
	}
	// The plan cache makes five custom plans before it compares.
	if generic < 30 || custom > 5 {
		t.Errorf("one-task reads: %d generic and %d custom plans in 40 executions, want the generic plan from the sixth on", generic, custom)
	}
}

// TestClaimIsPlannedOnce: each form of the claim (any type, one type,
// several) settles on a generic plan, which uses its partial index because
// the query names the index's state; a claim's plan was a third of the
// statement's server time when every claim was planned anew.
func TestClaimIsPlannedOnce(t *testing.T) {
	url := drivertest.PostgresURL(t)
	d := open(t, drivertest.WithParam(url, "pool_max_conns", "1"))
	ctx, ex := testCtx(t), d.Executor()
	const claims = 12
	// A table where the claim's plan matters: 20,000 finished tasks and
	// the OPEN ones, with statistics. (On a small one any plan is cheap
	// and the plan cache settles either way.)
	if err := rawExec(t, url, `INSERT INTO cks_outbox_tasks (type, state, created_at, updated_at)
SELECT 'seed', 'COMPLETED', now(), now() FROM generate_series(1, 20000);
ANALYZE cks_outbox_tasks`); err != nil {
		t.Fatal(err)
	}
	seed := make([]driver.TaskRow, 3*claims)
	for i := range seed {
		seed[i] = drivertest.SeedTask()
	}
	if _, err := ex.TaskInsertMany(ctx, seed); err != nil {
		t.Fatal(err)
	}
	forms := []struct {
		name  string
		types []string
	}{
		{"-- name: TaskClaim :many", nil},
		{"-- name: TaskClaimOfType :many", []string{"seed"}},
		{"-- name: TaskClaimOfTypes :many", []string{"seed", "other"}},
	}
	for _, f := range forms {
		for i := range claims {
			got, err := ex.TaskClaim(ctx, driver.TaskClaimParams{
				TaskClaimableParams: driver.TaskClaimableParams{State: "OPEN", Excluded: []string{"STOPPED"}, Types: f.types,
					Now: drivertest.T0.Add(time.Hour), Limit: 1},
				Leases: []driver.TaskClaimLease{{TokenHash: fmt.Sprintf("h%d", i), ClaimedBy: "w", ExpiresAt: drivertest.T0.Add(2 * time.Hour), Ms: 60000}},
				To:     "CLAIMED", AttemptsAdded: 1})
			if err != nil || len(got) != 1 {
				t.Fatalf("%s, claim %d: %v %v", f.name, i, got, err)
			}
		}
		generic, custom, err := postgres.PlansOf(ctx, d, f.name)
		if err != nil {
			t.Fatal(err)
		}
		if generic < claims-5 || custom > 5 {
			t.Errorf("%s: %d generic and %d custom plans in %d claims, want the generic plan from the sixth on", f.name, generic, custom, claims)
		}
	}
}
