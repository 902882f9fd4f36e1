package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
)

// BenchmarkClaimRows is one claim (TaskClaim, the one-type form the ledger's
// claim group uses) of n OPEN rows, each with a lease of its own, reported
// per row too: the pairing of a locked row with its lease must cost the
// same per row at 10 rows as at 2,500 (a subscript of the lease arrays per
// row was quadratic, issue 27). The rows are inserted with the timer
// stopped.
func BenchmarkClaimRows(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 2500} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			d := open(b, drivertest.PostgresURL(b))
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			rows := make([]driver.TaskRow, n)
			leases := make([]driver.TaskClaimLease, n)
			for i := range rows {
				rows[i] = driver.TaskRow{Type: "bench", Title: "a task of the bench", State: "OPEN",
					MaxAttempts: 3, Revision: 1, Payload: []byte(`{"n": 1}`), Metadata: []byte(`{}`),
					CreatedAt: now, UpdatedAt: now, StateChangedAt: now}
				leases[i] = driver.TaskClaimLease{TokenHash: fmt.Sprintf("hash-%d", i), ClaimedBy: fmt.Sprintf("w%d", i%256),
					ExpiresAt: now.Add(time.Minute), Ms: 60000}
			}
			ex := d.Executor()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if _, err := ex.TaskInsertMany(ctx, rows); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				got, err := ex.TaskClaim(ctx, driver.TaskClaimParams{
					TaskClaimableParams: driver.TaskClaimableParams{State: "OPEN", Types: []string{"bench"}, Now: now, Limit: n},
					Leases:              leases, To: "CLAIMED", AttemptsAdded: 1})
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != n {
					b.Fatalf("claimed %d rows, want %d", len(got), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/row")
		})
	}
}
