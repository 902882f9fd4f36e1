package agents_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/waitfor"
)

// claimCounting is a ledger whose claims are recorded: how many tasks each
// asked for and got.
type claimCounting struct {
	*ledger.Service
	mu     sync.Mutex
	asked  []int
	gotten []int
}

func (c *claimCounting) Claim(ctx context.Context, p ledger.ClaimParams) ([]cks.ClaimedTask, error) {
	got, err := c.Service.Claim(ctx, p)
	c.mu.Lock()
	c.asked, c.gotten = append(c.asked, p.N), append(c.gotten, len(got))
	c.mu.Unlock()
	return got, err
}

// TestConcurrency: an agent with Concurrency 3 works three tasks at once in
// its one process, claimed in one claim of three, never a fourth while
// they run; its row shows one of them as its current task; stopped, it
// finishes the three (the drain) and leaves the rest untouched.
func TestConcurrency(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st, op := open(t), open(t)
		var ids []int64
		for i := range 5 {
			ids = append(ids, backendtest.MustEnqueue(t, op, cks.NewTask{Type: "par", Title: fmt.Sprint("task ", i)}).ID)
		}
		var (
			mu      sync.Mutex
			inHand  = map[int64]bool{}
			most    int
			release = make(chan struct{})
		)
		tasks := &claimCounting{Service: st.Tasks}
		set := settings("exec", "par")
		set.Concurrency = 3
		ctx, signal := context.WithCancel(context.Background())
		defer signal()
		rep, wait := start(t, ctx, agents.Services{Tasks: tasks, Liveness: st.Liveness, Changes: st.Changes}, set,
			func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
				mu.Lock()
				inHand[a.Task().ID] = true
				most = max(most, len(inHand))
				mu.Unlock()
				<-release
				mu.Lock()
				delete(inHand, a.Task().ID)
				mu.Unlock()
				return worker.Result{Output: "done"}, nil
			})
		waitfor.Until(t, "three tasks in hand at once", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(inHand) == 3
		})
		var running []int64
		for _, id := range ids {
			if taskState(t, op, id).State == cks.TaskRunning {
				running = append(running, id)
			}
		}
		if len(running) != 3 {
			t.Fatalf("%d tasks RUNNING, want 3", len(running))
		}
		waitfor.Until(t, "the row shows a task in hand", func() bool {
			row, err := op.Liveness.GetAgentLiveness(context.Background(), rep.InstanceID())
			return err == nil && row.CurrentTaskID != nil && slices.Contains(running, *row.CurrentTaskID) && row.CurrentTaskType == "par"
		})
		tasks.mu.Lock()
		first := fmt.Sprint(tasks.asked[:1], tasks.gotten[:1])
		tasks.mu.Unlock()
		if first != "[3] [3]" {
			t.Fatalf("first claim asked for and got %s, want one claim of three", first)
		}
		signal() // stop: the three in hand finish, nothing more is claimed
		close(release)
		wait()
		if most != 3 {
			t.Fatalf("at most %d tasks in hand at once, want 3", most)
		}
		for _, id := range ids {
			got := taskState(t, op, id)
			switch {
			case slices.Contains(running, id) && got.State != cks.TaskCompleted:
				t.Fatalf("task %d in hand at the stop is %s, want COMPLETED", id, got.State)
			case !slices.Contains(running, id) && (got.State != cks.TaskOpen || got.Attempts != 0):
				t.Fatalf("task %d claimed after the stop: %s, attempts %d", id, got.State, got.Attempts)
			}
		}
	})
}

// TestConcurrencyRefillsFreeSlots: a slot freed by a finished task is
// filled by the next claim while the other slots still work: the agent
// works all its tasks with two at a time, never more.
func TestConcurrencyRefillsFreeSlots(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st, op := open(t), open(t)
		var ids []int64
		for range 7 {
			ids = append(ids, backendtest.MustEnqueue(t, op, cks.NewTask{Type: "refill"}).ID)
		}
		var (
			mu     sync.Mutex
			inHand int
			most   int
		)
		set := settings("exec", "refill")
		set.Concurrency = 2
		ctx, cancel := context.WithCancel(context.Background())
		_, wait := start(t, ctx, agents.ServicesOf(st), set, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			mu.Lock()
			inHand++
			most = max(most, inHand)
			mu.Unlock()
			defer func() { mu.Lock(); inHand--; mu.Unlock() }()
			return worker.Result{Output: "ok"}, nil
		})
		defer wait()
		defer cancel()
		waitfor.Until(t, "every task completed", func() bool {
			for _, id := range ids {
				if taskState(t, op, id).State != cks.TaskCompleted {
					return false
				}
			}
			return true
		})
		mu.Lock()
		defer mu.Unlock()
		if most > 2 {
			t.Fatalf("%d tasks in hand at once, want at most 2", most)
		}
	})
}

// TestResolverPanicStopsTheAgent: a resolver that panics, one of several
// at work, stops the agent as a panic of the claim loop does: Run returns
// an error naming the panic and its task, and the row reads exited.
func TestResolverPanicStopsTheAgent(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st, op := open(t), open(t)
		task := backendtest.MustEnqueue(t, op, cks.NewTask{Type: "boom"})
		set := settings("exec", "boom")
		set.Concurrency = 2
		rep, done := runWith(t, context.Background(), agents.ServicesOf(st), set,
			func(context.Context, *worker.Attempt) (worker.Result, error) { panic("resolver exploded") },
			agents.Options{Logger: slog.New(slog.DiscardHandler)})
		err := result(t, done)
		if err == nil || !strings.Contains(err.Error(), "resolver exploded") || !strings.Contains(err.Error(), fmt.Sprintf("task %d", task.ID)) {
			t.Fatalf("Run = %v, want the resolver's panic naming task %d", err, task.ID)
		}
		row, err := op.Liveness.GetAgentLiveness(context.Background(), rep.InstanceID())
		if err != nil || row.ExitedAt.IsZero() {
			t.Fatalf("row after the panic %+v, %v", row, err)
		}
	})
}
