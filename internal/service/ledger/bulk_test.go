package ledger_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// claimOne enqueues a task of type typ and claims it; it returns the claim.
func claimOne(t testing.TB, s *backend.Backend, typ string) cks.ClaimedTask {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w-" + typ, Types: []string{typ}, N: 1, Lease: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim %s: %+v, %v", typ, got, err)
	}
	return got[0]
}

// outcome is what a test expects of one task of a bulk answer.
type outcome struct {
	id          int64
	outcome     cks.BulkOutcome
	from, state cks.TaskState
	reason      string           // a part of it
	abort       cks.AbortOutcome // "" for none
}

// outcomesAre fails the test unless res's tasks are want, in order.
func outcomesAre(t testing.TB, what string, res cks.BulkResult, want []outcome) {
	t.Helper()
	if len(res.Tasks) != len(want) {
		t.Fatalf("%s: %d outcomes %+v, want %d", what, len(res.Tasks), res.Tasks, len(want))
	}
	for i, w := range want {
		g := res.Tasks[i]
		var ab cks.AbortOutcome
		if g.Abort != nil {
			ab = g.Abort.Outcome
		}
		if g.TaskID != w.id || g.Outcome != w.outcome || g.From != w.from || g.State != w.state || ab != w.abort ||
			!strings.Contains(g.Reason, w.reason) || (w.reason == "") != (g.Reason == "") {
			t.Errorf("%s: task %d: %+v (abort %s), want %+v", what, i, g, ab, w)
		}
	}
}

// TestBulkStop: a stop of a list of ids holds each task it may (a running
// one with its abort), refuses the others with why and leaves them as they
// were, and counts; with wait, one deadline for all the aborts, each with
// its definite outcome. Both backends.
func TestBulkStop(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		a, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "bulk-open"})
		run := claimOne(t, s, "bulk-run")
		done := claimOne(t, s, "bulk-done")
		if _, err := s.Tasks.Complete(ctx, done.ID, done.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		before := stateOf(t, s, done.ID)
		res, err := s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionStop, IDs: []int64{done.ID, 99999, run.ID, a.ID, a.ID},
			Actor: "op", Reason: "freeze"})
		if err != nil {
			t.Fatal(err)
		}
		outcomesAre(t, "stop", res, []outcome{
			{a.ID, cks.BulkDone, cks.TaskOpen, cks.TaskStopped, "", ""},
			{run.ID, cks.BulkDone, cks.TaskClaimed, cks.TaskStopped, "", cks.AbortPending},
			{done.ID, cks.BulkRefused, cks.TaskCompleted, cks.TaskCompleted, "COMPLETED", ""},
			{99999, cks.BulkRefused, "", "", "not found", ""},
		})
		if res.Action != cks.ActionStop || res.Done != 2 || res.Refused != 2 || res.Pending != 1 || res.NextCursor != 0 {
			t.Errorf("counts %+v", res)
		}
		if after := stateOf(t, s, done.ID); len(after.Events) != len(before.Events) || after.State != cks.TaskCompleted {
			t.Errorf("the refused task changed: %+v", after)
		}
		if ev := stateOf(t, s, a.ID).Events; ev[len(ev)-1].Reason != "stopped: freeze" || ev[len(ev)-1].Actor != "op" {
			t.Errorf("the stop's event %+v", ev[len(ev)-1])
		}

		// With wait: an executor that confirms, and one that does not.
		confirms, ignores := claimOne(t, s, "bulk-confirms"), claimOne(t, s, "bulk-ignores")
		confirmed := make(chan error, 1)
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			for {
				held, err := s.Tasks.LeaseHeld(ctx, confirms.ID, confirms.LeaseToken)
				if err == nil && !held {
					_, err = s.Tasks.ConfirmAbort(ctx, confirms.ID, confirms.LeaseToken)
				}
				if (err == nil && !held) || time.Now().After(deadline) {
					confirmed <- err
					return
				}
				time.Sleep(time.Millisecond) // polls the ledger, bounded by the deadline
			}
		}()
		res, err = s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionStop, IDs: []int64{confirms.ID}, Actor: "op",
			Reason: "wait", Deadline: 10 * time.Second, Wait: true})
		if err := <-confirmed; err != nil {
			t.Fatal(err)
		}
		if err != nil || len(res.Tasks) != 1 || res.Tasks[0].Abort == nil || res.Tasks[0].Abort.Outcome != cks.AbortConfirmed || res.Pending+res.Unconfirmed != 0 {
			t.Fatalf("stop that waited for a confirming executor: %+v, %v", res, err)
		}
		res, err = s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionStop, IDs: []int64{ignores.ID}, Actor: "op",
			Reason: "wait", Deadline: 50 * time.Millisecond, Wait: true})
		if err != nil || res.Unconfirmed != 1 || res.Tasks[0].Abort.Outcome != cks.AbortUnconfirmed {
			t.Fatalf("stop that waited for an executor that ignores it: %+v, %v", res, err)
		}
		if got := backendtest.MustGet(t, s, ignores.ID); got.LastAbort == nil || got.LastAbort.Outcome != cks.AbortUnconfirmed {
			t.Errorf("the stored abort is %+v, want unconfirmed", got.LastAbort)
		}
	})
}

