package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// writeCall is one task write a driver saw: the primitive, the states of
// the rows it wrote (in order) and how many events it appended.
type writeCall struct {
	prim   string
	states []string
	events int
}

// writeRecorder is a driver whose executors record their task writes
// (TaskInsertMany, TaskClaim, TaskMoveMany, TaskUpdateMany,
// TaskEventInsertMany).
type writeRecorder struct {
	driver.Driver
	mu    sync.Mutex
	calls []writeCall
}

func (r *writeRecorder) note(c writeCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// take returns the calls since the last take.
func (r *writeRecorder) take() []writeCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

func (r *writeRecorder) Executor() driver.Executor { return writeRecording{r.Driver.Executor(), r} }

func (r *writeRecorder) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	return r.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error { return fn(ctx, writeRecording{ex, r}) })
}

type writeRecording struct {
	driver.Executor
	r *writeRecorder
}

func statesOf(rows []driver.TaskRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.State
	}
	return out
}

func (e writeRecording) TaskMoveMany(ctx context.Context, p driver.TaskMoveManyParams) (int, error) {
	e.r.note(writeCall{prim: "TaskMoveMany", states: statesOf(p.Rows), events: len(p.Events)})
	return e.Executor.TaskMoveMany(ctx, p)
}

func (e writeRecording) TaskUpdateMany(ctx context.Context, rows []driver.TaskRow) (int, error) {
	e.r.note(writeCall{prim: "TaskUpdateMany", states: statesOf(rows)})
	return e.Executor.TaskUpdateMany(ctx, rows)
}

func (e writeRecording) TaskInsertMany(ctx context.Context, rows []driver.TaskRow) ([]driver.TaskRow, error) {
	e.r.note(writeCall{prim: "TaskInsertMany", states: statesOf(rows)})
	return e.Executor.TaskInsertMany(ctx, rows)
}

func (e writeRecording) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	claimed, err := e.Executor.TaskClaim(ctx, p)
	states := make([]string, len(claimed))
	for i, c := range claimed {
		states[i] = c.State
	}
	e.r.note(writeCall{prim: "TaskClaim", states: states})
	return claimed, err
}

func (e writeRecording) TaskEventInsertMany(ctx context.Context, events []driver.TaskEventRow) error {
	e.r.note(writeCall{prim: "TaskEventInsertMany", events: len(events)})
	return e.Executor.TaskEventInsertMany(ctx, events)
}

