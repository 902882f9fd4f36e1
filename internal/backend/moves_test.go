package backend_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// movesCounter is a driver that counts the publications of
// cks.TopicTasksMoved: outside a transaction (the coalesced ones, each
// signalled on published) and inside one (which there must never be: a
// NOTIFY in the completions' transactions is what the coalescing avoids).
type movesCounter struct {
	driver.Driver
	outside, inside atomic.Int64
	published       chan struct{}
}

func (c *movesCounter) Executor() driver.Executor {
	return &movesCounting{Executor: c.Driver.Executor(), n: &c.outside, each: c.published}
}

func (c *movesCounter) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	return c.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error {
		return fn(ctx, &movesCounting{Executor: ex, n: &c.inside})
	})
}

type movesCounting struct {
	driver.Executor
	n    *atomic.Int64
	each chan struct{}
}

func (m *movesCounting) Notify(ctx context.Context, topic string) error {
	err := m.Executor.Notify(ctx, topic)
	if topic == cks.TopicTasksMoved {
		m.n.Add(1)
		if m.each != nil {
			m.each <- struct{}{}
		}
	}
	return err
}

// TestTasksMovedReachesOtherHandles: on both backends, the task moves one
// handle makes — a creation, a claim into RUNNING, completions, failures,
// none of which publishes tasks_ready or task_aborts — reach a watcher of
// cks.TopicTasksMoved on another handle of the database (another process,
// as a hub beside a standalone agent), and a burst of 61 moves in 41
// transactions publishes 2 notifications: the first move's at once, the
// rest together at the end of the interval — an hour here, so the end is
// the test's FlushMoves (or Close), and what is published in between is
// exact (the interval's timer is notifier's TestCoalescer). None is
// published in a move's transaction.
func TestTasksMovedReachesOtherHandles(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		ctx := backendtest.Ctx(t)
		viewer, _ := backendtest.Store(t, open, driver.WithChangePollInterval(backendtest.FastPoll))
		w := backendtest.Watch(t, viewer, cks.TopicTasksMoved)
		w.Ready(t)

		opts := []driver.Option{driver.WithMovesInterval(time.Hour)}
		c := &movesCounter{Driver: open(t, opts...), published: make(chan struct{}, 100)}
		agent := backend.New(c, opts...)
		t.Cleanup(func() { agent.Close() })
		published := func(what string) {
			t.Helper()
			select {
			case <-c.published:
			case <-time.After(backendtest.WakeDeadline):
				t.Fatalf("%s: not published within %s", what, backendtest.WakeDeadline)
			}
			if w.Next(t) != cks.TopicTasksMoved {
				t.Fatalf("%s: the other handle's watcher saw another topic", what)
			}
		}

		// A creation, alone: published at once.
		backendtest.MustEnqueue(t, agent, cks.NewTask{Type: "first"})
		published("the first move")

		// The burst, within the interval: 20 tasks created (20
		// transactions), claimed into RUNNING (one), 10 completed and 10
		// failed (20 more), 60 moves and creations in all.
		for i := range 20 {
			backendtest.MustEnqueue(t, agent, cks.NewTask{Type: "burst", Title: fmt.Sprint(i), MaxAttempts: 1})
		}
		claimed, err := agent.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"burst"}, N: 20,
			Lease: backendtest.Lease, Running: true})
		if err != nil || len(claimed) != 20 {
			t.Fatalf("claim: %d tasks, %v", len(claimed), err)
		}
		for i, ct := range claimed {
			if i%2 == 0 {
				_, err = agent.Tasks.Complete(ctx, ct.ID, ct.LeaseToken, false, "done")
			} else {
				_, err = agent.Tasks.Fail(ctx, ct.ID, ct.LeaseToken, false, "no")
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := c.outside.Load(); n != 1 {
			t.Fatalf("%d publications during the interval, want 1 (the first move's)", n)
		}
		if err := agent.FlushMoves(ctx); err != nil {
			t.Fatal(err)
		}
		published("the burst, at the interval's end")
		if n, in := c.outside.Load(), c.inside.Load(); n != 2 || in != 0 {
			t.Fatalf("%d publications for 61 moves (%d in their transactions), want 2 and none inside", n, in)
		}

		// A heartbeat moves nothing: nothing to flush. The claim and the
		// completion after it are pending until Close publishes them.
		last := backendtest.MustEnqueue(t, agent, cks.NewTask{Type: "last"})
		if err := agent.FlushMoves(ctx); err != nil {
			t.Fatal(err)
		}
		published("the last creation")
		lease := backendtest.ClaimType(t, agent, "w", "last")
		if err := agent.FlushMoves(ctx); err != nil {
			t.Fatal(err)
		}
		published("the claim")
		if res, err := agent.Tasks.Heartbeat(ctx, last.ID, lease.LeaseToken); err != nil || !res.Held {
			t.Fatal(res, err)
		}
		if err := agent.FlushMoves(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Tasks.Complete(ctx, last.ID, lease.LeaseToken, false, "done"); err != nil {
			t.Fatal(err)
		}
		if err := agent.Close(); err != nil {
			t.Fatal(err)
		}
		published("the completion, by Close")
		if n := c.outside.Load(); n != 5 {
			t.Fatalf("%d publications in all, want 5: the touch published one", n)
		}
	})
}
