package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
)

// BenchmarkCompletionWrite is the write of a completer's flush of 50 tasks,
// or of one (read and locked, then moved with one event each), whole
// (TaskUpdateMany and TaskEventInsertMany, as before TaskMoveMany) or narrow
// (TaskMoveMany).
func BenchmarkCompletionWrite(b *testing.B) {
	for _, c := range []struct {
		batch  int
		narrow bool
	}{{50, false}, {50, true}, {1, false}, {1, true}} {
		batch, narrow := c.batch, c.narrow
		name := fmt.Sprintf("%s/%d", map[bool]string{false: "whole", true: "narrow"}[narrow], batch)
		b.Run(name, func(b *testing.B) {
			d := open(b, drivertest.PostgresURL(b))
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			rows := make([]driver.TaskRow, batch)
			for i := range rows {
				rows[i] = driver.TaskRow{Type: "bench", Title: "a task of the bench", State: "RUNNING",
					Description: strings.Repeat("d", 200), MaxAttempts: 3, Revision: 1, Attempts: 1,
					Payload:  []byte(`{"n": 1, "args": ["a", "b", "c"], "env": {"K": "v"}}`),
					Metadata: []byte(`{"owner": "bench"}`), ClaimedBy: "w", ClaimedAt: now, LeaseTokenHash: "h",
					LeaseExpiresAt: now.Add(time.Minute), LeaseRenewedAt: now, LeaseMs: 60000,
					CreatedAt: now, UpdatedAt: now, StateChangedAt: now}
			}
			stored, err := d.Executor().TaskInsertMany(ctx, rows)
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]int64, batch)
			for i, r := range stored {
				ids[i] = r.ID
			}
			b.ResetTimer()
			for i := range b.N {
				err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
					locked, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids, Lock: driver.LockUpdate})
					if err != nil {
						return err
					}
					events := make([]driver.TaskEventRow, len(locked))
					for k := range locked {
						r := &locked[k]
						r.Result, r.UpdatedAt, r.StateChangedAt = "done", now.Add(time.Duration(i)), now
						events[k] = driver.TaskEventRow{TaskID: r.ID, At: now, Actor: "w", FromState: "RUNNING",
							ToState: "RUNNING", Attempt: 1, Reason: "bench"}
					}
					if narrow {
						_, err = ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{Rows: locked, Events: events})
						return err
					}
					if _, err := ex.TaskUpdateMany(ctx, locked); err != nil {
						return err
					}
					return ex.TaskEventInsertMany(ctx, events)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