// TestMovesWrittenNarrowly: the moves of completion, failure (retry and
// final), release of dependants, reclaim, a question and its answer change
// only the lifecycle's columns, so transition writes each in one
// TaskMoveMany with its events — never the whole row (TaskUpdateMany) and
// the events apart (TaskEventInsertMany); a Heartbeat's renewal likewise.
func TestMovesWrittenNarrowly(t *testing.T) {
	move := func(states ...string) writeCall {
		return writeCall{prim: "TaskMoveMany", states: states, events: len(states)}
	}
	cases := []struct {
		name string
		// run does the operation under test on a fresh task of type "a"
		// claimed with token (and a task "b" that depends on it).
		run  func(ctx context.Context, s *ledger.Service, id, dep int64, token string) error
		want []writeCall
	}{
		{"complete releases a dependant", func(ctx context.Context, s *ledger.Service, id, _ int64, token string) error {
			_, err := s.Complete(ctx, id, token, false, "done")
			return err
		}, []writeCall{move("COMPLETED"), move("OPEN")}},
		{"complete to review", func(ctx context.Context, s *ledger.Service, id, _ int64, token string) error {
			_, err := s.Complete(ctx, id, token, true, "done")
			return err
		}, []writeCall{move("NEEDS_REVIEW")}},
		{"retryable failure", func(ctx context.Context, s *ledger.Service, id, _ int64, token string) error {
			_, err := s.Fail(ctx, id, token, true, "flaky")
			return err
		}, []writeCall{move("OPEN")}},
		{"final failure blocks the dependant", func(ctx context.Context, s *ledger.Service, id, _ int64, token string) error {
			_, err := s.Fail(ctx, id, token, false, "broken")
			return err
		}, []writeCall{move("FAILED"), move("BLOCKED")}},
		{"reclaim", func(ctx context.Context, s *ledger.Service, _, _ int64, _ string) error {
			_, err := s.ReclaimExpired(ctx, time.Now().Add(time.Hour))
			return err
		}, []writeCall{move("OPEN")}},
		{"question and answer", func(ctx context.Context, s *ledger.Service, id, _ int64, token string) error {
			if _, err := s.RequestInput(ctx, id, token, "which?"); err != nil {
				return err
			}
			_, err := s.Answer(ctx, id, "alice", "this")
			return err
		}, []writeCall{move("NEEDS_INPUT"), move("OPEN")}},
		// A renewal is no move (no event), but as narrow.
		{"touch", func(ctx context.Context, s *ledger.Service, id, _ int64, token string) error {
			_, err := s.Heartbeat(ctx, id, token)
			return err
		}, []writeCall{{prim: "TaskMoveMany", states: []string{"CLAIMED"}}}},
	}
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		rec := &writeRecorder{Driver: open(t)}
		s := ledger.NewService(rec, nil)
		ctx := context.Background()
		for i, c := range cases {
			// A type of its own, so that no earlier case's task is claimed.
			typ := fmt.Sprintf("a%d", i)
			a, _, err := s.Enqueue(ctx, cks.NewTask{Type: typ})
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := s.Enqueue(ctx, cks.NewTask{Type: "b", DependsOn: []int64{a.ID}})
			if err != nil {
				t.Fatal(err)
			}
			claimed, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Minute})
			if err != nil || len(claimed) != 1 || claimed[0].ID != a.ID {
				t.Fatalf("%s: claim = %+v, %v", c.name, claimed, err)
			}
			rec.take()
			if err := c.run(ctx, s, a.ID, b.ID, claimed[0].LeaseToken); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got := rec.take()
			if !slices.EqualFunc(got, c.want, func(x, y writeCall) bool {
				return x.prim == y.prim && slices.Equal(x.states, y.states) && x.events == y.events
			}) {
				t.Errorf("%s: task writes %+v, want %+v", c.name, got, c.want)
			}
		}
	})
}

// TestMoveOfOtherColumnsWritesTheRow: a move whose set changes a column
// TaskMoveMany does not write (the title, the priority) is written whole,
// so the change is not lost.
func TestMoveOfOtherColumnsWritesTheRow(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		rec := &writeRecorder{Driver: open(t)}
		s := ledger.NewService(rec, nil)
		ctx := context.Background()
		task, _, err := s.Enqueue(ctx, cks.NewTask{Type: "a", Title: "before", Priority: 1})
		if err != nil {
			t.Fatal(err)
		}
		rec.take()
		if _, err := ledger.MoveWith(ctx, s, task.ID, cks.TaskStopped, func(r *driver.TaskRow) {
			r.Title, r.Priority, r.LastError = "after", 5, "why"
		}); err != nil {
			t.Fatal(err)
		}
		want := []writeCall{{prim: "TaskUpdateMany", states: []string{"STOPPED"}}, {prim: "TaskEventInsertMany", events: 1}}
		if got := rec.take(); !slices.EqualFunc(got, want, func(x, y writeCall) bool {
			return x.prim == y.prim && slices.Equal(x.states, y.states) && x.events == y.events
		}) {
			t.Errorf("task writes %+v, want %+v", got, want)
		}
		got, err := s.GetTask(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != cks.TaskStopped || got.Title != "after" || got.Priority != 5 || got.LastError != "why" {
			t.Errorf("task after the move = %+v, want STOPPED, title after, priority 5, last_error why", got)
		}
		events := got.Events
		if last := events[len(events)-1]; last.To != cks.TaskStopped || last.Reason != "test" {
			t.Errorf("last event %+v, want the move to STOPPED", last)
		}
	})
}

