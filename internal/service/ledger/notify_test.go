package ledger_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// notifyCounter is a driver that records, for each transaction that
// committed, how often each topic was published in it (Notify calls, one
// statement each: pg_notify on Postgres, a counter bump on SQLite).
type notifyCounter struct {
	driver.Driver
	mu      sync.Mutex
	commits []map[string]int
}

func (c *notifyCounter) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	var topics map[string]int
	err := c.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error {
		n := &notifyCounting{Executor: ex, topics: map[string]int{}}
		err := fn(ctx, n)
		topics = n.topics // the attempt that commits (a retried one starts afresh)
		return err
	})
	if err == nil && len(topics) > 0 {
		c.mu.Lock()
		c.commits = append(c.commits, topics)
		c.mu.Unlock()
	}
	return err
}

// take returns the topics of the transactions committed since the last call.
func (c *notifyCounter) take() []map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.commits
	c.commits = nil
	return out
}

type notifyCounting struct {
	driver.Executor
	topics map[string]int
}

func (n *notifyCounting) Notify(ctx context.Context, topic string) error {
	n.topics[topic]++
	return n.Executor.Notify(ctx, topic)
}

// TestNotifyOncePerCommit: however many tasks one transaction opens, it
// publishes tasks_ready once — a completer flush that sends one task back
// to OPEN (a retryable failure) and releases another's dependant, an
// update adding three children, a bulk enqueue — and still publishes it.
func TestNotifyOncePerCommit(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			g := &gate{Driver: dl.open(t)}
			c := &notifyCounter{Driver: g}
			s, ctx := ledger.NewService(c, nil), context.Background()
			ledger.SetMaxFlushes(s, 1) // while the held flush runs, the others queue
			claimed := claimN(t, s, "x", 2)
			done, retry := claimed[0], claimed[1]
			dependant, _, err := s.Enqueue(ctx, cks.NewTask{Type: "d", DependsOn: []int64{done.ID}})
			if err != nil || dependant.State != cks.TaskWaiting {
				t.Fatalf("dependant: %s %v", dependant.State, err)
			}
			blocker := claimN(t, s, "b", 1)[0]
			c.take()
			var wg sync.WaitGroup
			errs := make([]error, 2)
			withHeldFlush(t, s, g, blocker, 2, func() {
				wg.Go(func() { _, errs[0] = s.Complete(ctx, done.ID, done.LeaseToken, false, "ok") })
				wg.Go(func() { _, errs[1] = s.Fail(ctx, retry.ID, retry.LeaseToken, true, "again") })
			})
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			if got := g.sizes(); len(got) != 2 || got[1] != 2 {
				t.Fatalf("flushes of %v tasks, want the two calls in one", got)
			}
			for _, id := range []int64{dependant.ID, retry.ID} {
				if task, err := s.GetTask(ctx, id); err != nil || task.State != cks.TaskOpen {
					t.Fatalf("task %d: %s %v, want OPEN", id, task.State, err)
				}
			}
			wantOnce(t, "the flush", c.take(), 1)

			parent := claimN(t, s, "p", 1)[0]
			c.take()
			if _, err := s.UpdateTask(ctx, ledger.UpdateParams{ID: parent.ID, Actor: "op", Patch: cks.TaskPatch{AddChildren: []cks.NewTask{
				{Type: "c", Title: "1"}, {Type: "c", Title: "2"}, {Type: "c", Title: "3"}}}, Deadline: time.Minute}); err != nil {
				t.Fatal(err)
			}
			// The update revokes the running parent's lease (an abort) and
			// opens three children.
			wantOnce(t, "the update adding children", c.take(), 1)

			if _, err := s.EnqueueMany(ctx, []cks.NewTask{{Type: "m"}, {Type: "m"}, {Type: "m"}}); err != nil {
				t.Fatal(err)
			}
			wantOnce(t, "the bulk enqueue", c.take(), 1)
		})
	}
}

