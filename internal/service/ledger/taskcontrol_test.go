package ledger_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTaskControl: the operator side of the ledger (ADR 0020,
// ledger.Service): stop, start, update, abort requests and their outcomes,
// decisions, and re-entry from the top of a restarted task, on both
// backends.
func TestTaskControl(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"TaskActionsAreTheServices": testTaskActionsAreTheServices,
		"TaskStopEachState":         testTaskStopEachState,
		"TaskStopRefused":           testTaskStopRefused,
		"TaskDispatchExclusion":     testTaskDispatchExclusion,
		"TaskStart":                 testTaskStart,
		"TaskUpdateInPlace":         testTaskUpdateInPlace,
		"TaskUpdateRecorded":        testTaskUpdateRecorded,
		"TaskUpdateRunning":         testTaskUpdateRunning,
		"TaskUpdateDependencies":    testTaskUpdateDependencies,
		"TaskUpdateRefused":         testTaskUpdateRefused,
		"TaskUpdateChildren":        testTaskUpdateChildren,
		"TaskUpdateChildDedupe":     testTaskUpdateChildDedupe,
		"TaskMetadata":              testTaskMetadata,
		"TaskAborts":                testTaskAborts,
		"TaskAbortsPublished":       testTaskAbortsPublished,
		"TaskLeaseHeld":             testTaskLeaseHeld,
		"TaskReentryFromTheTop":     testTaskReentryFromTheTop,
		"TaskRecordDecision":        testTaskRecordDecision,
		"TaskControlNotFound":       testTaskControlNotFound,
		"TaskControlConcurrent":     testTaskControlConcurrent,
		"TaskUpdateConcurrentCycle": testTaskUpdateConcurrentCycle,
	})
}

// leased reports whether a task in state st holds an executor's lease.
func leased(st cks.TaskState) bool { return st == cks.TaskClaimed || st == cks.TaskRunning }

// mustRunning enqueues a task of type typ, claims it for worker and marks it
// RUNNING; it returns the claimed task (with its lease token).
func mustRunning(t testing.TB, s *backend.Backend, typ, worker string) cks.ClaimedTask {
	t.Helper()
	backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ, Title: typ})
	c := backendtest.ClaimType(t, s, worker, typ)
	if _, err := s.Tasks.MarkRunning(ctx(t), c.ID, c.LeaseToken); err != nil {
		t.Fatalf("MarkRunning(%d): %v", c.ID, err)
	}
	return c
}

// mustStop stops task id or fails the test.
func mustStop(t testing.TB, s *backend.Backend, id int64, deadline time.Duration) (cks.Task, *cks.Abort) {
	t.Helper()
	res, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: id, Actor: "op", Reason: "hold it", Deadline: deadline})
	if err != nil {
		t.Fatalf("Stop(%d): %v", id, err)
	}
	return res.Task, res.Abort
}

// mustStart starts task id or fails the test.
func mustStart(t testing.TB, s *backend.Backend, id int64) cks.Task {
	t.Helper()
	task, err := s.Tasks.Start(ctx(t), id, "op", "go again")
	if err != nil {
		t.Fatalf("Start(%d): %v", id, err)
	}
	return task
}

// mustUpdate applies p to task id or fails the test.
func mustUpdate(t testing.TB, s *backend.Backend, id int64, p cks.TaskPatch) cks.UpdateResult {
	t.Helper()
	res, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: id, Actor: "op", Patch: p})
	if err != nil {
		t.Fatalf("Update(%d, %+v): %v", id, p, err)
	}
	return res
}

// fingerprint is what "nothing changed" compares: every field an operator
// operation could write, and the lengths of the task's append-only records.
func fingerprint(task cks.Task) string {
	return fmt.Sprintf("state=%s rev=%d restarts=%d attempts=%d title=%q desc=%q ac=%q prio=%d meta=%s payload=%s deps=%v parent=%v events=%d aborts=%d lease=%q/%v/%v updated=%v",
		task.State, task.Revision, task.Restarts, task.Attempts, task.Title, task.Description, task.AcceptanceCriteria,
		task.Priority, task.Metadata, task.Payload, task.DependsOn, parentOf(task), len(task.Events), len(task.Aborts),
		task.ClaimedBy, task.LeaseExpiresAt, task.LeaseRenewedAt, task.UpdatedAt)
}

func parentOf(task cks.Task) int64 {
	if task.ParentID == nil {
		return 0
	}
	return *task.ParentID
}

// snapshot fingerprints tasks ids and counts every task of the store.
func snapshot(t testing.TB, s *backend.Backend, ids ...int64) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, id := range ids {
		out[id] = fingerprint(backendtest.MustGet(t, s, id))
	}
	n, err := s.Tasks.CountTasks(ctx(t), cks.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out[0] = fmt.Sprint("tasks=", n)
	return out
}

// unchanged reports (as a test error) every difference from before.
func unchanged(t testing.TB, s *backend.Backend, what string, before map[int64]string) {
	t.Helper()
	var ids []int64
	for id := range before {
		if id != 0 {
			ids = append(ids, id)
		}
	}
	after := snapshot(t, s, ids...)
	for id, was := range before {
		if after[id] != was {
			t.Errorf("%s changed task %d:\n was %s\n now %s", what, id, was, after[id])
		}
	}
}

// checkEventChain fails the test unless task's events form a chain of
// allowed transitions ending in its state.
func checkEventChain(t testing.TB, task cks.Task) {
	t.Helper()
	if len(task.Events) == 0 {
		t.Fatalf("task %d has no events", task.ID)
	}
	first := task.Events[0]
	if first.From != "" || !slices.Contains(ledger.Initial[:], first.To) {
		t.Errorf("task %d: creation event %+v", task.ID, first)
	}
	for i := 1; i < len(task.Events); i++ {
		prev, e := task.Events[i-1], task.Events[i]
		// An edit (Update in place or live) is an event without a move.
		edit := e.From == e.To && strings.HasPrefix(e.Reason, "update: ")
		if e.From != prev.To || (!edit && !ledger.Allowed(e.From, e.To)) {
			t.Errorf("task %d: event %d %s → %s after %s → %s (chain broken or transition not allowed)",
				task.ID, i, e.From, e.To, prev.From, prev.To)
		}
	}
	if last := lastEvent(t, task); last.To != task.State {
		t.Errorf("task %d is %s but its last event is %s → %s", task.ID, task.State, last.From, last.To)
	}
}

// wantEditEvent fails the test unless the last event of task records an
// edit by actor in state st (From and To both st) with reason.
func wantEditEvent(t testing.TB, task cks.Task, actor string, st cks.TaskState, reason string) {
	t.Helper()
	if e := lastEvent(t, task); e.From != st || e.To != st || e.Actor != actor || e.Reason != reason {
		t.Errorf("task %d: last event %+v; want the edit %s → %s by %s, %q", task.ID, e, st, st, actor, reason)
	}
}

// wantFenced fails the test unless every executor write with token is
// refused with ErrLeaseLost and its heartbeat finds the lease gone.
func wantFenced(t testing.TB, s *backend.Backend, id int64, token, what string) {
	t.Helper()
	calls := []struct {
		name string
		call func() error
	}{
		{"Complete", func() error { _, err := s.Tasks.Complete(ctx(t), id, token, false, "zombie"); return err }},
		{"AddEvidence", func() error { _, err := s.Tasks.AddEvidence(ctx(t), id, token, "log", "zombie"); return err }},
		{"RecordDecision", func() error { _, err := s.Tasks.RecordDecision(ctx(t), id, token, "atomic", "zombie", 1); return err }},
		{"MarkRunning", func() error { _, err := s.Tasks.MarkRunning(ctx(t), id, token); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, cks.ErrLeaseLost) {
			t.Errorf("%s: %s with the revoked token: err = %v, want ErrLeaseLost", what, c.name, err)
		}
	}
	if res, err := s.Tasks.Heartbeat(ctx(t), id, token); res.Held || err != nil {
		t.Errorf("%s: Heartbeat with the revoked token = %+v, %v; want not held", what, res, err)
	}
	if held, err := s.Tasks.LeaseHeld(ctx(t), id, token); held || err != nil {
		t.Errorf("%s: LeaseHeld(revoked token) = %v, %v; want false, nil", what, held, err)
	}
}

// actionCall is an operator verb with the call of the service that does it.
type actionCall struct {
	action cks.TaskAction
	do     func(t testing.TB, s *backend.Backend, id int64) error
}

// allActions are the operator verbs of package cks.
var allActions = []actionCall{
	{cks.ActionStop, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: id, Actor: "op", Reason: "hold", Deadline: time.Minute})
		return err
	}},
	{cks.ActionStart, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.Start(ctx(t), id, "op", "")
		return err
	}},
	{cks.ActionCancel, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.Cancel(ctx(t), id, "op", "dropped")
		return err
	}},
	{cks.ActionAnswer, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.Answer(ctx(t), id, "op", "yes")
		return err
	}},
	{cks.ActionUpdate, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Priority: new(9)}, Deadline: time.Minute})
		return err
	}},
	{cks.ActionUpdateMaterial, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Description: new("redone")}, Deadline: time.Minute})
		return err
	}},
	{cks.ActionReview, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.ClaimReview(ctx(t), id, "rev", backendtest.Lease)
		return err
	}},
	{cks.ActionRetry, func(t testing.TB, s *backend.Backend, id int64) error {
		_, err := s.Tasks.Retry(ctx(t), id, "op", "again")
		return err
	}},
}

// testTaskActionsAreTheServices: the verbs ledger.Actions offers for a
// state are exactly the ones the service does to a task in it; the others
// are conflicts that change nothing.
func testTaskActionsAreTheServices(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	for _, st := range ledger.All {
		offered := ledger.Actions(st)
		for _, a := range offered {
			if !slices.ContainsFunc(allActions, func(x actionCall) bool { return x.action == a }) {
				t.Errorf("%s: ledger.Actions offers %q, which this test does not know", st, a)
			}
		}
		for _, a := range allActions {
			typ := strings.ToLower(string(st) + "-" + string(a.action))
			task, _ := backendtest.Into(t, s, st, typ)
			before := snapshot(t, s, task.ID)
			err := a.do(t, s, task.ID)
			switch want := slices.Contains(offered, a.action); {
			case want && err != nil:
				t.Errorf("%s task: %s is offered, but the service refused it: %v", st, a.action, err)
			case !want && err == nil:
				t.Errorf("%s task: %s is not offered, but the service did it", st, a.action)
			case !want && !errors.Is(err, cks.ErrConflict):
				t.Errorf("%s task: %s refused with %v, want a conflict", st, a.action, err)
			case !want:
				unchanged(t, s, fmt.Sprintf("%s of a %s task", a.action, st), before)
			}
		}
	}
}