// TestBulkByFilter: a filter selects list_tasks' tasks a page at a time, in
// id order, at most limit of them, with the cursor of the next call; tasks
// it does not select are not touched. Both backends.
func TestBulkByFilter(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		var ids []int64
		for range 5 {
			task, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "paged"})
			ids = append(ids, task.ID)
		}
		other, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "other"})
		var got []int64
		cursor := int64(0)
		for call := 0; ; call++ {
			res, err := s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionCancel, Actor: "op", Reason: "sweep",
				Filter: &cks.TaskFilter{Types: []string{"paged"}, States: []cks.TaskState{cks.TaskOpen}, After: cursor, Limit: 2}})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range res.Tasks {
				if o.Outcome != cks.BulkDone || o.State != cks.TaskCancelled {
					t.Errorf("call %d: %+v", call, o)
				}
				got = append(got, o.TaskID)
			}
			if want := min(2, 5-2*call); len(res.Tasks) != want || res.Done != want {
				t.Fatalf("call %d: %d tasks, want %d", call, len(res.Tasks), want)
			}
			if cursor = res.NextCursor; cursor == 0 {
				break
			}
		}
		if !slices.Equal(got, ids) {
			t.Errorf("cancelled %v, want %v", got, ids)
		}
		if st := stateOf(t, s, other.ID).State; st != cks.TaskOpen {
			t.Errorf("a task the filter does not select is %s", st)
		}
	})
}

// TestBulkByTextFilter: list_tasks' text, creator and abort filters select
// the tasks of a bulk stop alone, a filter of none but them included. Both
// backends.
func TestBulkByTextFilter(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		hit := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", Title: "Nightly REPORT", CreatedBy: "cron"})
		miss := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", Title: "report by hand", CreatedBy: "op"})
		other := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", Title: "other", CreatedBy: "cron"})
		res, err := s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionStop, Actor: "op", Reason: "hold",
			Filter: &cks.TaskFilter{Text: "report", CreatedBy: "cron"}})
		if err != nil || len(res.Tasks) != 1 || res.Tasks[0].TaskID != hit.ID || res.Tasks[0].State != cks.TaskStopped {
			t.Fatalf("stop q=report created_by=cron: %+v %v; want only %d stopped", res, err, hit.ID)
		}
		for _, id := range []int64{miss.ID, other.ID} {
			if st := stateOf(t, s, id).State; st != cks.TaskOpen {
				t.Errorf("task %d, not selected, is %s", id, st)
			}
		}
	})
}

