package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/waitfor"
)

// TestDelayedTask (both backends): a task created with delay or run_after
// is OPEN with that run_after and no claim takes it before then; at its
// time a claim does. A time already past is no delay; a dependent delayed
// task is held back after its dependency completes too; a claim that
// waits is answered the moment the task is due (the waiting room's timer,
// with no notification then).
func TestDelayedTask(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		claim := func(typ string) []cks.ClaimedTask {
			t.Helper()
			got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 5, Lease: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		delayed := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "later", Delay: "10m"})
		at := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "at", RunAfter: backendtest.T0.Add(2 * time.Hour)})
		past := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "past", RunAfter: backendtest.T0.Add(-time.Hour)})
		if delayed.State != cks.TaskOpen || !delayed.RunAfter.Equal(backendtest.T0.Add(10*time.Minute)) {
			t.Fatalf("task with delay 10m: %s run_after %s; want OPEN, run_after %s", delayed.State, delayed.RunAfter, backendtest.T0.Add(10*time.Minute))
		}
		if !at.RunAfter.Equal(backendtest.T0.Add(2 * time.Hour)) {
			t.Fatalf("task with run_after: run_after %s", at.RunAfter)
		}
		if !past.RunAfter.IsZero() || len(claim("past")) != 1 {
			t.Fatalf("task with a past run_after: run_after %s; want none, and claimable now", past.RunAfter)
		}
		if got := claim("later"); len(got) != 0 {
			t.Fatalf("claimed %+v before its delay ran out", got)
		}
		if got := backendtest.MustGet(t, s, delayed.ID); !got.RunAfter.Equal(delayed.RunAfter) {
			t.Fatalf("read back: run_after %s, want %s", got.RunAfter, delayed.RunAfter)
		}
		c.Advance(10*time.Minute - time.Millisecond)
		if got := claim("later"); len(got) != 0 {
			t.Fatalf("claimed a millisecond early: %+v", got)
		}
		c.Advance(time.Millisecond)
		if got := claim("later"); len(got) != 1 || got[0].ID != delayed.ID || !got[0].RunAfter.IsZero() {
			t.Fatalf("claim at its time: %+v; want task %d, run_after cleared", got, delayed.ID)
		}

		// A waiting claim is answered at the time, no sooner (it waits
		// less than MaxClaimWait for it).
		c.Set(at.RunAfter.Add(-ledger.MaxClaimWait / 2))
		armed := c.Armed()
		done := waitingClaim(ctx, s, ledger.ClaimParams{Worker: "waiter", Types: []string{"at"}, N: 1, Wait: ledger.MaxClaimWait})
		if err := armedWithin(c, armed+2); err != nil {
			t.Fatalf("the claim's deadline and the room's timer for the delayed task: %v", err)
		}
		select {
		case r := <-done:
			t.Fatalf("claim answered before the task was due: %+v, %v", r.tasks, r.err)
		default:
		}
		c.Set(at.RunAfter)
		if r := answer(t, "the waiter of the delayed task", done); r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != at.ID {
			t.Fatalf("waiter: %+v, %v; want task %d", r.tasks, r.err, at.ID)
		}

		// Behind a dependency: WAITING, then OPEN and still held back.
		dep := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "dep"})
		child := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "child", DependsOn: []int64{dep.ID}, Delay: "1h"})
		if child.State != cks.TaskWaiting || !child.RunAfter.Equal(c.Now().Add(time.Hour)) {
			t.Fatalf("dependent delayed task: %s run_after %s", child.State, child.RunAfter)
		}
		d := claim("dep")
		if _, err := s.Tasks.Complete(ctx, d[0].ID, d[0].LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		if got := backendtest.MustGet(t, s, child.ID); got.State != cks.TaskOpen || len(claim("child")) != 0 {
			t.Fatalf("released child: %s; want OPEN and not claimable before its run_after", got.State)
		}
		c.Advance(time.Hour)
		if got := claim("child"); len(got) != 1 {
			t.Fatalf("child at its time: %+v", got)
		}
	})
}

// TestDelayedTaskRefusals: delay and run_after are refused, naming the
// field, when both are given, when delay is no duration from 0 to
// MaxDelay, or when run_after is further ahead than MaxDelay — for one
// task and as an item of a batch — and nothing is written.
func TestDelayedTaskRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		for _, tc := range []struct {
			n     cks.NewTask
			field string
		}{
			{cks.NewTask{Type: "x", Delay: "1m", RunAfter: backendtest.T0.Add(time.Hour)}, "run_after"},
			{cks.NewTask{Type: "x", Delay: "soon"}, "delay"},
			{cks.NewTask{Type: "x", Delay: "-1s"}, "delay"},
			{cks.NewTask{Type: "x", Delay: "8785h"}, "delay"},
			{cks.NewTask{Type: "x", RunAfter: backendtest.T0.Add(cks.MaxDelay + time.Second)}, "run_after"},
		} {
			if _, _, err := s.Tasks.Enqueue(ctx, tc.n); !cks.IsFieldError(err, tc.field) {
				t.Errorf("enqueue delay %q run_after %s: %v, want a FieldError naming %s", tc.n.Delay, tc.n.RunAfter, err, tc.field)
			}
			if _, err := s.Tasks.EnqueueMany(ctx, []cks.NewTask{{Type: "x"}, tc.n}); !cks.IsFieldError(err, "tasks[1]."+tc.field) {
				t.Errorf("batch with delay %q run_after %s: %v, want a FieldError naming tasks[1].%s", tc.n.Delay, tc.n.RunAfter, err, tc.field)
			}
		}
		if n, err := s.Tasks.CountTasks(ctx, cks.TaskFilter{}); err != nil || n != 0 {
			t.Fatalf("tasks after the refusals: %d, %v; want none", n, err)
		}
		ok := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", RunAfter: backendtest.T0.Add(cks.MaxDelay)})
		if !ok.RunAfter.Equal(backendtest.T0.Add(cks.MaxDelay)) {
			t.Fatalf("run_after at MaxDelay: %s", ok.RunAfter)
		}
	})
}