// testTaskStopEachState stops a task in every stoppable state.
func testTaskStopEachState(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	stoppable := []cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked, cks.TaskNeedsInput,
		cks.TaskNeedsReview, cks.TaskReviewing, cks.TaskClaimed, cks.TaskRunning}
	for _, st := range stoppable {
		before, tok := backendtest.Into(t, s, st, strings.ToLower(string(st)))
		clk.Advance(time.Second)
		now := clk.Now()
		res, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: before.ID, Actor: "op", Reason: "hold " + string(st), Deadline: 2 * time.Minute})
		got, ab := res.Task, res.Abort
		if err != nil {
			t.Errorf("Stop of a %s task: %v", st, err)
			continue
		}
		after := backendtest.WantState(t, s, before.ID, cks.TaskStopped)
		if got.State != cks.TaskStopped || got.ClaimedBy != "" || after.ClaimedBy != "" || !after.LeaseExpiresAt.IsZero() ||
			after.Restarts != before.Restarts || after.Revision != before.Revision || !after.StateChangedAt.Equal(now) {
			t.Errorf("Stop of a %s task returned %+v, stored %+v", st, got, after)
		}
		if e := lastEvent(t, after); len(after.Events) != len(before.Events)+1 || e.From != st || e.To != cks.TaskStopped ||
			e.Actor != "op" || !strings.Contains(e.Reason, "hold "+string(st)) || !e.At.Equal(now) {
			t.Errorf("Stop of a %s task: %d events (was %d), last %+v", st, len(after.Events), len(before.Events), e)
		}
		checkEventChain(t, after)
		switch {
		case leased(st):
			want := cks.Abort{TaskID: before.ID, Executor: before.ClaimedBy, Attempt: before.Attempts,
				Restart: before.Restarts, RequestedBy: "op", Reason: "hold " + string(st), RequestedAt: now,
				DeadlineAt: now.Add(2 * time.Minute), Outcome: cks.AbortPending}
			if ab == nil {
				t.Errorf("Stop of a %s task returned no Abort", st)
				continue
			}
			if d := diffAbort(*ab, want); d != "" || ab.ID == 0 {
				t.Errorf("Stop of a %s task: abort differs in %s (id %d)\n got %+v\nwant %+v", st, d, ab.ID, *ab, want)
			}
			if after.Attempts != before.Attempts-1 {
				t.Errorf("Stop of a %s task: attempts %d, want %d (the attempt is given back)", st, after.Attempts, before.Attempts-1)
			}
			if len(after.Aborts) != 1 || after.LastAbort == nil || after.LastAbort.ID != ab.ID ||
				after.LastAbort.Outcome != cks.AbortPending {
				t.Errorf("Stop of a %s task: GetTask shows aborts %+v, last %+v", st, after.Aborts, after.LastAbort)
			}
			if stored := after.Aborts[len(after.Aborts)-1]; diffAbort(stored, *ab) != "" {
				t.Errorf("GetTask shows abort %+v; want %+v", stored, *ab)
			}
			wantFenced(t, s, before.ID, tok, "after Stop of a "+string(st)+" task")
			wantAbortOf(t, s, *ab, tok)
		default:
			if ab != nil {
				t.Errorf("Stop of a %s task returned an abort %+v; only a leased executor gets one", st, *ab)
			}
			if after.Attempts != before.Attempts || len(after.Aborts) != 0 || after.LastAbort != nil {
				t.Errorf("Stop of a %s task: attempts %d (was %d), aborts %+v", st, after.Attempts, before.Attempts, after.Aborts)
			}
			if st == cks.TaskReviewing {
				_, err := s.Tasks.Approve(ctx(t), before.ID, tok, "late")
				backendtest.WantErr(t, "Approve with the reviewer's token after Stop", err, cks.ErrLeaseLost)
			}
		}
	}
	// Deadline 0 is the default deadline.
	c := mustRunning(t, s, "default-deadline", "w")
	_, ab := mustStop(t, s, c.ID, 0)
	if ab == nil || !ab.DeadlineAt.Equal(clk.Now().Add(cks.DefaultAbortDeadline)) {
		t.Fatalf("Stop with deadline 0: abort %+v, want deadline now+%v", ab, cks.DefaultAbortDeadline)
	}
}

// wantAbortOf fails the test unless ab is the abort of the lease whose token
// is token (the abort keeps only the token's hash): confirming with token
// confirms ab. It confirms ab.
func wantAbortOf(t testing.TB, s *backend.Backend, ab cks.Abort, token string) {
	t.Helper()
	got, err := s.Tasks.ConfirmAbort(ctx(t), ab.TaskID, token)
	if err != nil || got.ID != ab.ID || got.Outcome != cks.AbortConfirmed {
		t.Errorf("ConfirmAbort with the revoked token = %+v, %v; want abort %d confirmed", got, err, ab.ID)
	}
}

// mustHeld reports whether token is task id's current lease (LeaseHeld),
// failing the test on an error.
func mustHeld(t testing.TB, s *backend.Backend, id int64, token string) bool {
	t.Helper()
	held, err := s.Tasks.LeaseHeld(ctx(t), id, token)
	if err != nil {
		t.Fatalf("LeaseHeld(%d): %v", id, err)
	}
	return held
}

func diffAbort(got, want cks.Abort) string {
	switch {
	case want.ID != 0 && got.ID != want.ID:
		return "id"
	case got.TaskID != want.TaskID:
		return "task_id"
	case got.Executor != want.Executor:
		return "executor"
	case got.Attempt != want.Attempt:
		return "attempt"
	case got.Restart != want.Restart:
		return "restart"
	case got.RequestedBy != want.RequestedBy:
		return "requested_by"
	case !strings.Contains(got.Reason, want.Reason):
		return "reason" // the stored reason contains the caller's
	case !got.RequestedAt.Equal(want.RequestedAt):
		return "requested_at"
	case !got.DeadlineAt.Equal(want.DeadlineAt):
		return "deadline_at"
	case got.Outcome != want.Outcome:
		return "outcome"
	case !got.ResolvedAt.Equal(want.ResolvedAt):
		return "resolved_at"
	}
	return ""
}

// testTaskStopRefused: terminal and STOPPED tasks, bad input and unknown
// ids are refused and change nothing.
func testTaskStopRefused(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	for _, st := range []cks.TaskState{cks.TaskCompleted, cks.TaskFailed, cks.TaskCancelled, cks.TaskStopped} {
		task, _ := backendtest.Into(t, s, st, strings.ToLower(string(st)))
		before := snapshot(t, s, task.ID)
		res, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: task.ID, Actor: "op", Reason: "again"})
		if !errors.Is(err, cks.ErrConflict) || !strings.Contains(fmt.Sprint(err), string(st)) || res.Abort != nil {
			t.Errorf("Stop of a %s task: abort %v, err = %v; want ErrConflict naming %s", st, res.Abort, err, st)
		}
		unchanged(t, s, "Stop of a "+string(st)+" task", before)
	}
	open1, _ := backendtest.Into(t, s, cks.TaskOpen, "open")
	run, tok := backendtest.Into(t, s, cks.TaskRunning, "running")
	bad := []struct {
		field    string
		reason   string
		deadline time.Duration
	}{
		{"reason", "", 0},
		{"deadline", "r", -time.Second},
		{"deadline", "r", cks.MaxAbortDeadline + time.Millisecond},
	}
	for _, b := range bad {
		before := snapshot(t, s, open1.ID, run.ID)
		for _, id := range []int64{open1.ID, run.ID} {
			if _, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: id, Actor: "op", Reason: b.reason, Deadline: b.deadline}); !cks.IsFieldError(err, b.field) {
				t.Errorf("Stop(%d, reason %q, deadline %v): err = %v, want a FieldError naming %s", id, b.reason, b.deadline, err, b.field)
			}
		}
		unchanged(t, s, "refused Stop", before)
	}
	if held, err := s.Tasks.LeaseHeld(ctx(t), run.ID, tok); !held || err != nil {
		t.Fatalf("after refused stops LeaseHeld = %v, %v; want the executor's lease intact", held, err)
	}
	// The largest deadline is allowed.
	if res, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: run.ID, Actor: "op", Reason: "r", Deadline: cks.MaxAbortDeadline}); err != nil || res.Abort == nil {
		t.Fatalf("Stop with the maximum deadline: %v, %v", res.Abort, err)
	}
	_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: run.ID + 1000, Actor: "op", Reason: "r"})
	backendtest.WantErr(t, "Stop of an unknown task", err, cks.ErrNotFound)
}

// testTaskDispatchExclusion: STOPPED and NEEDS_INPUT tasks are skipped by
// every claim, reaper and dependency pass, and never burn an attempt.
func testTaskDispatchExclusion(t *testing.T, open backendtest.Opener) {
	got := slices.Clone(ledger.DispatchExcluded[:])
	slices.Sort(got)
	if want := []cks.TaskState{cks.TaskNeedsInput, cks.TaskStopped}; !slices.Equal(got, want) {
		t.Fatalf("ledger.DispatchExcluded = %v, want exactly %v", got, want)
	}
	s, clk := backendtest.FakeStore(t, open)
	// Each excluded task has held a lease, so a reaper has something to be wrong about.
	stoppedRun, _ := backendtest.Into(t, s, cks.TaskRunning, "x")
	mustStop(t, s, stoppedRun.ID, time.Second)
	stoppedClaim, _ := backendtest.Into(t, s, cks.TaskClaimed, "x")
	mustStop(t, s, stoppedClaim.ID, time.Second)
	parked, _ := backendtest.Into(t, s, cks.TaskNeedsInput, "x")
	stoppedOpen, _ := backendtest.Into(t, s, cks.TaskOpen, "x")
	mustStop(t, s, stoppedOpen.ID, 0)
	// Stopped while WAITING: its dependency completing, failing or being
	// cancelled must not move it (only Start evaluates a stopped task).
	var stoppedWaiting []int64
	var deps []int64
	for range 3 {
		dep := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "dep", Title: "dependency"})
		w := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", Title: "waiting", DependsOn: []int64{dep.ID}})
		mustStop(t, s, w.ID, 0)
		stoppedWaiting = append(stoppedWaiting, w.ID)
		deps = append(deps, dep.ID)
	}
	d := backendtest.ClaimType(t, s, "w", "dep")
	if _, err := s.Tasks.Complete(ctx(t), d.ID, d.LeaseToken, false, ""); err != nil {
		t.Fatal(err)
	}
	d = backendtest.ClaimType(t, s, "w", "dep")
	if _, err := s.Tasks.Fail(ctx(t), d.ID, d.LeaseToken, false, "broken"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tasks.Cancel(ctx(t), deps[2], "op", "dropped"); err != nil {
		t.Fatal(err)
	}
	excluded := append([]int64{stoppedRun.ID, stoppedClaim.ID, parked.ID, stoppedOpen.ID}, stoppedWaiting...)
	before := snapshot(t, s, excluded...)

	for _, far := range []time.Duration{backendtest.Lease, 24 * time.Hour, 365 * 24 * time.Hour} {
		clk.Advance(far)
		if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w2", N: 100, Lease: backendtest.Lease}); err != nil || len(ts) != 0 {
			t.Fatalf("Claim with only excluded tasks = %d tasks (%+v), %v; want none", len(ts), ts, err)
		}
		if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w2", Types: []string{"x"}, N: 100, Lease: backendtest.Lease}); err != nil || len(ts) != 0 {
			t.Fatalf("Claim(type x) with only excluded tasks = %d tasks, %v; want none", len(ts), err)
		}
		if n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now()); n != 0 || err != nil {
			t.Fatalf("ReclaimExpired %v later = %d, %v; want 0", far, n, err)
		}
		if r, err := s.Tasks.ReleaseDependencies(ctx(t)); err != nil || r != (ledger.DependencyRelease{}) {
			t.Fatalf("ReleaseDependencies = %+v, %v; want nothing moved", r, err)
		}
	}
	unchanged(t, s, "dispatch passes", before)
	for _, id := range excluded {
		task := backendtest.MustGet(t, s, id)
		if !slices.Contains(ledger.DispatchExcluded[:], task.State) || task.Attempts != 0 {
			t.Errorf("task %d (%s): %s with %d attempts; want excluded with none burned", id, task.Title, task.State, task.Attempts)
		}
	}
}

