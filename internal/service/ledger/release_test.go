package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestReleaseExecutor: the leases of an executor known to be gone end at
// once, each as the reaper ends an expired one — a task with attempts left
// OPEN again (the attempt counted, the reason its last error), one at max
// attempts FAILED with its WAITING dependant BLOCKED, a review back to
// NEEDS_REVIEW — fenced: the gone executor's tokens are refused. Another
// executor's lease is untouched; a second release finds nothing; a blank
// name is refused naming the field. Both backends.
func TestReleaseExecutor(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		const gone, alive = "exec/gone-instance", "exec/alive-instance"
		enqueue := func(n cks.NewTask) int64 {
			t.Helper()
			task, _, err := s.Enqueue(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			return task.ID
		}
		claim := func(worker, typ string) cks.ClaimedTask {
			t.Helper()
			ts, err := s.Claim(ctx, ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: time.Hour, Running: true})
			if err != nil || len(ts) != 1 {
				t.Fatalf("claim %s by %s: %v %v", typ, worker, ts, err)
			}
			return ts[0]
		}
		retry := enqueue(cks.NewTask{Type: "retry", MaxAttempts: 3})
		last := enqueue(cks.NewTask{Type: "last", MaxAttempts: 1})
		dependant := enqueue(cks.NewTask{Type: "after", DependsOn: []int64{last}})
		review := enqueue(cks.NewTask{Type: "review"})
		other := enqueue(cks.NewTask{Type: "other"})
		a, b := claim(gone, "retry"), claim(gone, "last")
		rc := claim("exec/maker", "review")
		if _, err := s.Complete(ctx, review, rc.LeaseToken, true, "please look"); err != nil {
			t.Fatal(err)
		}
		rv, err := s.ClaimReview(ctx, review, gone, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		o := claim(alive, "other")

		released, err := s.ReleaseExecutor(ctx, gone, "cks dev", "executor exited")
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]cks.TaskState{}
		for _, task := range released {
			got[task.ID] = task.State
		}
		want := map[int64]cks.TaskState{retry: cks.TaskOpen, last: cks.TaskFailed, review: cks.TaskNeedsReview}
		if len(got) != len(want) {
			t.Fatalf("released %v, want %v", got, want)
		}
		for id, st := range want {
			task, err := s.GetTask(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got[id] != st || task.State != st || task.ClaimedBy != "" {
				t.Errorf("task %d: released as %s, now %s claimed by %q; want %s, by nobody", id, got[id], task.State, task.ClaimedBy, st)
			}
			ev := task.Events[len(task.Events)-1]
			if ev.Actor != "cks dev" {
				t.Errorf("task %d: last event by %q, want cks dev", id, ev.Actor)
			}
		}
		if task, _ := s.GetTask(ctx, retry); task.Attempts != 1 || task.LastError != "executor exited" {
			t.Errorf("task %d: attempts %d, last error %q; want the attempt counted and the reason", retry, task.Attempts, task.LastError)
		}
		if task, _ := s.GetTask(ctx, dependant); task.State != cks.TaskBlocked {
			t.Errorf("the dependant of the dead letter is %s, want BLOCKED", task.State)
		}
		// Fenced: the gone executor's tokens no longer count.
		for id, tok := range map[int64]string{retry: a.LeaseToken, last: b.LeaseToken} {
			if _, err := s.Complete(ctx, id, tok, false, "zombie"); !errors.Is(err, cks.ErrLeaseLost) {
				t.Errorf("a zombie completes task %d: %v, want ErrLeaseLost", id, err)
			}
			if res, _ := s.Heartbeat(ctx, id, tok); res.Held {
				t.Errorf("a zombie renews the lease of task %d", id)
			}
		}
		if _, err := s.Approve(ctx, review, rv.LeaseToken, "zombie"); !errors.Is(err, cks.ErrLeaseLost) {
			t.Errorf("a zombie approves the review: %v, want ErrLeaseLost", err)
		}
		// The alive executor's lease stands.
		if task, err := s.Complete(ctx, other, o.LeaseToken, false, "done"); err != nil || task.State != cks.TaskCompleted {
			t.Errorf("the alive executor completes task %d: %v %v", other, task.State, err)
		}
		if again, err := s.ReleaseExecutor(ctx, gone, "cks dev", "executor exited"); err != nil || len(again) != 0 {
			t.Errorf("a second release: %v %v, want none", again, err)
		}
		for _, c := range []struct{ executor, actor, why, field string }{
			{"", "cks dev", "x", "executor"}, {gone, "", "x", "actor"}, {gone, "cks dev", "", "reason"}, {"a\x00b", "cks dev", "x", "executor"},
		} {
			if _, err := s.ReleaseExecutor(ctx, c.executor, c.actor, c.why); !cks.IsFieldError(err, c.field) {
				t.Errorf("ReleaseExecutor(%q, %q, %q) = %v, want a FieldError naming %s", c.executor, c.actor, c.why, err, c.field)
			}
		}
	})
}
