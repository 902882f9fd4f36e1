package postgres_test

import (
	"testing"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/drivertest"
	"github.com/cks-dev/cks/driver/postgres"
	"github.com/cks-dev/cks/store/backendtest"
)

// TestOneTaskReadIsPlannedOnce: a read of one task (every single-task
// operation, an executor's lease check) goes through the one-row query,
// which Postgres's plan cache settles on a generic plan for; the array form
// is planned anew at every execution.
func TestOneTaskReadIsPlannedOnce(t *testing.T) {
	// One connection, so that the statements and their counts are its own.
	d, err := postgres.Open(testCtx(t), backendtest.WithParam(backendtest.PostgresURL(t), "pool_max_conns", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
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
