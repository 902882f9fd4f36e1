package agents_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/runtime/worker"
)

// taskCommits is a driver that counts the write transactions that
// committed having written a task row (a claim that took a task, an
// update of one), each a commit the ledger paid for.
type taskCommits struct {
	driver.Driver
	mu sync.Mutex
	n  int
}

func (c *taskCommits) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	wrote := false
	err := c.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error {
		w := &taskWrites{Executor: ex}
		err := fn(ctx, w)
		wrote = w.wrote // the attempt that commits
		return err
	})
	if err == nil && wrote {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return err
}

func (c *taskCommits) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

type taskWrites struct {
	driver.Executor
	wrote bool
}

func (w *taskWrites) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	rows, err := w.Executor.TaskClaim(ctx, p)
	w.wrote = w.wrote || len(rows) > 0
	return rows, err
}

func (w *taskWrites) TaskUpdateMany(ctx context.Context, rows []driver.TaskRow) (int, error) {
	n, err := w.Executor.TaskUpdateMany(ctx, rows)
	w.wrote = w.wrote || n > 0
	return n, err
}

func (w *taskWrites) TaskMoveMany(ctx context.Context, p driver.TaskMoveManyParams) (int, error) {
	n, err := w.Executor.TaskMoveMany(ctx, p)
	w.wrote = w.wrote || n > 0
	return n, err
}

// TestAgentPathTwoCommitsPerTask: the agent's claim loop works a task in
// two ledger commits — the claim, which starts it (RUNNING at once, no
// MarkRunning of its own), and the completion.
func TestAgentPathTwoCommitsPerTask(t *testing.T) {
	for _, d := range backendtest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			c := &taskCommits{Driver: d.NewDB(t)(t)}
			st := backend.New(c)
			t.Cleanup(func() { st.Close() })
			const n = 12
			ns := make([]cks.NewTask, n)
			for i := range ns {
				ns[i] = cks.NewTask{Type: "counted"}
			}
			if _, err := st.Tasks.EnqueueMany(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
			before := c.count()
			set := settings("exec", "counted")
			set.HeartbeatInterval, set.Lease = time.Hour, 3*time.Hour // no heartbeat within the test
			ran := make(chan string, n)
			ctx, cancel := context.WithCancel(context.Background())
			_, wait := start(t, ctx, agents.ServicesOf(st), set, func(_ context.Context, a *worker.Attempt) (worker.Result, error) {
				ran <- string(a.Task().State)
				return worker.Result{Output: "ok"}, nil
			})
			for range n {
				if state := <-ran; state != "RUNNING" {
					t.Errorf("the resolver ran a task in %s, want RUNNING", state)
				}
			}
			deadline := time.Now().Add(time.Minute)
			for {
				done, err := st.Tasks.CountTasks(context.Background(), cks.TaskFilter{States: []cks.TaskState{"COMPLETED"}})
				if err != nil {
					t.Fatal(err)
				}
				if done == n {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d tasks completed", done, n)
				}
				time.Sleep(time.Millisecond)
			}
			cancel()
			wait()
			if got := c.count() - before; got != 2*n {
				t.Fatalf("%d task commits for %d tasks, want %d (claim and complete each)", got, n, 2*n)
			}
		})
	}
}
