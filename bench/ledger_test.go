package bench_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/bench"
	"github.com/cks-dev/cks/internal/backend/backendtest"
)

// TestLedger runs the ledger benchmark small on both backends, with each
// worker completing its claim's tasks one after another and concurrently:
// every task must end COMPLETED exactly once (bench.Ledger fails
// otherwise), in as many claims as the batches need at least.
func TestLedger(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		for _, concurrent := range []bool{false, true} {
			t.Run(fmt.Sprint("concurrent=", concurrent), func(t *testing.T) {
				r, err := bench.Ledger(context.Background(), open(t).Tasks, bench.LedgerConfig{Tasks: 200, Workers: 4, Batch: 10,
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

// TestLedgerPriorities: with Priorities, task i is enqueued at priority
// i % Priorities (the side-by-side run gives River's jobs the same order).
func TestLedgerPriorities(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		if _, err := bench.Ledger(context.Background(), st.Tasks, bench.LedgerConfig{Tasks: 30, Workers: 2, Batch: 5,
			Priorities: 3}); err != nil {
			t.Fatal(err)
		}
		page, err := st.Tasks.ListTasks(context.Background(), cks.TaskFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		count := map[int]int{}
		for _, task := range page.Tasks {
			count[task.Priority]++
		}
		if len(page.Tasks) != 30 || count[0] != 10 || count[1] != 10 || count[2] != 10 {
			t.Fatalf("%d tasks, by priority %v; want 10 each of 0, 1, 2", len(page.Tasks), count)
		}
	})
}
