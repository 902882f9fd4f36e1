package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestAttemptTimeout (both backends, injected clock): an attempt of a task
// with attempt_timeout 10m that keeps heartbeating is ended by the lease
// reaper's pass at claim+10m and no sooner — its lease revoked (the old
// token's heartbeat answers not held, abort requested), a pending abort requested of its
// executor with the reason, the task OPEN again with the attempt counted
// and the event and last error "timed out after 10m"; its second attempt
// timing out fails it by max_attempts. A task without a timeout runs on,
// and the pass reports the next deadline.
func TestAttemptTimeout(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "slow", AttemptTimeout: "10m", MaxAttempts: 2})
		free := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "free"})
		if task.AttemptTimeout != "10m" || free.AttemptTimeout != "" {
			t.Fatalf("attempt_timeout read back %q and %q; want 10m and none", task.AttemptTimeout, free.AttemptTimeout)
		}
		claimTimed(t, s, "free")
		first := claimTimed(t, s, "slow")
		if want := backendtest.T0.Add(10 * time.Minute); !first.AttemptDeadline.Equal(want) {
			t.Fatalf("claimed task's attempt_deadline %s, want %s", first.AttemptDeadline, want)
		}
		sweep := func(at time.Time) (int, time.Time) {
			t.Helper()
			c.Set(at)
			n, next, err := s.Tasks.TimeOutAttempts(ctx, c.Now())
			if err != nil {
				t.Fatal(err)
			}
			return n, next
		}

		// A live agent heartbeats: no matter, the attempt ends at its time.
		c.Set(backendtest.T0.Add(5 * time.Minute))
		if _, err := s.Tasks.Heartbeat(ctx, first.ID, first.LeaseToken); err != nil {
			t.Fatal(err)
		}
		if n, next := sweep(backendtest.T0.Add(10*time.Minute - time.Millisecond)); n != 0 || !next.Equal(first.AttemptDeadline) {
			t.Fatalf("a millisecond early: ended %d, next deadline %s; want 0 and %s", n, next, first.AttemptDeadline)
		}
		if got := s.Tasks.NextAttemptDeadline(); !got.Equal(first.AttemptDeadline) {
			t.Fatalf("NextAttemptDeadline %s, want %s", got, first.AttemptDeadline)
		}
		if n, next := sweep(backendtest.T0.Add(10 * time.Minute)); n != 1 || !next.IsZero() {
			t.Fatalf("at the deadline: ended %d, next %s; want 1 and none", n, next)
		}
		got := backendtest.MustGet(t, s, task.ID)
		const why = "timed out after 10m"
		last := got.Events[len(got.Events)-1]
		if got.State != cks.TaskOpen || got.Attempts != 1 || got.LastError != why || last.Reason != why || last.Actor != ledger.ActorReaper {
			t.Fatalf("after the timeout: %s attempts %d last_error %q, event %+v; want OPEN, 1, %q", got.State, got.Attempts, got.LastError, last, why)
		}
		if len(got.Aborts) != 1 || got.Aborts[0].Reason != why || got.Aborts[0].Outcome != cks.AbortPending || got.Aborts[0].Executor != "w" {
			t.Fatalf("aborts %+v; want one pending, reason %q, of executor w", got.Aborts, why)
		}
		if tr, err := s.Tasks.Heartbeat(ctx, first.ID, first.LeaseToken); err != nil || tr.Held || !tr.AbortRequested {
			t.Fatalf("heartbeat of the timed-out lease: %+v, %v; want not held, abort requested", tr, err)
		}
		if ab, err := s.Tasks.ConfirmAbort(ctx, first.ID, first.LeaseToken); err != nil || ab.Outcome != cks.AbortConfirmed {
			t.Fatalf("the executor confirms: %+v, %v", ab, err)
		}
		if got := backendtest.MustGet(t, s, free.ID); got.State != cks.TaskClaimed {
			t.Fatalf("the task without a timeout is %s, want CLAIMED", got.State)
		}

		// The second attempt times out too: FAILED by max_attempts.
		second := claimTimed(t, s, "slow")
		if n, _ := sweep(second.ClaimedAt.Add(10 * time.Minute)); n != 1 {
			t.Fatalf("second attempt: ended %d, want 1", n)
		}
		got = backendtest.MustGet(t, s, task.ID)
		last = got.Events[len(got.Events)-1]
		if got.State != cks.TaskFailed || got.Attempts != 2 || !strings.HasPrefix(last.Reason, why) || !strings.Contains(got.LastError, "max attempts") {
			t.Fatalf("after the second timeout: %s attempts %d, event %q, last_error %q; want FAILED, 2, %q…max attempts",
				got.State, got.Attempts, last.Reason, got.LastError, why)
		}
		if n, _ := sweep(backendtest.T0.Add(24 * time.Hour)); n != 0 {
			t.Fatalf("a pass with nothing timed left ended %d", n)
		}
	})
}