// testTaskStart: STOPPED → OPEN/WAITING/BLOCKED re-evaluated at start,
// restarts+1, attempts neither burned nor reset, run_after cleared.
func testTaskStart(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "retried", MaxAttempts: 5})
	c := backendtest.MustClaimOne(t, s, "w")
	failed, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "flaky")
	if err != nil || failed.State != cks.TaskOpen || failed.Attempts != 1 || failed.RunAfter.IsZero() {
		t.Fatalf("retryable Fail = %+v, %v", failed, err)
	}
	stopped, ab := mustStop(t, s, task.ID, 0)
	if ab != nil || stopped.Attempts != 1 {
		t.Fatalf("Stop of an OPEN task: abort %v, attempts %d; want none, 1", ab, stopped.Attempts)
	}
	clk.Advance(time.Second) // well before the backoff ends
	started := mustStart(t, s, task.ID)
	got := backendtest.WantState(t, s, task.ID, cks.TaskOpen)
	if started.State != cks.TaskOpen || got.Restarts != 1 || got.Attempts != 1 || !got.RunAfter.IsZero() || got.Revision != 1 {
		t.Fatalf("Start = %+v, stored %+v; want OPEN, restarts 1, attempts 1 (not reset), run_after cleared", started, got)
	}
	if e := lastEvent(t, got); e.From != cks.TaskStopped || e.To != cks.TaskOpen || e.Actor != "op" || !e.At.Equal(clk.Now()) {
		t.Fatalf("start event %+v", e)
	}
	again := backendtest.MustClaimOne(t, s, "w")
	if again.ID != task.ID || again.Attempts != 2 || again.Restarts != 1 {
		t.Fatalf("claim after start: %+v; want attempt 2 of restart 1", again)
	}
	// Stopped, then running and stopped again: restarts count on, attempts are given back.
	mustStop(t, s, task.ID, 0)
	if got := mustStart(t, s, task.ID); got.Restarts != 2 || got.Attempts != 1 {
		t.Fatalf("second restart: restarts %d, attempts %d; want 2, 1", got.Restarts, got.Attempts)
	}

	// A dependency added while stopped is evaluated by Start.
	dep := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "dep", Title: "dependency"})
	w, _ := backendtest.Into(t, s, cks.TaskOpen, "w")
	mustStop(t, s, w.ID, 0)
	if res := mustUpdate(t, s, w.ID, cks.TaskPatch{AddDependsOn: []int64{dep.ID}}); res.Task.State != cks.TaskStopped || res.Path != cks.UpdateInPlace {
		t.Fatalf("dependency edit of a STOPPED task: %s via %s; want STOPPED in place", res.Task.State, res.Path)
	}
	backendtest.WantState(t, s, w.ID, cks.TaskStopped)
	if got := mustStart(t, s, w.ID); got.State != cks.TaskWaiting || got.Restarts != 1 {
		t.Fatalf("Start with an unmet dependency = %s, restarts %d; want WAITING, 1", got.State, got.Restarts)
	}
	if e := lastEvent(t, backendtest.MustGet(t, s, w.ID)); e.From != cks.TaskStopped || e.To != cks.TaskWaiting {
		t.Fatalf("start event %+v", e)
	}
	dc := backendtest.ClaimType(t, s, "w", "dep")
	if _, err := s.Tasks.Complete(ctx(t), dc.ID, dc.LeaseToken, false, ""); err != nil {
		t.Fatal(err)
	}
	backendtest.WantState(t, s, w.ID, cks.TaskOpen)

	// A dependency that completed while the task was stopped: OPEN at start.
	done := dc.ID
	w2, _ := backendtest.Into(t, s, cks.TaskOpen, "w2")
	mustStop(t, s, w2.ID, 0)
	mustUpdate(t, s, w2.ID, cks.TaskPatch{AddDependsOn: []int64{done}})
	if got := mustStart(t, s, w2.ID); got.State != cks.TaskOpen {
		t.Fatalf("Start with a completed dependency = %s, want OPEN", got.State)
	}

	// Failed or cancelled dependencies: BLOCKED at start.
	for _, st := range []cks.TaskState{cks.TaskFailed, cks.TaskCancelled} {
		bad, _ := backendtest.Into(t, s, st, "bad-"+strings.ToLower(string(st)))
		b, _ := backendtest.Into(t, s, cks.TaskOpen, "b-"+strings.ToLower(string(st)))
		mustStop(t, s, b.ID, 0)
		mustUpdate(t, s, b.ID, cks.TaskPatch{AddDependsOn: []int64{bad.ID}})
		if got := mustStart(t, s, b.ID); got.State != cks.TaskBlocked {
			t.Fatalf("Start with a %s dependency = %s, want BLOCKED", st, got.State)
		}
		backendtest.WantState(t, s, b.ID, cks.TaskBlocked)
	}

	// Start of anything but STOPPED is a conflict naming the state.
	for _, st := range []cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked, cks.TaskClaimed, cks.TaskRunning,
		cks.TaskNeedsInput, cks.TaskNeedsReview, cks.TaskReviewing, cks.TaskCompleted, cks.TaskFailed, cks.TaskCancelled} {
		task, _ := backendtest.Into(t, s, st, "not-stopped-"+strings.ToLower(string(st)))
		before := snapshot(t, s, task.ID)
		_, err := s.Tasks.Start(ctx(t), task.ID, "op", "go")
		if !errors.Is(err, cks.ErrConflict) || !strings.Contains(fmt.Sprint(err), string(st)) {
			t.Errorf("Start of a %s task: err = %v, want ErrConflict naming %s", st, err, st)
		}
		unchanged(t, s, "Start of a "+string(st)+" task", before)
	}
	_, err = s.Tasks.Start(ctx(t), 424242, "op", "go")
	backendtest.WantErr(t, "Start of an unknown task", err, cks.ErrNotFound)
}

// testTaskUpdateRecorded: every edit is in the task's log, whichever path
// it took, so "who rewrote the criteria, and when" is answered by GetTask's
// events alone: an edit in place and a restart each leave exactly one
// event whose reason names the fields ("update: …"), by its actor, at its
// time; a live edit leaves one too.
func testTaskUpdateRecorded(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "spec", Title: "spec", AcceptanceCriteria: "v1"})
	edit := func(actor string, p cks.TaskPatch, want cks.UpdatePath) time.Time {
		t.Helper()
		clk.Advance(time.Minute)
		res, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: task.ID, Actor: actor, Patch: p})
		if err != nil || res.Path != want {
			t.Fatalf("Update by %s = %+v, %v; want path %s", actor, res, err, want)
		}
		return clk.Now()
	}
	t1 := edit("alice", cks.TaskPatch{AcceptanceCriteria: ptr("v2")}, cks.UpdateInPlace)
	c := backendtest.ClaimType(t, s, "w", "spec")
	if _, err := s.Tasks.MarkRunning(ctx(t), c.ID, c.LeaseToken); err != nil {
		t.Fatal(err)
	}
	t2 := edit("bob", cks.TaskPatch{Priority: ptr(5)}, cks.UpdateLive)
	t3 := edit("carol", cks.TaskPatch{AcceptanceCriteria: ptr("v3"), Title: ptr("spec 2")}, cks.UpdateRestart)

	type who struct {
		actor string
		at    time.Time
	}
	rewrote := func(field string) []who {
		var out []who
		for _, e := range backendtest.MustGet(t, s, task.ID).Events {
			fields, ok := strings.CutPrefix(e.Reason, "update: ")
			if ok && slices.Contains(strings.Split(fields, ", "), field) {
				out = append(out, who{e.Actor, e.At})
			}
		}
		return out
	}
	if got, want := rewrote("acceptance_criteria"), []who{{"alice", t1}, {"carol", t3}}; !slices.Equal(got, want) {
		t.Errorf("who rewrote the criteria: %v, want %v (events %+v)", got, want, backendtest.MustGet(t, s, task.ID).Events)
	}
	if got, want := rewrote("priority"), []who{{"bob", t2}}; !slices.Equal(got, want) {
		t.Errorf("who changed the priority: %v, want %v", got, want)
	}
	if got, want := rewrote("title"), []who{{"carol", t3}}; !slices.Equal(got, want) {
		t.Errorf("who renamed it: %v, want %v", got, want)
	}
	got := backendtest.MustGet(t, s, task.ID)
	checkEventChain(t, got)
	if got.AcceptanceCriteria != "v3" || got.Revision != 3 || got.Priority != 5 {
		t.Fatalf("after the edits: %+v", got)
	}
}

// testTaskUpdateInPlace: tasks nobody executes are edited in place;
// material edits bump the revision, title/priority/metadata do not.
func testTaskUpdateInPlace(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	for _, st := range []cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked, cks.TaskStopped} {
		task, _ := backendtest.Into(t, s, st, strings.ToLower(string(st)))
		res := mustUpdate(t, s, task.ID, cks.TaskPatch{Description: ptr("new text"), AcceptanceCriteria: ptr("new criteria"),
			Payload: json.RawMessage(`{"v": 2}`)})
		got := backendtest.WantState(t, s, task.ID, st)
		if res.Path != cks.UpdateInPlace || res.Abort != nil || res.Task.State != st || res.Task.Revision != 2 ||
			got.Revision != 2 || got.Description != "new text" || got.AcceptanceCriteria != "new criteria" ||
			!jsonEqual(got.Payload, []byte(`{"v": 2}`)) || got.Restarts != task.Restarts || len(got.Events) != len(task.Events)+1 {
			t.Errorf("material edit of a %s task: path %s, abort %v, returned %+v, stored %+v", st, res.Path, res.Abort, res.Task, got)
		}
		wantEditEvent(t, got, "op", st, "update: description, acceptance_criteria, payload")
		res = mustUpdate(t, s, task.ID, cks.TaskPatch{Title: ptr("renamed"), Priority: ptr(7), Metadata: json.RawMessage(`{"owner": "ann"}`)})
		got = backendtest.WantState(t, s, task.ID, st)
		if res.Path != cks.UpdateInPlace || res.Abort != nil || got.Revision != 2 || got.Title != "renamed" ||
			got.Priority != 7 || !jsonEqual(got.Metadata, []byte(`{"owner": "ann"}`)) || got.Description != "new text" ||
			len(got.Events) != len(task.Events)+2 {
			t.Errorf("non-material edit of a %s task: path %s, stored %+v; want in place, revision still 2", st, res.Path, got)
		}
		wantEditEvent(t, got, "op", st, "update: title, priority, metadata")
	}
	// Parked and reviewed tasks take non-material edits in place.
	for _, st := range []cks.TaskState{cks.TaskNeedsInput, cks.TaskNeedsReview, cks.TaskReviewing} {
		task, tok := backendtest.Into(t, s, st, strings.ToLower(string(st)))
		res, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: task.ID, Actor: "op", Patch: cks.TaskPatch{Priority: ptr(3), Title: ptr("renamed")}})
		if err != nil || res.Path != cks.UpdateInPlace || res.Abort != nil {
			t.Errorf("non-material edit of a %s task: %+v, %v; want in place", st, res, err)
			continue
		}
		got := backendtest.WantState(t, s, task.ID, st)
		if got.Priority != 3 || got.Title != "renamed" || got.Revision != 1 || got.ClaimedBy != task.ClaimedBy ||
			!got.LeaseExpiresAt.Equal(task.LeaseExpiresAt) || (tok != "" && !mustHeld(t, s, task.ID, tok)) {
			t.Errorf("non-material edit of a %s task stored %+v", st, got)
		}
		wantEditEvent(t, got, "op", st, "update: title, priority")
		if st == cks.TaskReviewing {
			if held, err := s.Tasks.LeaseHeld(ctx(t), task.ID, tok); !held || err != nil {
				t.Errorf("reviewer's lease after a non-material edit: %v, %v", held, err)
			}
		}
	}
}

