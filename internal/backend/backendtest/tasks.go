package backendtest

import (
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// ClaimType claims exactly one task of type typ for worker or fails the test.
func ClaimType(t testing.TB, s *backend.Backend, worker, typ string) cks.ClaimedTask {
	t.Helper()
	ts, err := s.Tasks.Claim(Ctx(t), ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: Lease})
	if err != nil {
		t.Fatalf("Claim(%s, %s): %v", worker, typ, err)
	}
	if len(ts) != 1 {
		t.Fatalf("Claim(%s, %s) got %d tasks, want 1", worker, typ, len(ts))
	}
	return ts[0]
}

// ClaimAgent is ClaimType of a claim that leases the task with an agent
// credential, as claim_tasks does, and returns the task with that
// credential's token (auth.TaskToken).
func ClaimAgent(t testing.TB, s *backend.Backend, worker, typ string) (cks.ClaimedTask, string) {
	t.Helper()
	var tok string
	ts, err := s.Tasks.Claim(Ctx(t), ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: Lease,
		AgentToken: func(id int64, secret string) { tok = auth.TaskToken(id, secret) }})
	if err != nil || len(ts) != 1 || tok == "" {
		t.Fatalf("Claim(%s, %s) with an agent token: %d tasks, token %q, %v; want 1 and a token", worker, typ, len(ts), tok, err)
	}
	return ts[0], tok
}

// Into makes a task of type typ in state st through real operations and
// returns it with the lease token of its executor or reviewer ("" when none).
// Dependencies it needs have type typ+"-dep", so a claim of typ never takes them.
func Into(t testing.TB, s *backend.Backend, st cks.TaskState, typ string) (cks.Task, string) {
	t.Helper()
	enq := func(deps ...int64) cks.Task {
		return MustEnqueue(t, s, cks.NewTask{Type: typ, Title: string(st), DependsOn: deps})
	}
	claim := func() cks.ClaimedTask {
		enq()
		return ClaimType(t, s, "w-"+typ, typ)
	}
	var (
		id  int64
		tok string
		err error
	)
	switch st {
	case cks.TaskOpen:
		id = enq().ID
	case cks.TaskWaiting:
		dep := MustEnqueue(t, s, cks.NewTask{Type: typ + "-dep", Title: "open dependency"})
		id = enq(dep.ID).ID
	case cks.TaskBlocked:
		dep := MustEnqueue(t, s, cks.NewTask{Type: typ + "-dep", Title: "cancelled dependency"})
		if _, err := s.Tasks.Cancel(Ctx(t), dep.ID, "op", "dropped"); err != nil {
			t.Fatal(err)
		}
		id = enq(dep.ID).ID
	case cks.TaskClaimed:
		c := claim()
		id, tok = c.ID, c.LeaseToken
	case cks.TaskRunning:
		c := claim()
		id, tok = c.ID, c.LeaseToken
		_, err = s.Tasks.MarkRunning(Ctx(t), id, tok)
	case cks.TaskNeedsInput:
		c := claim()
		id = c.ID
		_, err = s.Tasks.RequestInput(Ctx(t), id, c.LeaseToken, "which one?")
	case cks.TaskNeedsReview:
		c := claim()
		id = c.ID
		_, err = s.Tasks.Complete(Ctx(t), id, c.LeaseToken, true, "draft")
	case cks.TaskReviewing:
		c := claim()
		id = c.ID
		if _, err = s.Tasks.Complete(Ctx(t), id, c.LeaseToken, true, "draft"); err == nil {
			var r cks.ClaimedTask
			r, err = s.Tasks.ClaimReview(Ctx(t), id, "rev-"+typ, Lease)
			tok = r.LeaseToken
		}
	case cks.TaskCompleted:
		c := claim()
		id = c.ID
		_, err = s.Tasks.Complete(Ctx(t), id, c.LeaseToken, false, "done")
	case cks.TaskFailed:
		c := claim()
		id = c.ID
		_, err = s.Tasks.Fail(Ctx(t), id, c.LeaseToken, false, "broken")
	case cks.TaskCancelled:
		id = enq().ID
		_, err = s.Tasks.Cancel(Ctx(t), id, "op", "dropped")
	case cks.TaskStopped:
		id = enq().ID
		_, err = s.Tasks.StopTask(Ctx(t), ledger.StopParams{ID: id, Actor: "op", Reason: "setup"})
	default:
		t.Fatalf("into(%s): no recipe", st)
	}
	if err != nil {
		t.Fatalf("setup of a %s task: %v", st, err)
	}
	return WantState(t, s, id, st), tok
}

// Lease is the lease duration the tests claim with.
const Lease = time.Minute

// FakeStore opens a handle on open's database whose clock is a fake at T0.
func FakeStore(t testing.TB, open Opener) (*backend.Backend, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(T0)
	return open(t, driver.WithClock(clk)), clk
}

// MustEnqueue enqueues n (type "build" when empty) or fails the test.
func MustEnqueue(t testing.TB, s *backend.Backend, n cks.NewTask) cks.Task {
	t.Helper()
	if n.Type == "" {
		n.Type = "build"
	}
	task, _, err := s.Tasks.Enqueue(Ctx(t), n)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", n, err)
	}
	return task
}

// MustGet returns task id or fails the test.
func MustGet(t testing.TB, s *backend.Backend, id int64) cks.Task {
	t.Helper()
	task, err := s.Tasks.GetTask(Ctx(t), id)
	if err != nil {
		t.Fatalf("GetTask(%d): %v", id, err)
	}
	return task
}

// MustClaimOne claims exactly one task of any type for worker or fails the test.
func MustClaimOne(t testing.TB, s *backend.Backend, worker string) cks.ClaimedTask {
	t.Helper()
	ts, err := s.Tasks.Claim(Ctx(t), ledger.ClaimParams{Worker: worker, N: 1, Lease: Lease})
	if err != nil {
		t.Fatalf("Claim(%s): %v", worker, err)
	}
	if len(ts) != 1 {
		t.Fatalf("Claim(%s) got %d tasks, want 1", worker, len(ts))
	}
	return ts[0]
}

// WantState fails the test unless task id is in state want.
func WantState(t testing.TB, s *backend.Backend, id int64, want cks.TaskState) cks.Task {
	t.Helper()
	task := MustGet(t, s, id)
	if task.State != want {
		t.Fatalf("task %d is %s, want %s (events %+v)", id, task.State, want, task.Events)
	}
	return task
}

// WantErr fails the test unless errors.Is(err, target).
func WantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}
