package hub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
)

func enqueue(t testing.TB, st *backend.Backend, n cks.NewTask) cks.Task {
	t.Helper()
	task, _, err := st.Tasks.Enqueue(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// finishBehind writes task id's state as to straight through the driver,
// behind the ledger's back — no event, no release of its dependants — as a
// crash between two writes (or a repair) could leave it.
func finishBehind(t testing.TB, st *backend.Backend, id int64, to cks.TaskState) {
	t.Helper()
	ex := st.Driver().Executor()
	rows, err := ex.TaskGetMany(context.Background(), driver.TaskGetManyParams{IDs: []int64{id}})
	if err != nil || len(rows) != 1 {
		t.Fatalf("task %d: %v, %d rows", id, err, len(rows))
	}
	rows[0].State = string(to)
	if n, err := ex.TaskUpdateMany(context.Background(), rows); err != nil || n != 1 {
		t.Fatalf("task %d → %s: %v (%d rows)", id, to, err, n)
	}
}

// stopTask stops task id as an operator does.
func stopTask(t testing.TB, st *backend.Backend, id int64) {
	t.Helper()
	if _, err := st.Tasks.StopTask(context.Background(), ledger.StopParams{ID: id, Actor: "test", Reason: "setup"}); err != nil {
		t.Fatalf("stop task %d: %v", id, err)
	}
}

func stateOf(t testing.TB, st *backend.Backend, id int64) cks.TaskState {
	t.Helper()
	task, err := st.Tasks.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task.State
}

func sweep(t testing.TB, s sweeper.Sweeper) int {
	t.Helper()
	n, err := s.SweepOnce(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", s.ID(), err)
	}
	return n
}

func TestLeaseReaper(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		st := open(t, driver.WithClock(c))
		retry := enqueue(t, st, cks.NewTask{Type: "t", MaxAttempts: 2})
		dead := enqueue(t, st, cks.NewTask{Type: "u", MaxAttempts: 1})
		held := enqueue(t, st, cks.NewTask{Type: "v"})
		leases := map[string]string{}
		for _, typ := range []string{"t", "u", "v"} {
			ts, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Minute})
			if err != nil || len(ts) != 1 {
				t.Fatalf("claim %s: %v %v", typ, ts, err)
			}
			leases[typ] = ts[0].LeaseToken
		}
		reaper := sweeper.LeaseReaper{Tasks: st.Tasks, Claims: st.Objects, Clock: c, StaleWindow: 5 * time.Minute}
		c.Advance(time.Minute - time.Millisecond) // every lease runs still
		if n := sweep(t, reaper); n != 0 {
			t.Fatalf("reaped %d leases that still run", n)
		}
		// Keep one lease alive, let the others run out: they are reaped
		// at once (the stale window is no grace under a task's lease).
		if res, err := st.Tasks.Heartbeat(ctx, held.ID, leases["v"]); !res.Held || err != nil {
			t.Fatalf("touch: %v %v", res.Held, err)
		}
		c.Advance(time.Millisecond)
		if n := sweep(t, reaper); n != 2 {
			t.Fatalf("reaped %d, want 2", n)
		}
		if s := stateOf(t, st, retry.ID); s != cks.TaskOpen {
			t.Fatalf("retryable task is %s, want OPEN", s)
		}
		if s := stateOf(t, st, dead.ID); s != cks.TaskFailed {
			t.Fatalf("exhausted task is %s, want FAILED (dead letter)", s)
		}
		if s := stateOf(t, st, held.ID); s != cks.TaskClaimed {
			t.Fatalf("renewed task is %s, want CLAIMED", s)
		}
	})
}

// TestLeaseReaperSettlesAborts: an abort nobody waits for any more is
// declared unconfirmed by the reaper once its deadline has passed, and not
// before.
func TestLeaseReaperSettlesAborts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		st := open(t, driver.WithClock(c))
		enqueue(t, st, cks.NewTask{Type: "t"})
		claimed, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "agent-gone", Types: []string{"t"}, N: 1, Lease: time.Hour})
		if err != nil || len(claimed) != 1 {
			t.Fatal(claimed, err)
		}
		stopped, err := st.Tasks.StopTask(ctx, ledger.StopParams{ID: claimed[0].ID, Actor: "operator", Reason: "halt", Deadline: 30 * time.Second})
		ab := stopped.Abort
		if err != nil || ab == nil {
			t.Fatal(ab, err)
		}
		reaper := sweeper.LeaseReaper{Tasks: st.Tasks, Claims: st.Objects, Clock: c, StaleWindow: 5 * time.Minute}
		c.Advance(29 * time.Second)
		if n := sweep(t, reaper); n != 0 {
			t.Fatalf("settled %d before the deadline", n)
		}
		c.Advance(time.Second)
		if n := sweep(t, reaper); n != 1 {
			t.Fatalf("settled %d at the deadline, want 1", n)
		}
		task, err := st.Tasks.GetTask(ctx, claimed[0].ID)
		if err != nil || task.LastAbort == nil || task.LastAbort.ID != ab.ID || task.LastAbort.Outcome != cks.AbortUnconfirmed ||
			task.LastAbort.Executor != "agent-gone" {
			t.Fatalf("abort %+v, %v", task.LastAbort, err)
		}
	})
}