// testTaskUpdateRunning: a material edit of a leased task is stop → apply →
// start in one operation; a non-material one is applied live.
func testTaskUpdateRunning(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	for _, st := range []cks.TaskState{cks.TaskRunning, cks.TaskClaimed} {
		typ := strings.ToLower(string(st))
		task, tok := backendtest.Into(t, s, st, typ)
		clk.Advance(time.Second)
		now := clk.Now()
		res, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: task.ID, Actor: "op", Patch: cks.TaskPatch{AcceptanceCriteria: ptr("rewritten")}, Deadline: 45 * time.Second})
		if err != nil {
			t.Fatalf("material edit of a %s task: %v", st, err)
		}
		got := backendtest.WantState(t, s, task.ID, cks.TaskOpen) // never STOPPED to a reader
		if res.Path != cks.UpdateRestart || res.Task.State != cks.TaskOpen || got.Restarts != task.Restarts+1 ||
			got.Revision != 2 || got.Attempts != task.Attempts-1 || got.ClaimedBy != "" || !got.LeaseExpiresAt.IsZero() ||
			got.AcceptanceCriteria != "rewritten" {
			t.Fatalf("material edit of a %s task: path %s, returned %+v, stored %+v", st, res.Path, res.Task, got)
		}
		n := len(got.Events)
		if n != len(task.Events)+2 || got.Events[n-2].From != st || got.Events[n-2].To != cks.TaskStopped ||
			got.Events[n-1].From != cks.TaskStopped || got.Events[n-1].To != cks.TaskOpen {
			t.Fatalf("material edit of a %s task: events %+v; want %s → STOPPED → OPEN appended", st, got.Events, st)
		}
		checkEventChain(t, got)
		want := cks.Abort{TaskID: task.ID, Executor: task.ClaimedBy, Attempt: task.Attempts,
			Restart: task.Restarts, RequestedBy: "op", RequestedAt: now, DeadlineAt: now.Add(45 * time.Second),
			Outcome: cks.AbortPending}
		if res.Abort == nil {
			t.Fatalf("material edit of a %s task returned no abort", st)
		}
		want.Reason = res.Abort.Reason
		if d := diffAbort(*res.Abort, want); d != "" || got.LastAbort == nil || got.LastAbort.ID != res.Abort.ID {
			t.Fatalf("restart abort differs in %q: %+v (task's last abort %+v)", d, *res.Abort, got.LastAbort)
		}
		wantFenced(t, s, task.ID, tok, "after a restarting Update of a "+string(st)+" task")
		wantAbortOf(t, s, *res.Abort, tok)
		again := backendtest.ClaimType(t, s, "w2", typ)
		if again.ID != task.ID || again.AcceptanceCriteria != "rewritten" || again.Revision != 2 || again.Attempts != task.Attempts {
			t.Fatalf("claim after the restart: %+v", again)
		}
	}

	// Non-material edits of a running task are live.
	c := mustRunning(t, s, "live", "w")
	res, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: c.ID, Actor: "op", Patch: cks.TaskPatch{Priority: ptr(9), Title: ptr("renamed"),
		Metadata: json.RawMessage(`{"owner": "bob"}`)}})
	if err != nil || res.Path != cks.UpdateLive || res.Abort != nil || res.Task.State != cks.TaskRunning {
		t.Fatalf("non-material edit of a RUNNING task = %+v, %v; want live, still RUNNING", res, err)
	}
	got := backendtest.WantState(t, s, c.ID, cks.TaskRunning)
	if got.Revision != 1 || got.Priority != 9 || got.Title != "renamed" || !jsonEqual(got.Metadata, []byte(`{"owner": "bob"}`)) ||
		!mustHeld(t, s, c.ID, c.LeaseToken) || got.Restarts != 0 || got.Attempts != 1 || len(got.Aborts) != 0 || len(got.Events) != 4 {
		t.Fatalf("after a live edit: %+v", got)
	}
	wantEditEvent(t, got, "op", cks.TaskRunning, "update: title, priority, metadata")
	if e := lastEvent(t, got); e.Attempt != 1 {
		t.Fatalf("the live edit's event carries attempt %d, want the running one (1)", e.Attempt)
	}
	if res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken); !res.Held || err != nil {
		t.Fatalf("Heartbeat after a live edit = %v, %v; want the lease intact", res.Held, err)
	}
	if _, err := s.Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "log", "still going"); err != nil {
		t.Fatalf("AddEvidence after a live edit: %v", err)
	}
	if done, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "ok"); err != nil || done.State != cks.TaskCompleted {
		t.Fatalf("Complete after a live edit = %+v, %v", done, err)
	}
}

// testTaskUpdateDependencies: dependency edits re-evaluate OPEN, WAITING
// and BLOCKED tasks as Enqueue would, and a running task comes back WAITING.
func testTaskUpdateDependencies(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	dep, _ := backendtest.Into(t, s, cks.TaskOpen, "dep")
	done, _ := backendtest.Into(t, s, cks.TaskCompleted, "done")
	failed, _ := backendtest.Into(t, s, cks.TaskFailed, "failed")

	x, _ := backendtest.Into(t, s, cks.TaskOpen, "x")
	res := mustUpdate(t, s, x.ID, cks.TaskPatch{AddDependsOn: []int64{dep.ID}})
	got := backendtest.WantState(t, s, x.ID, cks.TaskWaiting)
	if res.Path != cks.UpdateInPlace || res.Task.State != cks.TaskWaiting || !slices.Equal(got.DependsOn, []int64{dep.ID}) || got.Revision != 2 {
		t.Fatalf("adding an incomplete dependency to an OPEN task: %s via %s, stored %+v", res.Task.State, res.Path, got)
	}
	if e := lastEvent(t, got); e.From != cks.TaskOpen || e.To != cks.TaskWaiting || e.Actor != "op" {
		t.Fatalf("re-evaluation event %+v", e)
	}
	res = mustUpdate(t, s, x.ID, cks.TaskPatch{AddDependsOn: []int64{done.ID}})
	if got := backendtest.WantState(t, s, x.ID, cks.TaskWaiting); res.Task.State != cks.TaskWaiting || len(got.DependsOn) != 2 {
		t.Fatalf("adding a completed dependency to a WAITING task: %+v", got)
	}
	res = mustUpdate(t, s, x.ID, cks.TaskPatch{RemoveDependsOn: []int64{dep.ID}})
	got = backendtest.WantState(t, s, x.ID, cks.TaskOpen)
	if res.Task.State != cks.TaskOpen || !slices.Equal(got.DependsOn, []int64{done.ID}) || got.Revision != 4 {
		t.Fatalf("removing the last incomplete dependency: %+v", got)
	}

	y, _ := backendtest.Into(t, s, cks.TaskOpen, "y")
	if res := mustUpdate(t, s, y.ID, cks.TaskPatch{AddDependsOn: []int64{done.ID}}); res.Task.State != cks.TaskOpen {
		t.Fatalf("adding a completed dependency to an OPEN task: %s", res.Task.State)
	}
	if res := mustUpdate(t, s, y.ID, cks.TaskPatch{AddDependsOn: []int64{failed.ID}}); res.Task.State != cks.TaskBlocked {
		t.Fatalf("adding a failed dependency: %s, want BLOCKED", res.Task.State)
	}
	backendtest.WantState(t, s, y.ID, cks.TaskBlocked)
	if res := mustUpdate(t, s, y.ID, cks.TaskPatch{RemoveDependsOn: []int64{failed.ID}}); res.Task.State != cks.TaskOpen {
		t.Fatalf("removing the failed dependency of a BLOCKED task: %s, want OPEN", res.Task.State)
	}
	backendtest.WantState(t, s, y.ID, cks.TaskOpen)

	// A running task given an incomplete dependency comes back WAITING.
	r, tok := backendtest.Into(t, s, cks.TaskRunning, "r")
	res, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: r.ID, Actor: "op", Patch: cks.TaskPatch{AddDependsOn: []int64{dep.ID}}})
	if err != nil || res.Path != cks.UpdateRestart || res.Abort == nil || res.Task.State != cks.TaskWaiting {
		t.Fatalf("adding an incomplete dependency to a RUNNING task = %+v, %v; want a restart into WAITING", res, err)
	}
	got = backendtest.WantState(t, s, r.ID, cks.TaskWaiting)
	if n := len(got.Events); got.Events[n-2].To != cks.TaskStopped || got.Events[n-1].From != cks.TaskStopped ||
		got.Events[n-1].To != cks.TaskWaiting || got.Restarts != 1 || got.Attempts != 0 {
		t.Fatalf("running task after a dependency edit: %+v", got)
	}
	checkEventChain(t, got)
	wantFenced(t, s, r.ID, tok, "after a dependency edit of a RUNNING task")
	if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"r"}, N: 1, Lease: backendtest.Lease}); err != nil || len(ts) != 0 {
		t.Fatalf("claim of the WAITING task = %+v, %v", ts, err)
	}
}