// TestUpdateDelay (both backends): update_task's delay and run_after hold
// an OPEN task back as at creation (not material: in place, the revision
// kept), and its event records run_after before and after; a run_after
// already past makes a delayed task claimable at once, and a claim that
// waits for it is answered then (the waiting room hears of it); a WAITING
// task keeps its delay once released.
func TestUpdateDelay(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		update := func(id int64, p cks.TaskPatch) cks.UpdateResult {
			t.Helper()
			res, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: id, Actor: "op", Patch: p})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "later"})
		res := update(task.ID, cks.TaskPatch{Delay: "10m"})
		want := backendtest.T0.Add(10 * time.Minute)
		if res.Path != cks.UpdateInPlace || res.Task.State != cks.TaskOpen || !res.Task.RunAfter.Equal(want) || res.Task.Revision != 1 {
			t.Fatalf("update delay 10m: path %s, %s, run_after %s, revision %d; want in place, OPEN, %s, 1",
				res.Path, res.Task.State, res.Task.RunAfter, res.Task.Revision, want)
		}
		got := backendtest.MustGet(t, s, task.ID)
		last := got.Events[len(got.Events)-1]
		if len(last.Changes) != 1 || last.Changes[0].Field != "delay" || last.Changes[0].Old != nil ||
			string(last.Changes[0].New) != `"`+want.Format(time.RFC3339Nano)+`"` {
			t.Fatalf("edit event %+v; want delay from none to %s", last, want)
		}
		done := waitingClaim(ctx, s, ledger.ClaimParams{Worker: "waiter", Types: []string{"later"}, N: 1, Wait: ledger.MaxClaimWait})
		waitfor.Until(t, "the claim to wait", func() bool { return s.Tasks.ClaimsWaiting() == 1 })
		res = update(task.ID, cks.TaskPatch{RunAfter: backendtest.T0.Add(-time.Hour)})
		if !res.Task.RunAfter.IsZero() {
			t.Fatalf("run_after in the past: run_after %s, want none", res.Task.RunAfter)
		}
		if r := answer(t, "the waiter of the task made due", done); r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != task.ID {
			t.Fatalf("waiter: %+v, %v; want task %d at once", r.tasks, r.err, task.ID)
		}

		// A WAITING task delayed by update is held back once released.
		dep := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "dep"})
		child := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "child", DependsOn: []int64{dep.ID}})
		at := backendtest.T0.Add(2 * time.Hour)
		if res := update(child.ID, cks.TaskPatch{RunAfter: at}); res.Task.State != cks.TaskWaiting || !res.Task.RunAfter.Equal(at) {
			t.Fatalf("update of a WAITING task: %s run_after %s", res.Task.State, res.Task.RunAfter)
		}
		d := claimTimed(t, s, "dep")
		if _, err := s.Tasks.Complete(ctx, d.ID, d.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"child"}, N: 1}); err != nil || len(got) != 0 {
			t.Fatalf("released child claimed before its run_after: %+v, %v", got, err)
		}
		c.Set(at)
		claimTimed(t, s, "child")
	})
}

// TestUpdateDelayRefusals (both backends): update's delay and run_after
// are refused as at creation, naming the field (both given, a delay that
// is no duration or is negative, a time past MaxDelay), and on a task
// someone has claimed or that is STOPPED (a conflict: a start clears
// run_after); nothing changes.
func TestUpdateDelayRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		idle := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x"})
		for _, tc := range []struct {
			p     cks.TaskPatch
			field string
		}{
			{cks.TaskPatch{Delay: "1m", RunAfter: backendtest.T0.Add(time.Hour)}, "run_after"},
			{cks.TaskPatch{Delay: "soon"}, "delay"},
			{cks.TaskPatch{Delay: "-1s"}, "delay"},
			{cks.TaskPatch{Delay: "8785h"}, "delay"},
			{cks.TaskPatch{RunAfter: backendtest.T0.Add(cks.MaxDelay + time.Second)}, "run_after"},
		} {
			_, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: idle.ID, Actor: "op", Patch: tc.p})
			if !cks.IsFieldError(err, tc.field) {
				t.Errorf("update delay %q run_after %s: %v, want a FieldError naming %s", tc.p.Delay, tc.p.RunAfter, err, tc.field)
			}
		}
		claimed := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "held"})
		claimTimed(t, s, "held")
		stopped := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "stopped"})
		if _, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: stopped.ID, Actor: "op", Reason: "hold"}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{claimed.ID, stopped.ID} {
			_, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Delay: "1m"}})
			if !errors.Is(err, cks.ErrConflict) {
				t.Errorf("delay of task %d (%s): %v, want a conflict", id, backendtest.MustGet(t, s, id).State, err)
			}
		}
		for _, id := range []int64{idle.ID, claimed.ID, stopped.ID} {
			if got := backendtest.MustGet(t, s, id); !got.RunAfter.IsZero() || got.Events[len(got.Events)-1].Reason == "update: delay" {
				t.Fatalf("a refused update changed task %d: run_after %s, events %+v", id, got.RunAfter, got.Events)
			}
		}
	})
}
