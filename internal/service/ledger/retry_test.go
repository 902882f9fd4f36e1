package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// failed enqueues n and fails its only attempt (max_attempts 1), having
// recorded evidence under it; it returns the FAILED task.
func failed(t testing.TB, s *backend.Backend, n cks.NewTask) cks.Task {
	t.Helper()
	ctx := context.Background()
	n.MaxAttempts = 1
	task, _, err := s.Tasks.Enqueue(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w1", Types: []string{n.Type}, N: 1, Lease: time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != task.ID {
		t.Fatalf("claim %s: %+v, %v", n.Type, got, err)
	}
	if _, err := s.Tasks.AddEvidence(ctx, task.ID, got[0].LeaseToken, "log", "the first attempt's"); err != nil {
		t.Fatal(err)
	}
	out, err := s.Tasks.Fail(ctx, task.ID, got[0].LeaseToken, true, "it broke")
	if err != nil || out.State != cks.TaskFailed {
		t.Fatalf("fail: %s, %v", out.State, err)
	}
	return out
}

// stateOf is task id's state.
func stateOf(t testing.TB, s *backend.Backend, id int64) cks.Task {
	t.Helper()
	task, err := s.Tasks.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestRetry: a FAILED or a CANCELLED task is OPEN again with a fresh attempt
// budget and one restart more; its failed attempt, with its evidence, stays
// in its history; the retry has an event of its own; the next claim is
// attempt 1 of restart 1. Both backends.
func TestRetry(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		cancelled, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "retry-cancelled"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Tasks.Cancel(ctx, cancelled.ID, "op", "not now"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name     string
			task     cks.Task
			attempts int // spent before the retry
		}{
			{"failed", failed(t, s, cks.NewTask{Type: "retry-failed"}), 1},
			{"cancelled", stateOf(t, s, cancelled.ID), 0},
		} {
			got, err := s.Tasks.Retry(ctx, tc.task.ID, "op", "fixed the cause")
			if err != nil {
				t.Fatalf("%s: retry: %v", tc.name, err)
			}
			if got.State != cks.TaskOpen || got.Attempts != 0 || got.Restarts != 1 || got.MaxAttempts != tc.task.MaxAttempts {
				t.Fatalf("%s: retried %s attempts %d/%d restarts %d; want OPEN 0/%d, restart 1", tc.name, got.State,
					got.Attempts, got.MaxAttempts, got.Restarts, tc.task.MaxAttempts)
			}
			full := stateOf(t, s, tc.task.ID)
			ev := full.Events[len(full.Events)-1]
			if ev.From != tc.task.State || ev.To != cks.TaskOpen || ev.Actor != "op" || ev.Attempt != tc.attempts ||
				!strings.HasPrefix(ev.Reason, "fixed the cause (from "+string(tc.task.State)) {
				t.Errorf("%s: the retry's event %+v", tc.name, ev)
			}
			if tc.attempts > 0 {
				if len(full.History) != 1 || full.History[0].Restart != 0 || full.History[0].Attempt != 1 ||
					len(full.History[0].Evidence) != 1 || full.Current == nil || len(full.Current.Evidence) != 0 {
					t.Errorf("%s: history %+v, current %+v; want the failed attempt in history, nothing current", tc.name,
						full.History, full.Current)
				}
			}
			claimed, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w2", Types: []string{tc.task.Type}, N: 1, Lease: time.Minute})
			if err != nil || len(claimed) != 1 || claimed[0].Attempts != 1 || claimed[0].Restarts != 1 {
				t.Fatalf("%s: claim after the retry: %+v, %v; want attempt 1 of restart 1", tc.name, claimed, err)
			}
		}
	})
}