// testTaskUpdateRefused: every refused Update changes nothing.
func testTaskUpdateRefused(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	b := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "b", Title: "B"})
	a := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "a", Title: "A", DependsOn: []int64{b.ID}})
	c := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "c", Title: "C", DependsOn: []int64{a.ID}})
	x := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", Title: "X"})
	child := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "child", Title: "child of X", ParentID: &x.ID})
	y := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "y", Title: "Y"})
	run, tok := backendtest.Into(t, s, cks.TaskRunning, "run")
	done, _ := backendtest.Into(t, s, cks.TaskCompleted, "done")
	stopped, _ := backendtest.Into(t, s, cks.TaskStopped, "stopped")
	parked, _ := backendtest.Into(t, s, cks.TaskNeedsInput, "parked")
	review, _ := backendtest.Into(t, s, cks.TaskNeedsReview, "review")
	reviewing, _ := backendtest.Into(t, s, cks.TaskReviewing, "reviewing")
	missing := int64(424242)
	all := []int64{a.ID, b.ID, c.ID, x.ID, child.ID, y.ID, run.ID, done.ID, stopped.ID, parked.ID, review.ID, reviewing.ID}

	invalid := []struct {
		name  string
		id    int64
		field string
		p     cks.TaskPatch
	}{
		{"empty patch", x.ID, "patch", cks.TaskPatch{}},
		{"empty patch of a running task", run.ID, "patch", cks.TaskPatch{}},
		{"unknown dependency", x.ID, "add_depends_on", cks.TaskPatch{AddDependsOn: []int64{missing}}},
		{"unknown dependency with a valid edit", x.ID, "add_depends_on",
			cks.TaskPatch{Description: ptr("changed"), Priority: ptr(5), AddDependsOn: []int64{y.ID, missing}}},
		{"unknown dependency of a running task", run.ID, "add_depends_on",
			cks.TaskPatch{AcceptanceCriteria: ptr("changed"), AddDependsOn: []int64{missing}}},
		{"unknown dependency of a stopped task", stopped.ID, "add_depends_on", cks.TaskPatch{AddDependsOn: []int64{missing}}},
		{"cycle", b.ID, "add_depends_on", cks.TaskPatch{AddDependsOn: []int64{a.ID}}},
		{"longer cycle", b.ID, "add_depends_on", cks.TaskPatch{Description: ptr("changed"), AddDependsOn: []int64{c.ID}}},
		{"self dependency", x.ID, "add_depends_on", cks.TaskPatch{AddDependsOn: []int64{x.ID}}},
		{"cancel a task that is not a child", x.ID, "cancel_children", cks.TaskPatch{CancelChildren: []int64{y.ID}}},
		{"cancel a non-child with a new child", x.ID, "cancel_children",
			cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "child", Title: "new"}}, CancelChildren: []int64{child.ID, y.ID}}},
		{"cancel an unknown child", x.ID, "cancel_children", cks.TaskPatch{CancelChildren: []int64{missing}}},
		{"payload not JSON", x.ID, "payload", cks.TaskPatch{Payload: json.RawMessage(`{not json`)}},
		{"metadata not an object", x.ID, "metadata", cks.TaskPatch{Metadata: json.RawMessage(`[1, 2]`)}},
		{"metadata not JSON", run.ID, "metadata", cks.TaskPatch{Metadata: json.RawMessage(`{"a":`)}},
		{"priority below range", x.ID, "priority", cks.TaskPatch{Priority: ptr(-1)}},
		{"priority above range", run.ID, "priority", cks.TaskPatch{Priority: ptr(cks.MaxPriority + 1)}},
		{"child without a type", x.ID, "add_children[0].type", cks.TaskPatch{AddChildren: []cks.NewTask{{Title: "no type"}}}},
	}
	for _, tc := range invalid {
		before := snapshot(t, s, all...)
		res, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: tc.id, Actor: "op", Patch: tc.p})
		if !cks.IsFieldError(err, tc.field) || !errors.Is(err, cks.ErrInvalid) {
			t.Errorf("%s: Update = %+v, err = %v; want a FieldError naming %s", tc.name, res, err, tc.field)
		}
		unchanged(t, s, tc.name, before)
	}
	conflicts := []struct {
		name string
		id   int64
		p    cks.TaskPatch
	}{
		{"title of a COMPLETED task", done.ID, cks.TaskPatch{Title: ptr("x")}},
		{"description of a COMPLETED task", done.ID, cks.TaskPatch{Description: ptr("x")}},
		{"material edit of a NEEDS_INPUT task", parked.ID, cks.TaskPatch{AcceptanceCriteria: ptr("x")}},
		{"dependency edit of a NEEDS_INPUT task", parked.ID, cks.TaskPatch{AddDependsOn: []int64{y.ID}}},
		{"material edit of a NEEDS_REVIEW task", review.ID, cks.TaskPatch{Description: ptr("x"), Priority: ptr(4)}},
		{"material edit of a REVIEWING task", reviewing.ID, cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "child"}}}},
	}
	for _, tc := range conflicts {
		before := snapshot(t, s, all...)
		if _, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: tc.id, Actor: "op", Patch: tc.p}); !errors.Is(err, cks.ErrConflict) {
			t.Errorf("%s: err = %v, want ErrConflict", tc.name, err)
		}
		unchanged(t, s, tc.name, before)
	}
	if held, err := s.Tasks.LeaseHeld(ctx(t), run.ID, tok); !held || err != nil {
		t.Fatalf("the running task's lease after refused edits: %v, %v; want held", held, err)
	}
	_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: missing, Actor: "op", Patch: cks.TaskPatch{Title: ptr("x")}})
	backendtest.WantErr(t, "Update of an unknown task", err, cks.ErrNotFound)
}

// testTaskUpdateChildren: AddChildren creates children of the task,
// CancelChildren cancels them; one revision bump per Update.
func testTaskUpdateChildren(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	x := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", Title: "parent"})
	old := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "sub", Title: "old child", ParentID: &x.ID})
	res := mustUpdate(t, s, x.ID, cks.TaskPatch{AddChildren: []cks.NewTask{
		{Type: "sub", Title: "c1", AcceptanceCriteria: "ac1"},
		{Type: "sub", Title: "c2", DependsOn: []int64{old.ID}},
	}})
	if res.Path != cks.UpdateInPlace || len(res.Children) != 2 || res.Task.Revision != 2 {
		t.Fatalf("AddChildren: path %s, %d children, revision %d; want in place, 2, 2", res.Path, len(res.Children), res.Task.Revision)
	}
	for i, want := range []struct {
		title string
		state cks.TaskState
	}{{"c1", cks.TaskOpen}, {"c2", cks.TaskWaiting}} {
		c := backendtest.MustGet(t, s, res.Children[i].ID)
		if c.ParentID == nil || *c.ParentID != x.ID || c.Title != want.title || c.State != want.state || c.Type != "sub" ||
			res.Children[i].Title != want.title || c.Revision != 1 {
			t.Fatalf("child %d: returned %+v, stored %+v; want %s, %s, parent %d", i, res.Children[i], c, want.title, want.state, x.ID)
		}
	}
	if c := backendtest.MustGet(t, s, res.Children[0].ID); c.AcceptanceCriteria != "ac1" {
		t.Fatalf("child acceptance criteria %q", c.AcceptanceCriteria)
	}
	res = mustUpdate(t, s, x.ID, cks.TaskPatch{CancelChildren: []int64{old.ID, res.Children[0].ID}})
	if res.Task.Revision != 3 || len(res.Children) != 0 {
		t.Fatalf("CancelChildren: revision %d, children %+v; want 3, none", res.Task.Revision, res.Children)
	}
	// c2 depended on the cancelled old child: it is BLOCKED, as after any Cancel.
	states := map[string]cks.TaskState{}
	byTitle := map[string]int64{}
	page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{Types: []string{"sub"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range page.Tasks {
		states[task.Title] = task.State
		byTitle[task.Title] = task.ID
	}
	if want := map[string]cks.TaskState{"old child": cks.TaskCancelled, "c1": cks.TaskCancelled, "c2": cks.TaskBlocked}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Fatalf("children after CancelChildren: %v, want %v", states, want)
	}
	if e := lastEvent(t, backendtest.MustGet(t, s, old.ID)); e.From != cks.TaskOpen || e.To != cks.TaskCancelled || e.Actor != "op" {
		t.Fatalf("cancel event of a child %+v", e)
	}
	// Both in one patch: one revision bump.
	res = mustUpdate(t, s, x.ID, cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "sub", Title: "c3"}},
		CancelChildren: []int64{byTitle["c2"]}})
	if res.Task.Revision != 4 || len(res.Children) != 1 || res.Children[0].Title != "c3" {
		t.Fatalf("add and cancel in one patch: revision %d, children %+v", res.Task.Revision, res.Children)
	}
	backendtest.WantState(t, s, byTitle["c2"], cks.TaskCancelled)
	if c3 := backendtest.WantState(t, s, res.Children[0].ID, cks.TaskOpen); c3.ParentID == nil || *c3.ParentID != x.ID {
		t.Fatalf("c3 %+v", c3)
	}
	if got := backendtest.WantState(t, s, x.ID, cks.TaskOpen); got.Revision != 4 {
		t.Fatalf("parent revision %d, want 4", got.Revision)
	}
}

// testTaskMetadata: metadata round-trips, defaults to {}, and is refused
// unless a JSON object.
func testTaskMetadata(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	plain := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "plain"})
	if got := backendtest.MustGet(t, s, plain.ID); !jsonEqual(got.Metadata, []byte(`{}`)) {
		t.Fatalf("default metadata %s, want {}", got.Metadata)
	}
	meta := json.RawMessage(`{"owner": "ann", "links": ["https://x/1"]}`)
	with := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "with", Metadata: meta})
	if got := backendtest.MustGet(t, s, with.ID); !jsonEqual(got.Metadata, meta) || !jsonEqual(with.Metadata, meta) {
		t.Fatalf("metadata %s (returned %s), want %s", got.Metadata, with.Metadata, meta)
	}
	page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{})
	if err != nil || len(page.Tasks) != 2 || !jsonEqual(page.Tasks[1].Metadata, meta) {
		t.Fatalf("ListTasks metadata: %+v, %v", page.Tasks, err)
	}
	for _, bad := range []string{`[1]`, `"s"`, `{"a":`, `null`} {
		if _, _, err := s.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "x", Metadata: json.RawMessage(bad)}); !cks.IsFieldError(err, "metadata") {
			t.Errorf("Enqueue with metadata %s: err = %v, want a FieldError naming metadata", bad, err)
		}
	}
	mustUpdate(t, s, with.ID, cks.TaskPatch{Metadata: json.RawMessage(`{"owner": "bob"}`)})
	if got := backendtest.MustGet(t, s, with.ID); !jsonEqual(got.Metadata, []byte(`{"owner": "bob"}`)) || got.Revision != 1 {
		t.Fatalf("after replacing metadata: %s, revision %d", got.Metadata, got.Revision)
	}
}

