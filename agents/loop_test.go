package agents_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/agents"
	"github.com/cks-dev/cks/backend/backendtest"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/cks-dev/cks/worker"
)

// unnotified is a change watch whose notifications never arrive: the
// agent's idle wait ends only by its poll.
type unnotified struct{}

func (unnotified) WatchChanges(ctx context.Context, _ []string, _ func(string)) error {
	<-ctx.Done()
	return nil
}

// panicking is a store whose claims panic.
type panicking struct{ *ledger.Service }

func (panicking) Claim(context.Context, string, []string, int, time.Duration) ([]cks.ClaimedTask, error) {
	panic("claim exploded")
}

func (panicking) ClaimWith(context.Context, ledger.ClaimParams) ([]cks.ClaimedTask, error) {
	panic("claim exploded")
}

// runWith runs an agent with opts (its Started replaced) and returns its
// reporter and a channel with Run's result.
func runWith(t *testing.T, ctx context.Context, st agents.Services, set agents.Settings, r worker.Resolver, opts agents.Options) (*liveness.Reporter, <-chan error) {
	t.Helper()
	started := make(chan *liveness.Reporter, 1)
	done := make(chan error, 1)
	opts.Started = func(rep *liveness.Reporter) { started <- rep }
	go func() { done <- agents.Run(ctx, st, set, r, opts) }()
	select {
	case rep := <-started:
		return rep, done
	case err := <-done:
		t.Fatalf("Run returned before it started: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("agent did not start")
	}
	return nil, nil
}

// TestPollsOnItsClock: without a notification an idle agent claims new work
// at its next poll, one PollInterval of Options.Clock after it found none,
// and not before.
func TestPollsOnItsClock(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open storetest.Opener) {
		b, op := open(t), open(t)
		st := agents.Services{Tasks: b.Tasks, Liveness: b.Liveness, Changes: unnotified{}}
		c := clock.NewFake(time.Now())
		set := settings("enrichment", "enrich")
		set.PollInterval = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, done := runWith(t, ctx, st, set, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{Output: "ok"}, nil
		}, agents.Options{Clock: c})
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		// The reporter's liveness interval and the claim loop's idle poll.
		if err := c.WaitArmed(wctx, 2); err != nil {
			t.Fatal(err)
		}
		task := storetest.MustEnqueue(t, op, cks.NewTask{Type: "enrich"})
		if got := taskState(t, op, task.ID); got.State != cks.TaskOpen {
			t.Fatalf("task %s before the poll came round", got.State)
		}
		c.Advance(set.PollInterval - time.Second)
		if got := taskState(t, op, task.ID); got.State != cks.TaskOpen {
			t.Fatalf("task %s a second before the poll", got.State)
		}
		c.Advance(time.Second)
		waitUntil(t, "the task completed", func() bool { return taskState(t, op, task.ID).State == cks.TaskCompleted })
		cancel()
		if err := result(t, done); err != nil {
			t.Fatal(err)
		}
	})
}

// TestClaimLoopPanic: a panic of the claim loop stops the agent, which writes
// its final heartbeat and returns an error saying so (the process exits
// non-zero) instead of crashing without one.
func TestClaimLoopPanic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open storetest.Opener) {
		st := open(t)
		rep, done := runWith(t, context.Background(), agents.Services{Tasks: panicking{st.Tasks}, Liveness: st.Liveness, Changes: st.Changes}, settings("critic", "critique"),
			func(context.Context, *worker.Attempt) (worker.Result, error) { return worker.Result{}, nil },
			agents.Options{Logger: slog.New(slog.DiscardHandler)})
		err := result(t, done)
		if err == nil || !strings.Contains(err.Error(), "claim exploded") {
			t.Fatalf("Run = %v, want the claim loop's panic", err)
		}
		row, err := st.Liveness.GetAgentLiveness(context.Background(), rep.InstanceID())
		if err != nil || !row.LastHeartbeatAt.Equal(liveness.Epoch) {
			t.Fatalf("row after the panic %+v, %v", row, err)
		}
	})
}