// TestRetryRefused: only a FAILED or CANCELLED task is retried — OPEN,
// STOPPED, COMPLETED and one already retried are conflicts — and a task
// whose dedupe_key a live task holds now is too; a refusal changes
// nothing. Both backends.
func TestRetryRefused(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		opened, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "refused-open"})
		stopped, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "refused-stopped"})
		if _, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: stopped.ID, Actor: "op", Reason: "hold", Deadline: time.Second}); err != nil {
			t.Fatal(err)
		}
		done, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "refused-done"})
		c, _ := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{done.Type}, N: 1, Lease: time.Minute})
		if _, err := s.Tasks.Complete(ctx, done.ID, c[0].LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		again := failed(t, s, cks.NewTask{Type: "refused-again"})
		if _, err := s.Tasks.Retry(ctx, again.ID, "op", ""); err != nil {
			t.Fatal(err)
		}
		keyed := failed(t, s, cks.NewTask{Type: "refused-keyed", DedupeKey: "k"})
		holder, created, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "refused-keyed", DedupeKey: "k"})
		if err != nil || !created {
			t.Fatalf("a live task with the failed one's key: %v, created %v", err, created)
		}
		for _, tc := range []struct {
			name string
			id   int64
			want string
		}{
			{"open", opened.ID, "is OPEN, retry needs FAILED or CANCELLED"},
			{"stopped", stopped.ID, "is STOPPED"},
			{"completed", done.ID, "is COMPLETED"},
			{"retried", again.ID, "is OPEN"},
			{"dedupe key held", keyed.ID, "a live task holds its dedupe_key"},
		} {
			before := stateOf(t, s, tc.id)
			_, err := s.Tasks.Retry(ctx, tc.id, "op", "")
			if !errors.Is(err, cks.ErrConflict) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: retry = %v, want a conflict saying %q", tc.name, err, tc.want)
			}
			if after := stateOf(t, s, tc.id); after.State != before.State || len(after.Events) != len(before.Events) ||
				after.Restarts != before.Restarts || after.Attempts != before.Attempts {
				t.Errorf("%s: a refused retry changed the task: %+v → %+v", tc.name, before, after)
			}
		}
		// Once the key's live task is finished, the retry goes.
		if _, err := s.Tasks.Cancel(ctx, holder.ID, "op", "make way"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Tasks.Retry(ctx, keyed.ID, "op", ""); err != nil || got.State != cks.TaskOpen {
			t.Errorf("retry once the key is free: %s, %v", got.State, err)
		}
		var fe *cks.FieldError
		if _, err := s.Tasks.Retry(ctx, again.ID, "op", "bad\x00reason"); !errors.As(err, &fe) || fe.Field != "reason" {
			t.Errorf("a reason with a NUL: %v, want a FieldError naming reason", err)
		}
	})
}

// TestRetryDependencies: a retry re-evaluates the task's own dependencies
// (BLOCKED while one is FAILED) and unblocks what its failure blocked, down
// the graph: each dependant no other FAILED, CANCELLED or BLOCKED
// dependency holds waits again, and opens when the retried task completes.
// Both backends.
func TestRetryDependencies(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		enq := func(typ string, deps ...int64) cks.Task {
			t.Helper()
			task, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, DependsOn: deps})
			if err != nil {
				t.Fatal(err)
			}
			return task
		}
		a := enq("dep-a")
		other := failed(t, s, cks.NewTask{Type: "dep-other"})
		b := enq("dep-b", a.ID)           // WAITING on a
		c := enq("dep-c", b.ID)           // WAITING on b
		d := enq("dep-d", a.ID, other.ID) // BLOCKED by other already
		x := enq("dep-x", other.ID)       // BLOCKED by other
		got, _ := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"dep-a"}, N: 1, Lease: time.Minute})
		if _, err := s.Tasks.Fail(ctx, a.ID, got[0].LeaseToken, false, "broke"); err != nil {
			t.Fatal(err)
		}
		want := func(when string, states map[int64]cks.TaskState) {
			t.Helper()
			for id, st := range states {
				if got := stateOf(t, s, id).State; got != st {
					t.Errorf("%s: task %d is %s, want %s", when, id, got, st)
				}
			}
		}
		want("after a failed", map[int64]cks.TaskState{a.ID: cks.TaskFailed, b.ID: cks.TaskBlocked, c.ID: cks.TaskBlocked,
			d.ID: cks.TaskBlocked, x.ID: cks.TaskBlocked})

		if r, err := s.Tasks.Retry(ctx, a.ID, "op", ""); err != nil || r.State != cks.TaskOpen {
			t.Fatalf("retry a: %s, %v", r.State, err)
		}
		want("after a's retry", map[int64]cks.TaskState{a.ID: cks.TaskOpen, b.ID: cks.TaskWaiting, c.ID: cks.TaskWaiting,
			d.ID: cks.TaskBlocked, x.ID: cks.TaskBlocked})
		if ev := stateOf(t, s, c.ID).Events; ev[len(ev)-1].Actor != "op" || !strings.HasPrefix(ev[len(ev)-1].Reason, "unblocked") {
			t.Errorf("c's unblocking event %+v", ev[len(ev)-1])
		}
		// x is cancelled, then retried: its dependency still FAILED, BLOCKED.
		if _, err := s.Tasks.Cancel(ctx, x.ID, "op", "drop"); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Tasks.Retry(ctx, x.ID, "op", ""); err != nil || r.State != cks.TaskBlocked {
			t.Errorf("retry of a task whose dependency FAILED: %s, %v; want BLOCKED", r.State, err)
		}
		got, _ = s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"dep-a"}, N: 1, Lease: time.Minute})
		if len(got) != 1 {
			t.Fatal("the retried task is not claimable")
		}
		if _, err := s.Tasks.Complete(ctx, a.ID, got[0].LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		want("after a completed", map[int64]cks.TaskState{b.ID: cks.TaskOpen, c.ID: cks.TaskWaiting, d.ID: cks.TaskBlocked})
	})
}