// TestLeaseReaperReleasesObjectClaims: a pipeline object claimed by a step
// worker that neither finished nor renewed its claim within the stale window
// is released (claimable again), counted in the pass's result; a renewed
// claim is kept.
func TestLeaseReaperReleasesObjectClaims(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		st := open(t, driver.WithClock(c))
		for _, q := range []string{"dead worker", "live worker"} {
			if _, err := st.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "question", Content: []byte(`{"question":"` + q + `"}`),
				Status: "awaiting_research", CreatedBy: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		claimed, err := st.Objects.ClaimObjects(ctx, "awaiting_research", "pipeline/researcher/0", 2)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		dead, live := claimed[0], claimed[1]
		reaper := sweeper.LeaseReaper{Tasks: st.Tasks, Claims: st.Objects, Clock: c, StaleWindow: 5 * time.Minute}
		c.Advance(4 * time.Minute)
		if n := sweep(t, reaper); n != 0 {
			t.Fatalf("released %d claims inside the stale window", n)
		}
		if err := st.Objects.TouchClaim(ctx, live.ID, live.ClaimToken); err != nil {
			t.Fatal(err)
		}
		c.Advance(2 * time.Minute) // dead: 6 min old; live: renewed 2 min ago
		if n := sweep(t, reaper); n != 1 {
			t.Fatalf("released %d claims, want 1", n)
		}
		if o, err := st.Objects.GetObject(ctx, dead.ID); err != nil || o.ClaimedBy != "" {
			t.Fatalf("stale claim: claimed_by %q, %v; want released", o.ClaimedBy, err)
		}
		if o, err := st.Objects.GetObject(ctx, live.ID); err != nil || o.ClaimedBy == "" {
			t.Fatalf("renewed claim: claimed_by %q, %v; want kept", o.ClaimedBy, err)
		}
		if err := st.Objects.ReleaseClaim(ctx, dead.ID, dead.ClaimToken); !errors.Is(err, cks.ErrLeaseLost) {
			t.Fatalf("the dead worker's token after the release: %v, want ErrLeaseLost", err)
		}
		again, err := st.Objects.ClaimObjects(ctx, "awaiting_research", "pipeline/researcher/1", 2)
		if err != nil || len(again) != 1 || again[0].ID != dead.ID {
			t.Fatalf("reclaim: %v %v; want object %d", again, err, dead.ID)
		}
		if n := sweep(t, reaper); n != 0 {
			t.Fatalf("second pass released %d", n)
		}
	})
}

func TestDependencyRelease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		st := open(t)
		dep := enqueue(t, st, cks.NewTask{Type: "t"})
		bad := enqueue(t, st, cks.NewTask{Type: "t"})
		ok := enqueue(t, st, cks.NewTask{Type: "t", DependsOn: []int64{dep.ID}})
		blocked := enqueue(t, st, cks.NewTask{Type: "t", DependsOn: []int64{dep.ID, bad.ID}})
		// Finish the dependencies behind the ledger's back, as a crash between
		// two writes (or a repair) could leave them.
		finishBehind(t, st, dep.ID, cks.TaskCompleted)
		finishBehind(t, st, bad.ID, cks.TaskCancelled)
		if stateOf(t, st, ok.ID) != cks.TaskWaiting {
			t.Fatal("setup released the dependant already")
		}
		if n := sweep(t, sweeper.DependencyRelease{Tasks: st.Tasks}); n != 2 {
			t.Fatalf("moved %d, want 2", n)
		}
		if s := stateOf(t, st, ok.ID); s != cks.TaskOpen {
			t.Fatalf("dependant of a completed task is %s, want OPEN", s)
		}
		if s := stateOf(t, st, blocked.ID); s != cks.TaskBlocked {
			t.Fatalf("dependant of a cancelled task is %s, want BLOCKED", s)
		}
		if n := sweep(t, sweeper.DependencyRelease{Tasks: st.Tasks}); n != 0 {
			t.Fatalf("second pass moved %d, want 0", n)
		}
	})
}