// testTaskAborts: the outcomes of abort requests.
func testTaskAborts(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	t1 := mustRunning(t, s, "a1", "w1")
	t2 := mustRunning(t, s, "a2", "w2")
	t3 := mustRunning(t, s, "a3", "w3")
	t4 := mustRunning(t, s, "a4", "w4")
	quiet := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "quiet", Title: "never aborted"})
	_, a1 := mustStop(t, s, t1.ID, 10*time.Second)
	_, a2 := mustStop(t, s, t2.ID, 15*time.Second)
	_, a4 := mustStop(t, s, t4.ID, 20*time.Second)
	cancelled, err := s.Tasks.Cancel(ctx(t), t3.ID, "op", "abandoned")
	if err != nil || cancelled.State != cks.TaskCancelled {
		t.Fatalf("Cancel of a RUNNING task = %+v, %v", cancelled, err)
	}
	c3 := backendtest.MustGet(t, s, t3.ID)
	a3 := c3.LastAbort
	if a3 == nil || len(c3.Aborts) != 1 || a3.Outcome != cks.AbortPending || a3.Executor != "w3" ||
		a3.RequestedBy != "op" || !a3.DeadlineAt.Equal(backendtest.T0.Add(cks.DefaultAbortDeadline)) || a3.Attempt != 1 {
		t.Fatalf("Cancel of a RUNNING task recorded aborts %+v, last %+v; want one pending with the default deadline", c3.Aborts, a3)
	}
	wantFenced(t, s, t3.ID, t3.LeaseToken, "after Cancel")

	if n, err := s.Tasks.ExpireAborts(ctx(t), backendtest.T0.Add(9*time.Second)); n != 0 || err != nil {
		t.Fatalf("ExpireAborts before any deadline = %d, %v", n, err)
	}
	// getAbort reads abort a as GetTask shows it, among its task's aborts.
	taskOf := map[int64]int64{a1.ID: t1.ID, a2.ID: t2.ID, a3.ID: t3.ID, a4.ID: t4.ID}
	getAbort := func(id int64) cks.Abort {
		t.Helper()
		for _, a := range backendtest.MustGet(t, s, taskOf[id]).Aborts {
			if a.ID == id {
				return a
			}
		}
		t.Fatalf("task %d shows no abort %d", taskOf[id], id)
		return cks.Abort{}
	}
	for _, a := range []*cks.Abort{a1, a2, a3, a4} {
		if got := getAbort(a.ID); got.Outcome != cks.AbortPending || !got.ResolvedAt.IsZero() {
			t.Fatalf("abort %d before its deadline: %+v", a.ID, got)
		}
	}

	// The executor confirms.
	clk.Advance(time.Second)
	conf, err := s.Tasks.ConfirmAbort(ctx(t), t1.ID, t1.LeaseToken)
	if err != nil || conf.ID != a1.ID || conf.Outcome != cks.AbortConfirmed || !conf.ResolvedAt.Equal(clk.Now()) {
		t.Fatalf("ConfirmAbort = %+v, %v; want a1 confirmed at %v", conf, err, clk.Now())
	}
	if got := getAbort(a1.ID); diffAbort(got, conf) != "" {
		t.Fatalf("the abort after confirm = %+v, want %+v", got, conf)
	}
	// A confirmed abort stays confirmed when its deadline passes.
	clk.Set(a1.DeadlineAt)
	if n, err := s.Tasks.ExpireAborts(ctx(t), clk.Now()); n != 0 || err != nil {
		t.Fatalf("ExpireAborts at a confirmed abort's deadline = %d, %v; want 0", n, err)
	}
	if got := getAbort(a1.ID); diffAbort(got, conf) != "" {
		t.Fatalf("a confirmed abort past its deadline = %+v; want it unchanged %+v", got, conf)
	}
	// Nothing to confirm: a token no abort names.
	done := mustRunning(t, s, "done", "wd")
	if _, err := s.Tasks.Complete(ctx(t), done.ID, done.LeaseToken, false, "ok"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		id    int64
		token string
	}{
		{"a completed lease", done.ID, done.LeaseToken},
		{"a made-up token", t1.ID, "no-such-token"},
		{"another task's revoked token", quiet.ID, t2.LeaseToken},
	} {
		_, err := s.Tasks.ConfirmAbort(ctx(t), c.id, c.token)
		backendtest.WantErr(t, "ConfirmAbort with "+c.name, err, cks.ErrNotFound)
	}

	// The deadline passes without a confirmation; a late one still counts.
	clk.Set(a2.DeadlineAt)
	if n, err := s.Tasks.ExpireAborts(ctx(t), clk.Now()); n != 1 || err != nil {
		t.Fatalf("ExpireAborts at a2's deadline = %d, %v; want 1", n, err)
	}
	unconf := getAbort(a2.ID)
	if unconf.Outcome != cks.AbortUnconfirmed || unconf.Executor != "w2" || !unconf.ResolvedAt.Equal(clk.Now()) {
		t.Fatalf("a pending abort past its deadline = %+v; want unconfirmed naming w2", unconf)
	}
	clk.Advance(time.Second)
	if n, err := s.Tasks.ExpireAborts(ctx(t), clk.Now()); n != 0 || err != nil {
		t.Fatalf("ExpireAborts again = %d, %v; want 0", n, err)
	}
	if got := getAbort(a2.ID); diffAbort(got, unconf) != "" {
		t.Fatalf("an unconfirmed abort expired again = %+v; want it unchanged %+v", got, unconf)
	}
	if got := backendtest.WantState(t, s, t2.ID, cks.TaskStopped); got.LastAbort == nil || got.LastAbort.Outcome != cks.AbortUnconfirmed {
		t.Fatalf("task of an unconfirmed abort: %s, last abort %+v; want STOPPED showing it unconfirmed", got.State, got.LastAbort)
	}
	late, err := s.Tasks.ConfirmAbort(ctx(t), t2.ID, t2.LeaseToken)
	if err != nil || late.ID != a2.ID || late.Outcome != cks.AbortConfirmed || !late.ResolvedAt.Equal(clk.Now()) {
		t.Fatalf("ConfirmAbort after unconfirmed = %+v, %v; want confirmed now", late, err)
	}

	// ExpireAborts resolves exactly the pending aborts due at now (inclusive).
	clk.Set(backendtest.T0.Add(20 * time.Second)) // a4's deadline; a3's (30s) is later
	if n, err := s.Tasks.ExpireAborts(ctx(t), clk.Now()); n != 1 || err != nil {
		t.Fatalf("ExpireAborts at a4's deadline = %d, %v; want 1", n, err)
	}
	if got := getAbort(a4.ID); got.Outcome != cks.AbortUnconfirmed || got.ResolvedAt.IsZero() || got.ResolvedAt.Before(got.DeadlineAt) {
		t.Fatalf("expired abort %+v", got)
	}
	for _, id := range []int64{a1.ID, a2.ID} {
		if got := getAbort(id); got.Outcome != cks.AbortConfirmed {
			t.Fatalf("ExpireAborts touched confirmed abort %+v", got)
		}
	}
	if got := getAbort(a3.ID); got.Outcome != cks.AbortPending {
		t.Fatalf("ExpireAborts resolved an abort before its deadline: %+v", got)
	}
	if n, err := s.Tasks.ExpireAborts(ctx(t), clk.Now()); n != 0 || err != nil {
		t.Fatalf("second ExpireAborts = %d, %v; want 0", n, err)
	}
	clk.Advance(time.Hour)
	if n, err := s.Tasks.ExpireAborts(ctx(t), clk.Now()); n != 1 || err != nil {
		t.Fatalf("ExpireAborts an hour later = %d, %v; want 1 (the cancel's)", n, err)
	}
	if got := getAbort(a3.ID); got.Outcome != cks.AbortUnconfirmed {
		t.Fatalf("cancel's abort after expiry %+v", got)
	}
	// A late confirmation of an expired abort, after its deadline.
	if got, err := s.Tasks.ConfirmAbort(ctx(t), t4.ID, t4.LeaseToken); err != nil || got.Outcome != cks.AbortConfirmed || !got.ResolvedAt.After(got.DeadlineAt) {
		t.Fatalf("late ConfirmAbort = %+v, %v; want confirmed after the deadline", got, err)
	}

	// A second abort of one task: Aborts lists both, LastAbort is the newer.
	mustStart(t, s, t1.ID)
	again := backendtest.ClaimType(t, s, "w1b", "a1")
	_, a1b := mustStop(t, s, t1.ID, 0)
	g1 := backendtest.MustGet(t, s, t1.ID)
	if len(g1.Aborts) != 2 || g1.Aborts[0].ID != a1.ID || g1.Aborts[1].ID != a1b.ID || g1.LastAbort == nil ||
		g1.LastAbort.ID != a1b.ID || a1b.Executor != "w1b" || a1b.Restart != 1 || a1b.Attempt != 1 {
		t.Fatalf("two aborts: %+v, last %+v (second %+v)", g1.Aborts, g1.LastAbort, a1b)
	}
	if g1.Aborts[0].Outcome != cks.AbortConfirmed || g1.Aborts[1].Outcome != cks.AbortPending {
		t.Fatalf("aborts' outcomes %+v", g1.Aborts)
	}

	// ListTasks shows each task's last abort.
	page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]struct {
		id      int64
		outcome cks.AbortOutcome
	}{
		t1.ID: {a1b.ID, cks.AbortPending}, t2.ID: {a2.ID, cks.AbortConfirmed},
		t3.ID: {a3.ID, cks.AbortUnconfirmed}, t4.ID: {a4.ID, cks.AbortConfirmed},
	}
	for _, task := range page.Tasks {
		w, ok := want[task.ID]
		switch {
		case !ok && task.LastAbort != nil:
			t.Errorf("ListTasks: task %d (%s) has last abort %+v, want none", task.ID, task.Title, *task.LastAbort)
		case ok && (task.LastAbort == nil || task.LastAbort.ID != w.id || task.LastAbort.Outcome != w.outcome):
			t.Errorf("ListTasks: task %d last abort %+v, want %d %s", task.ID, task.LastAbort, w.id, w.outcome)
		}
	}
	if len(page.Tasks) != 6 {
		t.Fatalf("ListTasks: %d tasks, want 6", len(page.Tasks))
	}
	// Each abort names the lease it revoked: its token confirms it.
	wantAbortOf(t, s, *a3, t3.LeaseToken)
	wantAbortOf(t, s, *a1b, again.LeaseToken)
}

// testTaskAbortsPublished: every abort write wakes a watcher of
// TopicTaskAborts on another handle.
func testTaskAbortsPublished(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	stopped := mustRunning(t, s, "stop", "w")
	updated := mustRunning(t, s, "update", "w")
	cancelled := mustRunning(t, s, "cancel", "w")
	watched := open(t, driver.WithClock(clk), driver.WithChangePollInterval(backendtest.FastPoll))
	w := backendtest.Watch(t, watched, cks.TopicTaskAborts)
	w.Ready(t, cks.TopicTaskAborts)
	steps := []struct {
		name string
		do   func() error
	}{
		{"Stop", func() error {
			_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: stopped.ID, Actor: "op", Reason: "hold"})
			return err
		}},
		{"Update with a restart", func() error {
			_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: updated.ID, Actor: "op", Patch: cks.TaskPatch{Description: ptr("new")}})
			return err
		}},
		{"Cancel", func() error { _, err := s.Tasks.Cancel(ctx(t), cancelled.ID, "op", "gone"); return err }},
		{"ExpireAborts", func() error {
			_, err := s.Tasks.ExpireAborts(ctx(t), clk.Now().Add(time.Hour))
			return err
		}},
		{"ConfirmAbort", func() error { _, err := s.Tasks.ConfirmAbort(ctx(t), stopped.ID, stopped.LeaseToken); return err }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := w.Next(t); got != cks.TopicTaskAborts {
			t.Fatalf("%s woke the watcher with %q", st.name, got)
		}
	}
}

