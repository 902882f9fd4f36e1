package bench_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cks-dev/cks/bench"
	"github.com/cks-dev/cks/store/backendtest"
	"github.com/cks-dev/cks/store/storetest"
)

// TestLedger runs the ledger benchmark small on both backends, with each
// worker completing its claim's tasks one after another and concurrently:
// every task must end COMPLETED exactly once (bench.Ledger fails
// otherwise), in as many claims as the batches need at least.
func TestLedger(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open storetest.Opener) {
		for _, concurrent := range []bool{false, true} {
			t.Run(fmt.Sprint("concurrent=", concurrent), func(t *testing.T) {
				r, err := bench.Ledger(context.Background(), open(t), bench.LedgerConfig{Tasks: 200, Workers: 4, Batch: 10,
					EnqueueBatch: 50, Concurrent: concurrent})
				if err != nil {
					t.Fatal(err)
				}
				if r.Tasks != 200 || r.CompleteRate <= 0 || r.Claims < 200/10 {
					t.Fatalf("result %+v", r)
				}
			})
		}
	})
}
