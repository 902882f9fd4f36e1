package agents_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/service/notifier"
	"github.com/cks-dev/cks/internal/waitfor"
)

// unnotified is a change watch whose notifications never arrive: the
// agent's own watch hears nothing (its claims wait in the ledger).
type unnotified struct{}

func (unnotified) WatchChanges(ctx context.Context, _ []string, _ func(string)) error {
	<-ctx.Done()
	return nil
}

// panicking is a store whose claims panic.
type panicking struct{ *ledger.Service }

func (panicking) Claim(context.Context, ledger.ClaimParams) ([]cks.ClaimedTask, error) {
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

// TestIdleAgentWaitsInTheLedger: an idle agent's claim waits in the
// ledger's waiting room (ledger.ClaimParams.Wait), not in a sleep of its
// own: a delayed task is claimed when it becomes due on the ledger's clock
// (the room's timer, with no notification and no poll — the agent's own
// watch hears nothing here) and not a second before.
func TestIdleAgentWaitsInTheLedger(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(time.Now())
		b := open(t, driver.WithClock(c))
		st := agents.Services{Tasks: b.Tasks, Liveness: b.Liveness, Changes: unnotified{}}
		set := settings("enrichment", "enrich")
		set.PollInterval = time.Hour // a claim waits ledger.MaxClaimWait at most
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, done := runWith(t, ctx, st, set, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{Output: "ok"}, nil
		}, agents.Options{Clock: c})
		waitfor.Until(t, "the agent's claim to wait in the ledger", func() bool { return b.Tasks.ClaimsWaiting() == 1 })
		task := backendtest.MustEnqueue(t, b, cks.NewTask{Type: "enrich", Delay: "30s"})
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		// The reporter's liveness interval, the claim's wait and the
		// room's timer for the delayed task.
		if err := c.WaitArmed(wctx, 3); err != nil {
			t.Fatal(err)
		}
		c.Advance(29 * time.Second)
		if got := taskState(t, b, task.ID); got.State != cks.TaskOpen {
			t.Fatalf("task %s a second before it was due", got.State)
		}
		c.Advance(time.Second)
		waitfor.Until(t, "the task completed", func() bool { return taskState(t, b, task.ID).State == cks.TaskCompleted })
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
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		rep, done := runWith(t, context.Background(), agents.Services{Tasks: panicking{st.Tasks}, Liveness: st.Liveness, Changes: st.Changes}, settings("critic", "critique"),
			func(context.Context, *worker.Attempt) (worker.Result, error) { return worker.Result{}, nil },
			agents.Options{Logger: slog.New(slog.DiscardHandler)})
		err := result(t, done)
		if err == nil || !strings.Contains(err.Error(), "claim exploded") {
			t.Fatalf("Run = %v, want the claim loop's panic", err)
		}
		row, err := st.Liveness.GetAgentLiveness(context.Background(), rep.InstanceID())
		if err != nil || row.ExitedAt.IsZero() {
			t.Fatalf("row after the panic %+v, %v", row, err)
		}
	})
}

// watching is a store that tracks its WatchChanges calls in progress, by
// topic; the claim loop's wake watch takes a while to end after its
// context does.
type watching struct {
	*notifier.Notifier
	mu      sync.Mutex
	running map[string]int // calls in progress, by their first topic
	seen    map[string]bool
}

func (w *watching) WatchChanges(ctx context.Context, topics []string, f func(string)) error {
	w.mu.Lock()
	w.running[topics[0]]++
	w.seen[topics[0]] = true
	w.mu.Unlock()
	defer func() {
		if topics[0] == cks.TopicTasksReady {
			// A slow end is waited for. Only this package's own watch
			// (the others' waits are their packages' tests): the waits of
			// the others, ended at the same time, would cover it.
			time.Sleep(100 * time.Millisecond)
		}
		w.mu.Lock()
		w.running[topics[0]]--
		w.mu.Unlock()
	}()
	return w.Notifier.WatchChanges(ctx, topics, f)
}

// inProgress returns the topics of the calls in progress and of every
// call made.
func (w *watching) inProgress() (running, seen []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for topic, n := range w.running {
		if n > 0 {
			running = append(running, topic)
		}
	}
	for topic := range w.seen {
		seen = append(seen, topic)
	}
	slices.Sort(running)
	slices.Sort(seen)
	return running, seen
}

// TestRunStopsEverything: by the time Run returns, everything it started
// has ended — the background work, the claim loop and its executor's abort
// watch, the watch that wakes the claim loop, the reporter's stop watch —
// not merely been told to.
func TestRunStopsEverything(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		b := open(t)
		w := &watching{Notifier: b.Changes, running: map[string]int{}, seen: map[string]bool{}}
		st := agents.Services{Tasks: b.Tasks, Liveness: b.Liveness, Changes: w}
		ctx, signal := context.WithCancel(context.Background())
		defer signal()
		var bgRunning sync.WaitGroup
		bgRunning.Add(1)
		bgEnded := make(chan struct{})
		_, done := runWith(t, ctx, st, settings("enrichment", "enrich"),
			func(context.Context, *worker.Attempt) (worker.Result, error) { return worker.Result{Output: "ok"}, nil },
			agents.Options{Background: func(ctx context.Context) error {
				bgRunning.Done()
				<-ctx.Done()
				close(bgEnded)
				return nil
			}})
		bgRunning.Wait()
		want := []string{cks.TopicAgentStop, cks.TopicTaskAborts, cks.TopicTasksReady}
		waitfor.Until(t, "the agent's watches", func() bool {
			running, _ := w.inProgress()
			return slices.Equal(running, want)
		})
		signal()
		if err := result(t, done); err != nil {
			t.Fatal(err)
		}
		select {
		case <-bgEnded:
		default:
			t.Fatal("Run returned before the background work ended")
		}
		if running, seen := w.inProgress(); len(running) != 0 {
			t.Fatalf("watches still running after Run returned: %v (of %v)", running, seen)
		}
	})
}