// wantOnce checks that commits holds n transactions and that each
// published tasks_ready exactly once and every other topic at most once.
func wantOnce(t testing.TB, what string, commits []map[string]int, n int) {
	t.Helper()
	if len(commits) != n {
		t.Fatalf("%s: %d transactions notified, want %d: %v", what, len(commits), n, commits)
	}
	for _, topics := range commits {
		for topic, k := range maps.All(topics) {
			if k != 1 {
				t.Errorf("%s: %s published %d times in one transaction, want once: %v", what, topic, k, topics)
			}
		}
		if topics[cks.TopicTasksReady] == 0 {
			t.Errorf("%s: tasks_ready not published: %v", what, topics)
		}
	}
}

// statementCounter is a driver whose transactions count the task
// primitives they call, by name.
type statementCounter struct {
	driver.Driver
	mu    sync.Mutex
	calls map[string]int
}

func (c *statementCounter) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	return c.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error {
		return fn(ctx, &counting{Executor: ex, c: c})
	})
}

func (c *statementCounter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[name]++
}

type counting struct {
	driver.Executor
	c *statementCounter
}

func (e *counting) TaskDedupeFind(ctx context.Context, p driver.TaskDedupeFindParams) (int64, error) {
	e.c.add("TaskDedupeFind")
	return e.Executor.TaskDedupeFind(ctx, p)
}

func (e *counting) TaskDedupeFindMany(ctx context.Context, p driver.TaskDedupeFindManyParams) ([]driver.TaskDedupeHit, error) {
	e.c.add("TaskDedupeFindMany")
	return e.Executor.TaskDedupeFindMany(ctx, p)
}

func (e *counting) TaskInsertMany(ctx context.Context, rows []driver.TaskRow) ([]driver.TaskRow, error) {
	e.c.add("TaskInsertMany")
	return e.Executor.TaskInsertMany(ctx, rows)
}

func (e *counting) TaskGetMany(ctx context.Context, p driver.TaskGetManyParams) ([]driver.TaskRow, error) {
	e.c.add("TaskGetMany")
	return e.Executor.TaskGetMany(ctx, p)
}

func (e *counting) TaskEventInsertMany(ctx context.Context, events []driver.TaskEventRow) error {
	e.c.add("TaskEventInsertMany")
	return e.Executor.TaskEventInsertMany(ctx, events)
}

func (e *counting) TaskDepInsertMany(ctx context.Context, deps []driver.TaskDep) error {
	e.c.add("TaskDepInsertMany")
	return e.Executor.TaskDepInsertMany(ctx, deps)
}

// TestEnqueueManyStatements: a batch costs the same statements whatever its
// size — one read of every dedupe key, one of the dependencies, one of the
// existing tasks its keys found (and their edges), then the rows, the edges
// and the events in one write each.
func TestEnqueueManyStatements(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			c := &statementCounter{Driver: dl.open(t), calls: map[string]int{}}
			s, ctx := ledger.NewService(c, nil), context.Background()
			dep, _, err := s.Enqueue(ctx, cks.NewTask{Type: "d"})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "d", DedupeKey: "k0"}); err != nil {
				t.Fatal(err)
			}
			ns := make([]cks.NewTask, 40)
			for i := range ns {
				ns[i] = cks.NewTask{Type: "m", DedupeKey: fmt.Sprint("k", i%20), DependsOn: []int64{dep.ID},
					DedupeOnce: i%3 == 0}
			}
			c.mu.Lock()
			c.calls = map[string]int{}
			c.mu.Unlock()
			out, err := s.EnqueueMany(ctx, ns)
			if err != nil {
				t.Fatal(err)
			}
			created := 0
			for _, ct := range out {
				if ct.Created {
					created++
				}
			}
			if created != 19 {
				t.Fatalf("%d created, want 19 (k1 … k19; k0 exists)", created)
			}
			want := map[string]int{"TaskDedupeFindMany": 1, "TaskGetMany": 2, "TaskInsertMany": 1,
				"TaskDepInsertMany": 1, "TaskEventInsertMany": 1}
			c.mu.Lock()
			got := maps.Clone(c.calls)
			c.mu.Unlock()
			if !maps.Equal(got, want) {
				t.Fatalf("primitives of a batch of 40: %v, want %v", got, want)
			}
		})
	}
}