// TestBulkInput: bad input is a FieldError naming the field, and changes
// nothing — past the bound of MaxBulk ids or a limit above it included.
// Both backends.
func TestBulkInput(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		task, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "input"})
		tooMany := make([]int64, ledger.MaxBulk+1)
		for i := range tooMany {
			tooMany[i] = task.ID + int64(i)
		}
		opened := []cks.TaskState{cks.TaskOpen}
		for _, tc := range []struct {
			name  string
			p     ledger.BulkParams
			field string
		}{
			{"no verb", ledger.BulkParams{Action: cks.ActionUpdate, IDs: []int64{task.ID}}, "action"},
			{"neither", ledger.BulkParams{Action: cks.ActionCancel}, "task_ids"},
			{"both", ledger.BulkParams{Action: cks.ActionCancel, IDs: []int64{task.ID}, Filter: &cks.TaskFilter{States: opened}}, "task_ids"},
			{"too many ids", ledger.BulkParams{Action: cks.ActionCancel, IDs: tooMany}, "task_ids"},
			{"a bad id", ledger.BulkParams{Action: cks.ActionCancel, IDs: []int64{task.ID, -1}}, "task_ids"},
			{"an empty filter", ledger.BulkParams{Action: cks.ActionCancel, Filter: &cks.TaskFilter{Limit: 3}}, "state"},
			{"a limit too high", ledger.BulkParams{Action: cks.ActionCancel, Filter: &cks.TaskFilter{States: opened, Limit: ledger.MaxBulk + 1}}, "limit"},
			{"an unknown state", ledger.BulkParams{Action: cks.ActionCancel, Filter: &cks.TaskFilter{States: []cks.TaskState{"DONE"}}}, "state"},
			{"a search text too long", ledger.BulkParams{Action: cks.ActionCancel, Filter: &cks.TaskFilter{Text: strings.Repeat("x", cks.MaxSearchText+1)}}, "q"},
			{"a stop without a reason", ledger.BulkParams{Action: cks.ActionStop, IDs: []int64{task.ID}, Reason: " "}, "reason"},
			{"a deadline too long", ledger.BulkParams{Action: cks.ActionStop, IDs: []int64{task.ID}, Reason: "r", Deadline: time.Hour}, "deadline"},
		} {
			tc.p.Actor = "op"
			_, err := s.Tasks.Bulk(ctx, tc.p)
			var fe *cks.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("%s: %v, want a FieldError naming %s", tc.name, err, tc.field)
			}
		}
		if got := stateOf(t, s, task.ID); got.State != cks.TaskOpen || len(got.Events) != 1 {
			t.Errorf("refused calls changed the task: %s, %d events", got.State, len(got.Events))
		}
		// MaxBulk ids exactly is within the bound.
		res, err := s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionStart, IDs: tooMany[:ledger.MaxBulk], Actor: "op"})
		if err != nil || len(res.Tasks) != ledger.MaxBulk || res.Refused != ledger.MaxBulk {
			t.Errorf("%d ids: %d outcomes, %d refused, %v", ledger.MaxBulk, len(res.Tasks), res.Refused, err)
		}
	})
}

// TestBulkEachTaskAsItIs: each task is moved from its state at its turn (a
// cancel of a dependency earlier in the call blocked a dependant, which is
// then cancelled from BLOCKED); a retry refuses the second of two tasks
// with one dedupe key; a start carries the abort an executor never
// confirmed. Both backends.
func TestBulkEachTaskAsItIs(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		dep, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "each-dep"})
		dependant, _, _ := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "each-dependant", DependsOn: []int64{dep.ID}})
		res, err := s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionCancel, IDs: []int64{dependant.ID, dep.ID}, Actor: "op"})
		if err != nil {
			t.Fatal(err)
		}
		outcomesAre(t, "cancel", res, []outcome{
			{dep.ID, cks.BulkDone, cks.TaskOpen, cks.TaskCancelled, "", ""},
			{dependant.ID, cks.BulkDone, cks.TaskBlocked, cks.TaskCancelled, "", ""},
		})

		one := failed(t, s, cks.NewTask{Type: "each-key", DedupeKey: "shared"})
		if _, err := s.Tasks.Retry(ctx, one.ID, "op", ""); err != nil { // live again: make way for a second
			t.Fatal(err)
		}
		if _, err := s.Tasks.Cancel(ctx, one.ID, "op", ""); err != nil {
			t.Fatal(err)
		}
		two := failed(t, s, cks.NewTask{Type: "each-key", DedupeKey: "shared"})
		res, err = s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionRetry, IDs: []int64{two.ID, one.ID}, Actor: "op"})
		if err != nil {
			t.Fatal(err)
		}
		outcomesAre(t, "retry", res, []outcome{
			{one.ID, cks.BulkDone, cks.TaskCancelled, cks.TaskOpen, "", ""},
			{two.ID, cks.BulkRefused, cks.TaskFailed, cks.TaskFailed, "dedupe_key", ""},
		})

		held := claimOne(t, s, "each-held")
		stopped, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: held.ID, Actor: "op", Reason: "hold", Deadline: time.Second})
		ab := stopped.Abort
		if err != nil {
			t.Fatal(err)
		}
		// Its deadline passes unconfirmed (the lease reaper's ExpireAborts).
		if n, err := s.Tasks.ExpireAborts(ctx, ab.DeadlineAt); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		res, err = s.Tasks.Bulk(ctx, ledger.BulkParams{Action: cks.ActionStart, IDs: []int64{held.ID}, Actor: "op"})
		if err != nil {
			t.Fatal(err)
		}
		outcomesAre(t, "start", res, []outcome{{held.ID, cks.BulkDone, cks.TaskStopped, cks.TaskOpen, "", cks.AbortUnconfirmed}})
		if res.Unconfirmed != 1 {
			t.Errorf("counts %+v, want one unconfirmed", res)
		}
	})
}