func TestStaleStopReport(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		c := clock.NewFake(backendtest.T0)
		st := open(t, driver.WithClock(c))
		old := enqueue(t, st, cks.NewTask{Type: "t"})
		stopTask(t, st, old.ID)
		c.Advance(2 * time.Hour)
		recent := enqueue(t, st, cks.NewTask{Type: "t"})
		stopTask(t, st, recent.ID)
		enqueue(t, st, cks.NewTask{Type: "t"}) // OPEN: never reported

		report := sweeper.StaleStopReport{Tasks: st.Tasks, Clock: c, Threshold: 24 * time.Hour}
		c.Set(backendtest.T0.Add(24*time.Hour - time.Second))
		if n := sweep(t, report); n != 0 {
			t.Fatalf("before the threshold: %d reported", n)
		}
		c.Set(backendtest.T0.Add(24 * time.Hour))
		if n := sweep(t, report); n != 1 {
			t.Fatalf("at the threshold: %d reported, want 1", n)
		}
		c.Set(backendtest.T0.Add(27 * time.Hour))
		if n := sweep(t, report); n != 2 {
			t.Fatalf("past both: %d reported, want 2", n)
		}
	})
}

// TestLeaseReaperRevokesEndedClaimTokens: the principal row an HTTP claim
// of an earlier version wrote for its agent credential (claims now write
// none: auth.TaskToken) lasts as long as its lease; an operator's task
// token stays.
func TestLeaseReaperRevokesEndedClaimTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		st := open(t, driver.WithClock(c))
		claim := func(typ, worker string) cks.ClaimedTask {
			t.Helper()
			ts, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: time.Hour})
			if err != nil || len(ts) != 1 {
				t.Fatalf("claim %s: %v %v", typ, ts, err)
			}
			tok, err := auth.NewToken()
			if err != nil {
				t.Fatal(err)
			}
			c := ts[0]
			p := cks.Principal{ID: fmt.Sprintf("legacy-%d-%s", c.ID, worker), Name: fmt.Sprintf("task/%d %s", c.ID, worker), CreatedAt: backendtest.T0,
				Lease: &cks.LeaseBinding{TaskID: c.ID, LeaseTokenHash: driver.HashLeaseToken(c.LeaseToken)}}
			if err := st.Principals.CreatePrincipal(ctx, p, auth.HashToken(tok), auth.TaskTokenGrants(c.ID)); err != nil {
				t.Fatal(err)
			}
			return c
		}
		enqueue(t, st, cks.NewTask{Type: "done"})
		enqueue(t, st, cks.NewTask{Type: "reopened"})
		enqueue(t, st, cks.NewTask{Type: "moved"})
		done := claim("done", "w1")
		claim("reopened", "w1")
		claim("moved", "w1")
		if _, err := st.Tasks.Complete(ctx, done.ID, done.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		// Both other leases go stale; "moved" is claimed again by another
		// worker, "reopened" stays OPEN.
		c.Advance(2 * time.Hour)
		if n, err := st.Tasks.ReclaimExpired(ctx, c.Now()); err != nil || n != 2 {
			t.Fatalf("reclaim: %d, %v", n, err)
		}
		moved := claim("moved", "w2")
		enqueue(t, st, cks.NewTask{Type: "running"})
		running := claim("running", "w1")
		if _, _, err := auth.CreateToken(ctx, st.Principals, c, "ops for task "+fmt.Sprint(done.ID), auth.TaskTokenGrants(done.ID)); err != nil {
			t.Fatal(err)
		}
		reaper := sweeper.LeaseReaper{Tasks: st.Tasks, Claims: st.Objects, Clock: c, StaleWindow: time.Hour,
			ClaimTokens: func(ctx context.Context) (int, error) {
				return st.Principals.DeleteEndedCredentials(ctx, c.Now())
			}}
		if n := sweep(t, reaper); n != 3 {
			t.Fatalf("revoked %d, want 3 (w1's on the completed, the reopened and the moved task)", n)
		}
		ps, err := st.Principals.ListPrincipals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		want := []string{fmt.Sprintf("task/%d w1", running.ID), fmt.Sprintf("task/%d w2", moved.ID), "ops for task " + fmt.Sprint(done.ID)}
		for _, w := range want {
			if !slices.Contains(names, w) {
				t.Errorf("principal %q was revoked; left %v", w, names)
			}
		}
		if len(names) != len(want) {
			t.Fatalf("principals left %v, want %v", names, want)
		}
	})
}