// testTaskLeaseHeld: the executor's cheap, read-only lease check.
func testTaskLeaseHeld(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	end := []struct {
		name string
		end  func(c cks.ClaimedTask) error
	}{
		{"Stop", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: c.ID, Actor: "op", Reason: "hold"})
			return err
		}},
		{"Cancel", func(c cks.ClaimedTask) error { _, err := s.Tasks.Cancel(ctx(t), c.ID, "op", "gone"); return err }},
		{"Complete", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "ok")
			return err
		}},
		{"restarting Update", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: c.ID, Actor: "op", Patch: cks.TaskPatch{Description: ptr("new")}})
			return err
		}},
	}
	for i, e := range end {
		c := mustRunning(t, s, fmt.Sprint("t", i), "w")
		before := backendtest.MustGet(t, s, c.ID)
		clk.Advance(30 * time.Second)
		if held, err := s.Tasks.LeaseHeld(ctx(t), c.ID, c.LeaseToken); !held || err != nil {
			t.Fatalf("LeaseHeld(current token) = %v, %v; want true", held, err)
		}
		if held, err := s.Tasks.LeaseHeld(ctx(t), c.ID, "wrong"); held || err != nil {
			t.Fatalf("LeaseHeld(wrong token) = %v, %v; want false, nil", held, err)
		}
		if held, err := s.Tasks.LeaseHeld(ctx(t), c.ID, ""); held || err != nil {
			t.Fatalf("LeaseHeld(empty token) = %v, %v; want false, nil", held, err)
		}
		// Reading only: the lease is not renewed.
		if after := backendtest.MustGet(t, s, c.ID); !after.LeaseRenewedAt.Equal(before.LeaseRenewedAt) ||
			!after.LeaseExpiresAt.Equal(before.LeaseExpiresAt) || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("LeaseHeld wrote: renewed %v → %v, expires %v → %v", before.LeaseRenewedAt, after.LeaseRenewedAt,
				before.LeaseExpiresAt, after.LeaseExpiresAt)
		}
		if err := e.end(c); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if held, err := s.Tasks.LeaseHeld(ctx(t), c.ID, c.LeaseToken); held || err != nil {
			t.Fatalf("LeaseHeld after %s = %v, %v; want false, nil", e.name, held, err)
		}
	}
	// The doc names no error for an unknown task: false, with no error or ErrNotFound.
	if held, err := s.Tasks.LeaseHeld(ctx(t), 424242, "tok"); held || (err != nil && !errors.Is(err, cks.ErrNotFound)) {
		t.Fatalf("LeaseHeld(unknown task) = %v, %v; want false (nil or ErrNotFound)", held, err)
	}
}

// testTaskReentryFromTheTop is ADR 0020's key test at store level: stop a
// task mid-execution, change its acceptance criteria and its children, start
// it, and the next agent's first decision is derived from the new revision;
// nothing of the aborted attempt is current, and its workspace is only
// reused by an explicit decision.
func testTaskReentryFromTheTop(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "build", Title: "feature", Description: "build X",
		AcceptanceCriteria: "criteria v1"})
	oldChild := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "sub", Title: "old part", ParentID: &task.ID})

	// Worker A works on revision 1.
	a := backendtest.ClaimType(t, s, "A", "build")
	if a.Revision != 1 || a.AcceptanceCriteria != "criteria v1" {
		t.Fatalf("A's claim %+v", a)
	}
	if _, err := s.Tasks.MarkRunning(ctx(t), a.ID, a.LeaseToken); err != nil {
		t.Fatal(err)
	}
	evA, err := s.Tasks.AddEvidence(ctx(t), a.ID, a.LeaseToken, "plan_decomposed", "two parts")
	if err != nil {
		t.Fatal(err)
	}
	wsA, err := s.Tasks.AddEvidence(ctx(t), a.ID, a.LeaseToken, cks.EvidenceWorkspace, "/work/ws-a")
	if err != nil {
		t.Fatal(err)
	}
	decA, err := s.Tasks.RecordDecision(ctx(t), a.ID, a.LeaseToken, "atomic", "not atomic: decompose", a.Revision)
	if err != nil || decA.Attempt != 1 || decA.Restart != 0 || decA.Revision != 1 || decA.DerivedFromRevision != 1 ||
		decA.Kind != "atomic" || decA.Text != "not atomic: decompose" || decA.Actor != "A" || decA.TaskID != task.ID ||
		decA.ID == 0 || !decA.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("A's decision = %+v, %v", decA, err)
	}
	if evA.Restart != 0 || evA.Attempt != 1 || wsA.Restart != 0 {
		t.Fatalf("A's evidence %+v, %+v", evA, wsA)
	}
	if cur := backendtest.MustGet(t, s, task.ID).Current; cur == nil || cur.Workspace != "/work/ws-a" || len(cur.Decisions) != 1 || len(cur.Evidence) != 2 {
		t.Fatalf("A's current attempt %+v", cur)
	}

	// The operator stops it, rewrites criteria and children, starts it.
	clk.Advance(time.Minute)
	_, ab := mustStop(t, s, task.ID, 0)
	if ab == nil || ab.Executor != "A" {
		t.Fatalf("stop abort %+v", ab)
	}
	res := mustUpdate(t, s, task.ID, cks.TaskPatch{AcceptanceCriteria: ptr("criteria v2"),
		AddChildren: []cks.NewTask{{Type: "sub", Title: "new part"}}, CancelChildren: []int64{oldChild.ID}})
	if res.Path != cks.UpdateInPlace || res.Task.Revision != 2 || res.Task.State != cks.TaskStopped || len(res.Children) != 1 {
		t.Fatalf("edit of the stopped task = %+v", res)
	}
	newChild := res.Children[0]
	if started := mustStart(t, s, task.ID); started.State != cks.TaskOpen || started.Restarts != 1 || started.Attempts != 0 {
		t.Fatalf("Start = %+v", started)
	}

	// Worker B re-enters from the top: the task as it is now.
	clk.Advance(time.Minute)
	b := backendtest.ClaimType(t, s, "B", "build")
	if b.ID != task.ID || b.AcceptanceCriteria != "criteria v2" || b.Revision != 2 || b.Attempts != 1 || b.Restarts != 1 {
		t.Fatalf("B's claim %+v; want criteria v2 at revision 2, attempt 1 of restart 1", b)
	}
	decB, err := s.Tasks.RecordDecision(ctx(t), b.ID, b.LeaseToken, "atomic", "atomic now", b.Revision)
	if err != nil || decB.Revision != 2 || decB.DerivedFromRevision != 2 || decB.Attempt != 1 || decB.Restart != 1 || decB.Actor != "B" {
		t.Fatalf("B's decision = %+v, %v", decB, err)
	}

	got := backendtest.MustGet(t, s, task.ID)
	cur := got.Current
	if cur == nil || cur.Restart != 1 || cur.Attempt != 1 || cur.Aborted || len(cur.Evidence) != 0 || cur.Workspace != "" ||
		len(cur.Decisions) != 1 || cur.Decisions[0].ID != decB.ID || cur.Decisions[0].DerivedFromRevision != 2 {
		t.Fatalf("current attempt %+v; want only B's decision, derived from revision 2, no evidence, no workspace", cur)
	}
	if len(got.CurrentEvidence()) != 0 {
		t.Fatalf("current evidence %+v; A's must not count", got.CurrentEvidence())
	}
	if len(got.History) != 1 {
		t.Fatalf("history %+v; want A's aborted attempt only", got.History)
	}
	h := got.History[0]
	if h.Restart != 0 || h.Attempt != 1 || !h.Aborted || h.Workspace != "/work/ws-a" || len(h.Evidence) != 2 ||
		h.Evidence[0].ID != evA.ID || h.Evidence[1].ID != wsA.ID || len(h.Decisions) != 1 || h.Decisions[0].ID != decA.ID {
		t.Fatalf("A's attempt in history %+v", h)
	}
	if len(got.Aborts) != 1 || got.LastAbort == nil || got.LastAbort.ID != ab.ID {
		t.Fatalf("aborts %+v", got.Aborts)
	}
	backendtest.WantState(t, s, oldChild.ID, cks.TaskCancelled)
	if c := backendtest.WantState(t, s, newChild.ID, cks.TaskOpen); c.ParentID == nil || *c.ParentID != task.ID {
		t.Fatalf("new child %+v", c)
	}

	// A is a zombie.
	_, err = s.Tasks.Complete(ctx(t), a.ID, a.LeaseToken, false, "built to v1")
	backendtest.WantErr(t, "A's late Complete", err, cks.ErrLeaseLost)
	_, err = s.Tasks.ReuseWorkspace(ctx(t), a.ID, a.LeaseToken, "/work/ws-a", 1)
	backendtest.WantErr(t, "A's ReuseWorkspace", err, cks.ErrLeaseLost)

	// The workspace is only inherited by an explicit decision.
	if ws := got.Workspaces(); !slices.Equal(ws, []string{"/work/ws-a"}) {
		t.Fatalf("Workspaces() = %v, want A's", ws)
	}
	for _, bad := range []string{"/work/ws-other", ""} {
		before := snapshot(t, s, task.ID)
		if _, err := s.Tasks.ReuseWorkspace(ctx(t), b.ID, b.LeaseToken, bad, b.Revision); !cks.IsFieldError(err, "path") {
			t.Fatalf("ReuseWorkspace(%q): err = %v, want a FieldError naming path", bad, err)
		}
		unchanged(t, s, "refused ReuseWorkspace", before)
		if c := backendtest.MustGet(t, s, task.ID).Current; len(c.Decisions) != 1 || c.Workspace != "" {
			t.Fatalf("refused ReuseWorkspace recorded %+v", c)
		}
	}
	reuse, err := s.Tasks.ReuseWorkspace(ctx(t), b.ID, b.LeaseToken, "/work/ws-a", b.Revision)
	if err != nil || reuse.Kind != cks.DecisionReuseWorkspace || reuse.Attempt != 1 || reuse.Restart != 1 ||
		reuse.DerivedFromRevision != 2 || reuse.Actor != "B" {
		t.Fatalf("ReuseWorkspace = %+v, %v", reuse, err)
	}
	got = backendtest.MustGet(t, s, task.ID)
	if cur := got.Current; cur.Workspace != "/work/ws-a" || len(cur.Decisions) != 2 || cur.Decisions[1].Kind != cks.DecisionReuseWorkspace ||
		len(got.History) != 1 || got.History[0].Workspace != "/work/ws-a" {
		t.Fatalf("after ReuseWorkspace: current %+v, history %+v", cur, got.History)
	}
	if done, err := s.Tasks.Complete(ctx(t), b.ID, b.LeaseToken, false, "built to v2"); err != nil || done.State != cks.TaskCompleted {
		t.Fatalf("B's Complete = %+v, %v", done, err)
	}
	if final := backendtest.MustGet(t, s, task.ID); final.Result != "built to v2" || final.Current == nil || final.Current.Restart != 1 {
		t.Fatalf("final %+v", final)
	}
}