// TestAttemptTimeoutUpdate (both backends): update_task's attempt_timeout
// is applied live to a running task (not material: no restart, the same
// lease) and moves the running attempt's deadline, which is its claim plus
// the new timeout; the edit's event records old and new.
func TestAttemptTimeoutUpdate(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "slow", AttemptTimeout: "1h"})
		claimed := claimTimed(t, s, "slow")
		res, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: "op", Patch: cks.TaskPatch{AttemptTimeout: "90s"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != cks.UpdateLive || res.Task.AttemptTimeout != "1m30s" || !res.Task.AttemptDeadline.Equal(claimed.ClaimedAt.Add(90*time.Second)) {
			t.Fatalf("update: path %s, attempt_timeout %q, deadline %s; want live, 1m30s, claim+90s", res.Path, res.Task.AttemptTimeout, res.Task.AttemptDeadline)
		}
		ev := backendtest.MustGet(t, s, task.ID).Events
		last := ev[len(ev)-1]
		if len(last.Changes) != 1 || string(last.Changes[0].Old) != `"1h"` || string(last.Changes[0].New) != `"1m30s"` {
			t.Fatalf("edit event %+v; want attempt_timeout 1h → 1m30s", last)
		}
		c.Set(claimed.ClaimedAt.Add(90 * time.Second))
		if n, _, err := s.Tasks.TimeOutAttempts(ctx, c.Now()); err != nil || n != 1 {
			t.Fatalf("pass at claim+90s: %d, %v; want the attempt ended", n, err)
		}
		if got := backendtest.MustGet(t, s, task.ID); got.LastError != "timed out after 1m30s" {
			t.Fatalf("last_error %q", got.LastError)
		}
	})
}

// TestAttemptTimeoutRefusals (both backends): an attempt timeout that is
// not a duration from 1s to 168h is refused naming the field, at creation
// (also a child's) and by update, and changes nothing.
func TestAttemptTimeoutRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t"})
		for _, bad := range []cks.Duration{"-1m", "0", "0s", "500ms", "169h", "soon", "10"} {
			if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "t", AttemptTimeout: bad}); !cks.IsFieldError(err, "attempt_timeout") {
				t.Errorf("create with attempt_timeout %q: %v; want a FieldError naming attempt_timeout", bad, err)
			}
			_, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: "op", Patch: cks.TaskPatch{AttemptTimeout: bad}})
			if !cks.IsFieldError(err, "attempt_timeout") {
				t.Errorf("update with attempt_timeout %q: %v; want a FieldError naming attempt_timeout", bad, err)
			}
			_, err = s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: task.ID, Actor: "op",
				Patch: cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "c", AttemptTimeout: bad}}}})
			if !cks.IsFieldError(err, "add_children[0].attempt_timeout") {
				t.Errorf("child with attempt_timeout %q: %v; want a FieldError naming add_children[0].attempt_timeout", bad, err)
			}
		}
		if got := backendtest.MustGet(t, s, task.ID); got.AttemptTimeout != "" || len(got.Events) != 1 {
			t.Fatalf("refusals changed the task: %+v", got)
		}
		if n, err := s.Tasks.CountTasks(ctx, cks.TaskFilter{}); err != nil || n != 1 {
			t.Fatalf("%d tasks, %v; want the one", n, err)
		}
	})
}

// claimTimed claims the one task of typ for worker w with an hour's lease.
func claimTimed(t *testing.T, s *backend.Backend, typ string) cks.ClaimedTask {
	t.Helper()
	got, err := s.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Hour})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim %s: %+v, %v", typ, got, err)
	}
	return got[0]
}
