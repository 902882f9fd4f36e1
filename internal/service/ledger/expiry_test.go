package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTaskExpiry (both backends, injected clock): a task with expires_at
// not completed by then is cancelled by the lease reaper's pass at that
// time and not before — an OPEN one, and a RUNNING one whose executor gets
// an abort request — with the reason "expired: not completed by TIME"; a
// task completed in time, and one that never expires, stay as they are;
// the pass reports the next expiry.
func TestTaskExpiry(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		at := backendtest.T0.Add(time.Hour)
		idle := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "idle", ExpiresAt: at})
		busy := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "busy", ExpiresAt: at})
		done := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "done", ExpiresAt: at})
		later := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "later", ExpiresAt: at.Add(time.Hour)})
		never := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "never"})
		if !idle.ExpiresAt.Equal(at) || !never.ExpiresAt.IsZero() {
			t.Fatalf("expires_at read back %s and %s; want %s and none", idle.ExpiresAt, never.ExpiresAt, at)
		}
		running := claimTimed(t, s, "busy")
		d := claimTimed(t, s, "done")
		if _, err := s.Tasks.Complete(ctx, d.ID, d.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		sweep := func(to time.Time) (int, time.Time) {
			t.Helper()
			c.Set(to)
			n, next, err := s.Tasks.ExpireTasks(ctx, c.Now())
			if err != nil {
				t.Fatal(err)
			}
			return n, next
		}
		if n, next := sweep(at.Add(-time.Millisecond)); n != 0 || !next.Equal(at) || !s.Tasks.NextExpiry().Equal(at) {
			t.Fatalf("a millisecond early: cancelled %d, next %s; want 0 and %s", n, next, at)
		}
		if n, next := sweep(at); n != 2 || !next.Equal(later.ExpiresAt) {
			t.Fatalf("at the expiry: cancelled %d, next %s; want 2 and %s", n, next, later.ExpiresAt)
		}
		why := "expired: not completed by " + at.Format(time.RFC3339)
		for _, id := range []int64{idle.ID, busy.ID} {
			got := backendtest.MustGet(t, s, id)
			last := got.Events[len(got.Events)-1]
			if got.State != cks.TaskCancelled || got.LastError != why || last.Reason != why || last.Actor != ledger.ActorReaper {
				t.Fatalf("task %d after its expiry: %s, last_error %q, event %+v; want CANCELLED, %q", id, got.State, got.LastError, last, why)
			}
		}
		got := backendtest.MustGet(t, s, busy.ID)
		if len(got.Aborts) != 1 || got.Aborts[0].Outcome != cks.AbortPending || got.Aborts[0].Executor != "w" {
			t.Fatalf("the running task's aborts %+v; want one pending of its executor", got.Aborts)
		}
		if tr, err := s.Tasks.Heartbeat(ctx, running.ID, running.LeaseToken); err != nil || tr.Held || !tr.AbortRequested {
			t.Fatalf("heartbeat of the expired task's lease: %+v, %v; want not held, abort requested", tr, err)
		}
		for id, want := range map[int64]cks.TaskState{done.ID: cks.TaskCompleted, later.ID: cks.TaskOpen, never.ID: cks.TaskOpen} {
			if got := backendtest.MustGet(t, s, id); got.State != want {
				t.Fatalf("task %d is %s, want %s", id, got.State, want)
			}
		}
		if n, next := sweep(at.Add(time.Hour)); n != 1 || !next.IsZero() {
			t.Fatalf("at the later expiry: cancelled %d, next %s; want 1 and none", n, next)
		}
	})
}

// TestTaskExpiryRefusals (both backends): an expires_at not in the future,
// not after the task's run_after, or more than MaxDelay ahead is refused
// naming the field (also a child's), and nothing is written.
func TestTaskExpiryRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		for _, n := range []cks.NewTask{
			{Type: "x", ExpiresAt: backendtest.T0},
			{Type: "x", ExpiresAt: backendtest.T0.Add(-time.Hour)},
			{Type: "x", ExpiresAt: backendtest.T0.Add(cks.MaxDelay + time.Second)},
			{Type: "x", ExpiresAt: backendtest.T0.Add(time.Hour), Delay: "2h"},
		} {
			if _, _, err := s.Tasks.Enqueue(ctx, n); !cks.IsFieldError(err, "expires_at") {
				t.Errorf("enqueue expires_at %s delay %q: %v, want a FieldError naming expires_at", n.ExpiresAt, n.Delay, err)
			}
			if _, err := s.Tasks.EnqueueMany(ctx, []cks.NewTask{{Type: "x"}, n}); !cks.IsFieldError(err, "tasks[1].expires_at") {
				t.Errorf("batch with expires_at %s: %v, want a FieldError naming tasks[1].expires_at", n.ExpiresAt, err)
			}
		}
		if n, err := s.Tasks.CountTasks(ctx, cks.TaskFilter{}); err != nil || n != 0 {
			t.Fatalf("tasks after the refusals: %d, %v; want none", n, err)
		}
	})
}

// TestTaskExpiryUpdate (both backends): update_task's expires_at sets a
// running task's expiry live (not material: the same lease), recorded in
// the edit's event, and the reaper cancels it then; one not in the future
// is refused naming the field and changes nothing.
func TestTaskExpiryUpdate(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x"})
		claimed := claimTimed(t, s, "x")
		if _, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: "op",
			Patch: cks.TaskPatch{ExpiresAt: backendtest.T0.Add(-time.Second)}}); !cks.IsFieldError(err, "expires_at") {
			t.Fatalf("update with a past expires_at: %v, want a FieldError naming expires_at", err)
		}
		at := backendtest.T0.Add(time.Hour)
		res, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: "op", Patch: cks.TaskPatch{ExpiresAt: at}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != cks.UpdateLive || !res.Task.ExpiresAt.Equal(at) || res.Task.State != cks.TaskClaimed {
			t.Fatalf("update: path %s, %s, expires_at %s; want live, CLAIMED, %s", res.Path, res.Task.State, res.Task.ExpiresAt, at)
		}
		ev := backendtest.MustGet(t, s, task.ID).Events
		if last := ev[len(ev)-1]; len(last.Changes) != 1 || last.Changes[0].Field != "expires_at" || last.Changes[0].Old != nil {
			t.Fatalf("edit event %+v; want expires_at from none", last)
		}
		c.Set(at)
		if n, _, err := s.Tasks.ExpireTasks(ctx, c.Now()); err != nil || n != 1 {
			t.Fatalf("pass at the new expiry: %d, %v", n, err)
		}
		if tr, err := s.Tasks.Heartbeat(ctx, claimed.ID, claimed.LeaseToken); err != nil || tr.Held {
			t.Fatalf("heartbeat after the expiry: %+v, %v; want the lease lost", tr, err)
		}
	})
}