// testTaskRecordDecision: validation and fencing of RecordDecision.
func testTaskRecordDecision(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	c := mustRunning(t, s, "d", "w")
	bad := []struct {
		field, kind string
		rev         int
	}{
		{"kind", "", 1},
		{"derived_from_revision", "atomic", 0},
		{"derived_from_revision", "atomic", -1},
		{"derived_from_revision", "atomic", 2},
	}
	for _, b := range bad {
		if _, err := s.Tasks.RecordDecision(ctx(t), c.ID, c.LeaseToken, b.kind, "x", b.rev); !cks.IsFieldError(err, b.field) {
			t.Errorf("RecordDecision(kind %q, revision %d): err = %v, want a FieldError naming %s", b.kind, b.rev, err, b.field)
		}
	}
	_, err := s.Tasks.RecordDecision(ctx(t), c.ID, "wrong", "atomic", "x", 1)
	backendtest.WantErr(t, "RecordDecision with a wrong token", err, cks.ErrLeaseLost)
	if cur := backendtest.MustGet(t, s, c.ID).Current; cur == nil || len(cur.Decisions) != 0 {
		t.Fatalf("refused decisions were recorded: %+v", cur)
	}
	d, err := s.Tasks.RecordDecision(ctx(t), c.ID, c.LeaseToken, "needs_review", "yes", 1)
	if err != nil || d.Kind != "needs_review" || d.Text != "yes" {
		t.Fatalf("RecordDecision = %+v, %v", d, err)
	}
	if cur := backendtest.MustGet(t, s, c.ID).Current; len(cur.Decisions) != 1 || cur.Decisions[0].ID != d.ID {
		t.Fatalf("current decisions %+v", cur.Decisions)
	}
	// A decision may derive from an earlier revision than the current one.
	mustStop(t, s, c.ID, 0)
	mustUpdate(t, s, c.ID, cks.TaskPatch{Description: ptr("v2")})
	mustUpdate(t, s, c.ID, cks.TaskPatch{Description: ptr("v3")})
	mustStart(t, s, c.ID)
	c2 := backendtest.ClaimType(t, s, "w", "d")
	if c2.Revision != 3 {
		t.Fatalf("revision after two material edits %d, want 3", c2.Revision)
	}
	if d, err := s.Tasks.RecordDecision(ctx(t), c2.ID, c2.LeaseToken, "atomic", "stale", 2); err != nil || d.Revision != 3 || d.DerivedFromRevision != 2 {
		t.Fatalf("decision derived from an older revision = %+v, %v", d, err)
	}
	if _, err := s.Tasks.RecordDecision(ctx(t), c2.ID, c2.LeaseToken, "atomic", "future", 4); !cks.IsFieldError(err, "derived_from_revision") {
		t.Fatalf("decision derived from a future revision: %v", err)
	}
}

// testTaskControlNotFound: unknown ids are ErrNotFound.
func testTaskControlNotFound(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	const id = 424242
	calls := []struct {
		name string
		call func() error
	}{
		{"Stop", func() error {
			_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: id, Actor: "op", Reason: "x"})
			return err
		}},
		{"Start", func() error { _, err := s.Tasks.Start(ctx(t), id, "op", "x"); return err }},
		{"Update", func() error {
			_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: id, Actor: "op", Patch: cks.TaskPatch{Title: ptr("x")}})
			return err
		}},
		{"ConfirmAbort", func() error { _, err := s.Tasks.ConfirmAbort(ctx(t), id, "tok"); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, cks.ErrNotFound) {
			t.Errorf("%s(%d): err = %v, want ErrNotFound", c.name, id, err)
		}
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"RecordDecision", func() error { _, err := s.Tasks.RecordDecision(ctx(t), id, "tok", "k", "x", 1); return err }},
		{"ReuseWorkspace", func() error { _, err := s.Tasks.ReuseWorkspace(ctx(t), id, "tok", "/p", 1); return err }},
	} {
		// Executor calls on an unknown task: ErrNotFound or ErrLeaseLost (as Heartbeat).
		if err := c.call(); !errors.Is(err, cks.ErrNotFound) && !errors.Is(err, cks.ErrLeaseLost) {
			t.Errorf("%s(%d): err = %v, want ErrNotFound or ErrLeaseLost", c.name, id, err)
		}
	}
}

// testTaskControlConcurrent races Stop, Start, Update and the executor's
// Complete on one running task from separate handles: the task ends in a
// state its events explain, and the executor cannot both be stopped and
// complete.
func testTaskControlConcurrent(t *testing.T, open backendtest.Opener) {
	const rounds = 12
	s, clk := backendtest.FakeStore(t, open)
	handles := make([]*backend.Backend, 4)
	for i := range handles {
		handles[i] = open(t, driver.WithClock(clk))
	}
	for r := range rounds {
		typ := fmt.Sprint("race", r)
		c := mustRunning(t, s, typ, "w")
		var (
			wg                                  sync.WaitGroup
			stopErr, startErr, updErr, complErr error
			stopAbort                           *cks.Abort
			upd                                 cks.UpdateResult
		)
		begin := make(chan struct{})
		wg.Go(func() {
			<-begin
			var res cks.TaskStopResult
			res, stopErr = handles[0].Tasks.StopTask(ctx(t), ledger.StopParams{ID: c.ID, Actor: "op", Reason: "race"})
			stopAbort = res.Abort
		})
		wg.Go(func() {
			<-begin
			_, startErr = handles[1].Tasks.Start(ctx(t), c.ID, "op", "race")
		})
		wg.Go(func() {
			<-begin
			upd, updErr = handles[2].Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: c.ID, Actor: "op", Patch: cks.TaskPatch{AcceptanceCriteria: ptr("raced")}})
		})
		wg.Go(func() {
			<-begin
			// The executor works a little first (more each round), so the
			// operators win some rounds and lose others.
			for i := range r % 4 {
				if _, err := handles[3].Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "log", fmt.Sprint(i)); err != nil && !errors.Is(err, cks.ErrLeaseLost) {
					t.Errorf("round %d: AddEvidence: %v", r, err)
				}
			}
			_, complErr = handles[3].Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "done")
		})
		close(begin)
		wg.Wait()
		for name, err := range map[string]error{"Stop": stopErr, "Start": startErr, "Update": updErr, "Complete": complErr} {
			if err != nil && !errors.Is(err, cks.ErrConflict) {
				t.Errorf("round %d: %s: %v (only success or a conflict is acceptable)", r, name, err)
			}
		}
		final := backendtest.MustGet(t, s, c.ID)
		checkEventChain(t, final)
		if complErr == nil && stopErr == nil {
			t.Errorf("round %d: both Complete with the original token and Stop succeeded", r)
		}
		if complErr == nil && updErr == nil {
			t.Errorf("round %d: both Complete with the original token and Update succeeded (path %s)", r, upd.Path)
		}
		if complErr == nil {
			if final.State != cks.TaskCompleted || final.Result != "done" || len(final.Aborts) != 0 {
				t.Errorf("round %d: Complete succeeded but the task is %s, result %q, aborts %+v", r, final.State, final.Result, final.Aborts)
			}
		} else {
			if final.State != cks.TaskStopped && final.State != cks.TaskOpen {
				t.Errorf("round %d: Complete lost, task is %s; want STOPPED or OPEN", r, final.State)
			}
			if final.Attempts != 0 || len(final.Aborts) != 1 || final.Aborts[0].Executor != "w" || final.Aborts[0].Attempt != 1 {
				t.Errorf("round %d: after the executor was aborted: attempts %d, aborts %+v; want 0 and exactly one abort of w's attempt",
					r, final.Attempts, final.Aborts)
			}
			if (stopAbort != nil) == (updErr == nil && upd.Abort != nil) {
				t.Errorf("round %d: abort returned by Stop %v and by Update %v; want exactly one", r, stopAbort, upd.Abort)
			}
		}
		if hasLease(final) {
			t.Errorf("round %d: task holds a lease (%q until %v) after the race", r, final.ClaimedBy, final.LeaseExpiresAt)
		}
		if held, err := s.Tasks.LeaseHeld(ctx(t), c.ID, c.LeaseToken); held || err != nil {
			t.Errorf("round %d: LeaseHeld(original) = %v, %v", r, held, err)
		}
	}
}

// testTaskUpdateConcurrentCycle races, on two handles, updates adding a → b
// and b → a: each alone is fine, together they close a cycle, so exactly one
// must be refused (FieldError add_depends_on) every time.
func testTaskUpdateConcurrentCycle(t *testing.T, open backendtest.Opener) {
	s1, s2 := open(t), open(t)
	for range 10 {
		a := backendtest.MustEnqueue(t, s1, cks.NewTask{Type: "a"})
		b := backendtest.MustEnqueue(t, s1, cks.NewTask{Type: "b"})
		errs := make(chan error, 2)
		go func() {
			_, err := s1.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: a.ID, Actor: "op", Patch: cks.TaskPatch{AddDependsOn: []int64{b.ID}}})
			errs <- err
		}()
		go func() {
			_, err := s2.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: b.ID, Actor: "op", Patch: cks.TaskPatch{AddDependsOn: []int64{a.ID}}})
			errs <- err
		}()
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) {
			t.Fatalf("updates closing a cycle: %v / %v; want exactly one refused", e1, e2)
		}
		if err := errors.Join(e1, e2); !cks.IsFieldError(err, "add_depends_on") {
			t.Fatalf("refusal %v, want a FieldError naming add_depends_on", err)
		}
	}
}

// testTaskUpdateChildDedupe: a child added with the dedupe key of one of the
// task's children is that child again (an update run twice adds it once);
// with the key of any other live task it is a FieldError naming
// add_children[i].dedupe_key that says nothing of that task, and the update
// changes nothing (issue 12: a dedupe hit reveals nothing the caller may
// not read).
func testTaskUpdateChildDedupe(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	x := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x", Title: "parent"})
	secret := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "other", Title: "not yours", DedupeKey: "k-secret",
		Payload: json.RawMessage(`{"secret":true}`)})
	first := mustUpdate(t, s, x.ID, cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "sub", Title: "once", DedupeKey: "k-child"}}})
	again := mustUpdate(t, s, x.ID, cks.TaskPatch{AddChildren: []cks.NewTask{{Type: "sub", Title: "once", DedupeKey: "k-child"}}})
	if len(again.Children) != 1 || again.Children[0].ID != first.Children[0].ID {
		t.Fatalf("the child's key again: children %+v, want task %d", again.Children, first.Children[0].ID)
	}
	before := backendtest.MustGet(t, s, x.ID)
	_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: x.ID, Actor: "op", Patch: cks.TaskPatch{Title: ptr("renamed"),
		AddChildren: []cks.NewTask{{Type: "sub", Title: "fresh"}, {Type: "sub", Title: "peek", DedupeKey: "k-secret"}}}})
	if !cks.IsFieldError(err, "add_children[1].dedupe_key") {
		t.Fatalf("another task's key: %v, want a FieldError naming add_children[1].dedupe_key", err)
	}
	if msg := err.Error(); strings.Contains(msg, fmt.Sprint(secret.ID)) || strings.Contains(msg, "not yours") || strings.Contains(msg, "secret\"") {
		t.Fatalf("the refusal names the other task: %s", msg)
	}
	after := backendtest.MustGet(t, s, x.ID)
	if after.Title != before.Title || after.Revision != before.Revision || len(after.Events) != len(before.Events) {
		t.Fatalf("a refused update changed the task: %+v → %+v", before, after)
	}
	page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{Types: []string{"sub"}})
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("children after the refused update: %+v, %v; want the one child", page.Tasks, err)
	}
}