// TestMoveOfAVanishedRowConflicts: a move of a row that is not there is
// ErrConflict, narrow or whole, and leaves no event behind.
func TestMoveOfAVanishedRowConflicts(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		d := open(t)
		s := ledger.NewService(d, nil)
		ctx := context.Background()
		for _, c := range []struct {
			name string
			set  func(r *driver.TaskRow)
		}{
			{"narrow", nil},
			{"whole", func(r *driver.TaskRow) { r.Title = "other" }},
		} {
			gone := driver.TaskRow{ID: 999, Type: "a", State: "OPEN", MaxAttempts: 3, Revision: 1,
				Payload: []byte(`{}`), Metadata: []byte(`{}`)}
			err := ledger.MoveRow(ctx, s, gone, cks.TaskStopped, c.set)
			if !errors.Is(err, cks.ErrConflict) {
				t.Errorf("%s: move of a missing row: err = %v, want ErrConflict", c.name, err)
			}
			events, err := d.Executor().TaskEventList(ctx, 999)
			if err != nil || len(events) != 0 {
				t.Errorf("%s: events of the missing row = %+v, %v; want none", c.name, events, err)
			}
		}
	})
}

// TestHotPathRows counts the rows each move of the hot path writes (issue
// 27): a task's insert, its claim and its end are one row of the task
// each, and the end adds the one history row that holds the whole attempt:
// 4 rows a task, a start of its own (MarkRunning) one more write of the
// task's row and no history row. The history rows in the database are
// counted too: one a task.
func TestHotPathRows(t *testing.T) {
	cases := []struct {
		name    string
		running bool // claimed straight into RUNNING
		start   bool // MarkRunning after the claim
		end     func(ctx context.Context, s *ledger.Service, id int64, token string) error
		want    int
	}{
		{"claim running, complete", true, false, func(ctx context.Context, s *ledger.Service, id int64, token string) error {
			_, err := s.Complete(ctx, id, token, false, "done")
			return err
		}, 4},
		{"claim, complete", false, false, func(ctx context.Context, s *ledger.Service, id int64, token string) error {
			_, err := s.Complete(ctx, id, token, false, "done")
			return err
		}, 4},
		{"claim running, fail", true, false, func(ctx context.Context, s *ledger.Service, id int64, token string) error {
			_, err := s.Fail(ctx, id, token, false, "broken")
			return err
		}, 4},
		{"claim running, retryable failure", true, false, func(ctx context.Context, s *ledger.Service, id int64, token string) error {
			_, err := s.Fail(ctx, id, token, true, "flaky")
			return err
		}, 4},
		{"claim, start, complete", false, true, func(ctx context.Context, s *ledger.Service, id int64, token string) error {
			_, err := s.Complete(ctx, id, token, false, "done")
			return err
		}, 5},
	}
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		rec := &writeRecorder{Driver: open(t)}
		s := ledger.NewService(rec, nil)
		ctx := context.Background()
		for i, c := range cases {
			typ := fmt.Sprintf("hot%d", i)
			rec.take()
			task, _, err := s.Enqueue(ctx, cks.NewTask{Type: typ})
			if err != nil {
				t.Fatal(err)
			}
			claimed, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1,
				Lease: time.Minute, Running: c.running})
			if err != nil || len(claimed) != 1 {
				t.Fatalf("%s: claim = %+v, %v", c.name, claimed, err)
			}
			if c.start {
				if _, err := s.MarkRunning(ctx, task.ID, claimed[0].LeaseToken); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.end(ctx, s, task.ID, claimed[0].LeaseToken); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			calls, rows := rec.take(), 0
			for _, w := range calls {
				rows += len(w.states) + w.events
			}
			if rows != c.want {
				t.Errorf("%s: %d rows written (%+v), want %d", c.name, rows, calls, c.want)
			}
			events, err := rec.Executor().TaskEventList(ctx, task.ID)
			if err != nil || len(events) != 1 || events[0].ClaimedAt.IsZero() {
				t.Errorf("%s: history rows %+v, %v; want the one that ends the attempt", c.name, events, err)
			}
		}
	})
}
