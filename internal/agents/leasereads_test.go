package agents_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/notifier"
	"github.com/cks-dev/cks/internal/waitfor"
)

// leaseCounted is a store that counts lease reads and the calls of its
// watches of cks.TopicTaskAborts, and closes established once such a
// watch has been called (established).
type leaseCounted struct {
	*ledger.Service
	changes     *notifier.Notifier
	leaseReads  atomic.Int64
	watchCalls  atomic.Int64
	established chan struct{}
	once        atomic.Bool
}

func (c *leaseCounted) LeaseHeld(ctx context.Context, id int64, tok string) (bool, error) {
	c.leaseReads.Add(1)
	return c.Service.LeaseHeld(ctx, id, tok)
}

func (c *leaseCounted) WatchChanges(ctx context.Context, topics []string, f func(string)) error {
	aborts := slices.Contains(topics, cks.TopicTaskAborts)
	return c.changes.WatchChanges(ctx, topics, func(topic string) {
		if aborts {
			c.watchCalls.Add(1)
		}
		f(topic)
		if aborts && c.once.CompareAndSwap(false, true) {
			close(c.established)
		}
	})
}

// TestClaimLoopReadsNoLease: the claim loop holds its executor's abort watch
// and marks each claim, so a task costs no lease read of its own — and an
// abort of a running task still reaches its resolver through the watch.
func TestClaimLoopReadsNoLease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st, op := open(t), open(t)
		c := &leaseCounted{Service: st.Tasks, changes: st.Changes, established: make(chan struct{})}
		set := settings("enrichment", "enrich")
		set.HeartbeatInterval = time.Hour // only the watch delivers the abort
		var done atomic.Int64
		running := make(chan int64, 1)
		ctx, cancel := context.WithCancel(context.Background())
		_, wait := start(t, ctx, agents.Services{Tasks: c, Liveness: st.Liveness, Changes: c}, set, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			if a.Task().Title != "long" {
				done.Add(1)
				return worker.Result{Output: "ok"}, nil
			}
			running <- a.Task().ID
			<-ctx.Done()
			return worker.Result{}, ctx.Err()
		})
		defer wait()
		defer cancel()
		select {
		case <-c.established:
		case <-time.After(time.Minute):
			t.Fatal("the agent's abort watch was not established")
		}
		calls := c.watchCalls.Load()
		const n = 5
		for range n {
			backendtest.MustEnqueue(t, op, cks.NewTask{Type: "enrich", Title: "quick"})
		}
		waitfor.Until(t, "the quick tasks done", func() bool { return done.Load() == n })
		// No abort was requested, so a run reads its lease only when its mark
		// cannot rule a missed abort out: a mark taken before the watch was
		// established (the loop's first claim may have begun before; at most
		// one read), or a watch call after the mark (a reconnect calls every
		// watch again: at most the watch's check of the one running task and
		// the next run's own read). Without a mark every task would read.
		extra := c.watchCalls.Load() - calls
		if got := c.leaseReads.Load(); got > 1+2*extra {
			t.Errorf("%d lease reads for %d tasks with %d watch calls meanwhile, want at most %d", got, n, extra, 1+2*extra)
		} else if got > 0 {
			t.Logf("%d lease reads, %d watch calls during the quick tasks", got, extra)
		}

		long := backendtest.MustEnqueue(t, op, cks.NewTask{Type: "enrich", Title: "long"})
		select {
		case id := <-running:
			if id != long.ID {
				t.Fatalf("running task %d, want %d", id, long.ID)
			}
		case <-time.After(time.Minute):
			t.Fatal("the long task did not start")
		}
		res, err := op.Tasks.StopTask(context.Background(), ledger.StopParams{ID: long.ID, Actor: "operator", Reason: "enough", Deadline: 30 * time.Second, Wait: true})
		if err != nil || res.Abort == nil || res.Abort.Outcome != cks.AbortConfirmed {
			t.Fatalf("stop: %+v, %v", res.Abort, err)
		}
	})
}
