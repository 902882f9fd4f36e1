package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestLeaseContract: the lease a claimer asks for means what it says
// (issue 37): once it ran out unrenewed, every call under it is lease_lost
// and changes nothing, and the next claim takes the task back at once (the
// attempt counted, as the reaper counts it); a lease still running is
// nobody else's; a claim that names no lease gets the default lease
// (CKS_STALE_WINDOW). All by the injected clock, on both backends.
func TestLeaseContract(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"LateCallsRefused":            testLateCallsRefused,
		"LateTouchRefused":            testLateTouchRefused,
		"ExpiredTakenByNextClaim":     testExpiredTakenByNextClaim,
		"ExpiredAtMaxAttempts":        testExpiredAtMaxAttempts,
		"UnexpiredNotTaken":           testUnexpiredNotTaken,
		"ExpiredInClaimOrder":         testExpiredInClaimOrder,
		"ExpiredReviewTakenByClaim":   testExpiredReviewTakenByClaim,
		"DefaultLeaseIsTheWindow":     testDefaultLeaseIsTheWindow,
		"RenewedLeaseRunsFromRenewal": testRenewedLeaseRunsFromRenewal,
	})
}

// shortLease is the lease these tests claim with: the ledger's least.
const shortLease = ledger.MinLease

// claimShort enqueues a task of type typ and claims it for worker with
// shortLease, RUNNING when running.
func claimShort(t *testing.T, s *backend.Backend, typ, worker string, running bool) cks.ClaimedTask {
	t.Helper()
	backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ, Title: typ})
	ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: worker, Types: []string{typ}, N: 1, Lease: shortLease, Running: running})
	if err != nil || len(ts) != 1 {
		t.Fatalf("claim of %s: %+v, %v", typ, ts, err)
	}
	if got := ts[0].LeaseExpiresAt.Sub(ts[0].LeaseRenewedAt); got != shortLease {
		t.Fatalf("claim of %s: a lease of %s, want %s", typ, got, shortLease)
	}
	return ts[0]
}

// evidenceOf counts the evidence and decisions recorded for task id.
func evidenceOf(t *testing.T, s *backend.Backend, id int64) string {
	t.Helper()
	task := backendtest.MustGet(t, s, id)
	n, d := 0, 0
	for _, v := range append(task.History, *task.Current) {
		n += len(v.Evidence)
		d += len(v.Decisions)
	}
	return fmt.Sprintf("%d evidence, %d decisions", n, d)
}

// testLateCallsRefused: every call under a lease that ran out — the very
// instant it ran out, and later — is lease_lost, says the lease expired,
// and changes nothing, though nothing has taken the task back yet.
func testLateCallsRefused(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	calls := []struct {
		name string
		call func(c cks.ClaimedTask) error
	}{
		{"Complete", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "late")
			return err
		}},
		{"Complete for review", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, true, "late")
			return err
		}},
		{"Fail", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "late")
			return err
		}},
		{"MarkRunning", func(c cks.ClaimedTask) error { _, err := s.Tasks.MarkRunning(ctx(t), c.ID, c.LeaseToken); return err }},
		{"AddEvidence", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "log", "late")
			return err
		}},
		{"RecordDecision", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.RecordDecision(ctx(t), c.ID, c.LeaseToken, "plan", "late", 1)
			return err
		}},
		{"RequestInput", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.RequestInput(ctx(t), c.ID, c.LeaseToken, "late?")
			return err
		}},
		{"GiveBack", func(c cks.ClaimedTask) error {
			_, err := s.Tasks.GiveBack(ctx(t), c.ID, c.LeaseToken, "late")
			return err
		}},
	}
	for i, call := range calls {
		for _, late := range []time.Duration{0, time.Minute} {
			c := claimShort(t, s, fmt.Sprintf("late-%d-%s", i, late), "w", i%2 == 0)
			clk.Advance(shortLease + late) // exactly at the end of the lease, then a minute past it
			before, ev := snapshot(t, s, c.ID), evidenceOf(t, s, c.ID)
			err := call.call(c)
			if !errors.Is(err, cks.ErrLeaseLost) || !strings.Contains(fmt.Sprint(err), "expired") {
				t.Errorf("%s %s after the lease ran out: %v; want ErrLeaseLost saying the lease expired", call.name, late, err)
			}
			unchanged(t, s, call.name+" under an expired lease", before)
			if got := evidenceOf(t, s, c.ID); got != ev {
				t.Errorf("%s under an expired lease recorded something: %s, was %s", call.name, got, ev)
			}
			if mustHeld(t, s, c.ID, c.LeaseToken) {
				t.Errorf("LeaseHeld of an expired lease = true")
			}
		}
	}
}

// testLateTouchRefused: a heartbeat after the lease ran out does not
// revive it: held false, lease_lost, the lease's times unchanged, and the
// HTTP form answers held false without an abort to confirm.
func testLateTouchRefused(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	c := claimShort(t, s, "touch", "w", true)
	clk.Advance(shortLease / 2)
	if res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken); !res.Held || err != nil {
		t.Fatalf("Heartbeat within the lease = %v, %v; want held", res.Held, err)
	}
	clk.Advance(shortLease) // exactly the renewed lease
	before := snapshot(t, s, c.ID)
	res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken)
	if res.Held || err != nil {
		t.Fatalf("Heartbeat after the lease ran out = %+v, %v; want not held", res, err)
	}
	clk.Advance(time.Hour)
	if res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken); err != nil || res.Held || res.AbortRequested {
		t.Fatalf("Heartbeat an hour after the lease ran out = %+v, %v; want not held, no abort", res, err)
	}
	unchanged(t, s, "late touches", before)
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "revived?"); !errors.Is(err, cks.ErrLeaseLost) {
		t.Fatalf("Complete after the late touches: %v; want ErrLeaseLost (a late touch revives nothing)", err)
	}
}

// testExpiredTakenByNextClaim: the first claim after a lease ran out takes
// the task at once — no reaper pass, no grace — with the dead claim's
// attempt counted and recorded as the reaper records it; the dead claim's
// token is refused from then on.
func testExpiredTakenByNextClaim(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	dead := claimShort(t, s, "job", "dead", true)
	clk.Advance(shortLease)
	again, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "next", Types: []string{"job"}, N: 1, Lease: time.Minute})
	if err != nil || len(again) != 1 || again[0].ID != dead.ID {
		t.Fatalf("the next claim after the lease ran out = %+v, %v; want task %d at once", again, err, dead.ID)
	}
	if again[0].Attempts != 2 || again[0].ClaimedBy != "next" || again[0].State != cks.TaskClaimed {
		t.Fatalf("taken back: %+v; want attempt 2, CLAIMED by next", again[0].Task)
	}
	task := backendtest.MustGet(t, s, dead.ID)
	var back *cks.TaskEvent
	for i, e := range task.Events {
		if e.From == cks.TaskRunning && e.To == cks.TaskOpen {
			back = &task.Events[i]
		}
	}
	if back == nil || back.Actor != ledger.ActorReaper || back.Reason != ledger.ReasonLeaseExpired || back.Attempt != 1 ||
		!back.At.Equal(clk.Now()) {
		t.Fatalf("the dead attempt's end: %+v in %+v; want RUNNING → OPEN by %s, %q, attempt 1, now", back, task.Events,
			ledger.ActorReaper, ledger.ReasonLeaseExpired)
	}
	if _, err := s.Tasks.Complete(ctx(t), dead.ID, dead.LeaseToken, false, "zombie"); !errors.Is(err, cks.ErrLeaseLost) {
		t.Fatalf("the dead claim's Complete: %v; want ErrLeaseLost", err)
	}
	if done, err := s.Tasks.Complete(ctx(t), again[0].ID, again[0].LeaseToken, false, "ok"); err != nil || done.Result != "ok" {
		t.Fatalf("the new claim's Complete = %+v, %v", done, err)
	}
	// Nothing left for the reaper.
	if n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now().Add(time.Hour)); n != 0 || err != nil {
		t.Fatalf("ReclaimExpired after the claim took it back = %d, %v; want 0", n, err)
	}
}

// testExpiredAtMaxAttempts: a lease that ran out on the last attempt is a
// dead letter when the next claim meets it — FAILED "max attempts", its
// dependants BLOCKED — and that claim takes the next task instead.
func testExpiredAtMaxAttempts(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	last := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "once", MaxAttempts: 1, Priority: 5})
	dependant := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "after", DependsOn: []int64{last.ID}})
	other := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "once"})
	c, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "dead", Types: []string{"once"}, N: 1, Lease: shortLease})
	if err != nil || len(c) != 1 || c[0].ID != last.ID {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	clk.Advance(shortLease)
	next, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "next", Types: []string{"once"}, N: 5, Lease: time.Minute})
	if err != nil || len(next) != 1 || next[0].ID != other.ID {
		t.Fatalf("the next claim = %+v, %v; want only task %d", next, err, other.ID)
	}
	got := backendtest.WantState(t, s, last.ID, cks.TaskFailed)
	if e := lastEvent(t, got); e.Reason != "max attempts" || got.Attempts != 1 {
		t.Fatalf("dead letter: %+v, event %+v", got, e)
	}
	backendtest.WantState(t, s, dependant.ID, cks.TaskBlocked)
}

// testUnexpiredNotTaken: a lease that has a moment left is its claimer's:
// no claim takes the task, and the claimer completes it.
func testUnexpiredNotTaken(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	c := claimShort(t, s, "job", "alive", false)
	clk.Advance(shortLease - time.Millisecond)
	if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "other", Types: []string{"job"}, N: 5, Lease: time.Minute}); err != nil || len(ts) != 0 {
		t.Fatalf("a claim while the lease runs = %+v, %v; want nothing", ts, err)
	}
	if n, err := s.Tasks.ReclaimExpired(ctx(t), clk.Now()); n != 0 || err != nil {
		t.Fatalf("ReclaimExpired while the lease runs = %d, %v; want 0", n, err)
	}
	if !mustHeld(t, s, c.ID, c.LeaseToken) {
		t.Fatal("LeaseHeld while the lease runs = false")
	}
	if done, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "in time"); err != nil || done.State != cks.TaskCompleted {
		t.Fatalf("Complete a millisecond before the lease ends = %+v, %v", done, err)
	}
}

// testExpiredInClaimOrder: a task taken back from an expired lease is
// claimed in claim order with the OPEN ones — its priority first — not
// after them.
func testExpiredInClaimOrder(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	urgent := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "q", Priority: 9})
	c, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "dead", Types: []string{"q"}, N: 1, Lease: shortLease})
	if err != nil || len(c) != 1 || c[0].ID != urgent.ID {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	for range 3 {
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "q"})
	}
	clk.Advance(shortLease)
	ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "next", Types: []string{"q"}, N: 1, Lease: time.Minute})
	if err != nil || len(ts) != 1 || ts[0].ID != urgent.ID {
		t.Fatalf("the next claim = %+v, %v; want the urgent task %d taken back before the OPEN ones", ts, err, urgent.ID)
	}
}

// testExpiredReviewTakenByClaim: a review lease that ran out is refused to
// its reviewer and taken by the next review claim at once.
func testExpiredReviewTakenByClaim(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	c := claimShort(t, s, "draft", "w", true)
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, true, "draft"); err != nil {
		t.Fatal(err)
	}
	r, err := s.Tasks.ClaimReview(ctx(t), c.ID, "gone", shortLease)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(shortLease)
	if _, err := s.Tasks.Approve(ctx(t), c.ID, r.LeaseToken, "late"); !errors.Is(err, cks.ErrLeaseLost) {
		t.Fatalf("Approve under an expired review lease: %v; want ErrLeaseLost", err)
	}
	r2, err := s.Tasks.ClaimReview(ctx(t), c.ID, "next", time.Minute)
	if err != nil || r2.State != cks.TaskReviewing || r2.ClaimedBy != "next" {
		t.Fatalf("the next review claim = %+v, %v; want the task at once", r2.Task, err)
	}
	if _, err := s.Tasks.Approve(ctx(t), c.ID, r2.LeaseToken, "ok"); err != nil {
		t.Fatal(err)
	}
	got := backendtest.WantState(t, s, c.ID, cks.TaskCompleted)
	found := false
	for _, e := range got.Events {
		found = found || (e.From == cks.TaskReviewing && e.To == cks.TaskNeedsReview && e.Actor == ledger.ActorReaper)
	}
	if !found {
		t.Fatalf("no record of the expired review taken back: %+v", got.Events)
	}
}

// testDefaultLeaseIsTheWindow: a claim and a review claim that name no
// lease get the service's default lease — 5 minutes, or the configured
// CKS_STALE_WINDOW — and nothing else: a claim that names one gets it,
// shorter or longer.
func testDefaultLeaseIsTheWindow(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	leaseOf := func(c cks.ClaimedTask) time.Duration { return c.LeaseExpiresAt.Sub(c.LeaseRenewedAt) }
	claim := func(typ string, d time.Duration) cks.ClaimedTask {
		t.Helper()
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ})
		ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: d})
		if err != nil || len(ts) != 1 {
			t.Fatalf("claim %s: %+v, %v", typ, ts, err)
		}
		return ts[0]
	}
	if got := leaseOf(claim("a", 0)); got != ledger.DefaultLease {
		t.Fatalf("a claim naming no lease, unconfigured: %s; want %s", got, ledger.DefaultLease)
	}
	set, err := config.ParseLedger(func(k string) string { return map[string]string{config.EnvStaleWindow: "42"}[k] })
	if err != nil || s.Tasks.Configure(set) != nil {
		t.Fatalf("CKS_STALE_WINDOW=42: %+v, %v", set, err)
	}
	c := claim("b", 0)
	if got := leaseOf(c); got != 42*time.Second {
		t.Fatalf("a claim naming no lease, CKS_STALE_WINDOW=42: %s; want 42s", got)
	}
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, true, "draft"); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Tasks.ClaimReview(ctx(t), c.ID, "rev", 0); err != nil || leaseOf(r) != 42*time.Second {
		t.Fatalf("a review claim naming no lease: %s, %v; want 42s", leaseOf(r), err)
	}
	for _, d := range []time.Duration{shortLease, time.Hour} {
		if got := leaseOf(claim(fmt.Sprint("named", d), d)); got != d {
			t.Fatalf("a claim naming %s got %s", d, got)
		}
	}
	for _, bad := range []map[string]string{{config.EnvStaleWindow: "0.5"}, {config.EnvStaleWindow: "25h"},
		{config.EnvStaleWindow: "later"}, {config.EnvRetryBackoff: "-1"}, {config.EnvRetryBackoff: "2h"}} {
		if _, err := config.ParseLedger(func(k string) string { return bad[k] }); !errors.Is(err, cks.ErrInvalid) {
			t.Errorf("ParseLedger(%v): %v; want ErrInvalid", bad, err)
		}
	}
	if err := s.Tasks.Configure(ledger.Settings{DefaultLease: time.Millisecond}); !errors.Is(err, cks.ErrInvalid) {
		t.Errorf("Configure with a 1ms default lease: %v; want ErrInvalid", err)
	}
}

// testRenewedLeaseRunsFromRenewal: a touch renews the lease for its own
// length from the touch, no more: the task is taken back that long after
// the last touch.
func testRenewedLeaseRunsFromRenewal(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	c := claimShort(t, s, "job", "w", true)
	for range 5 {
		clk.Advance(shortLease / 3)
		if res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken); !res.Held || err != nil {
			t.Fatalf("Heartbeat every third of the lease = %v, %v", res.Held, err)
		}
	}
	clk.Advance(shortLease - time.Millisecond)
	if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "other", Types: []string{"job"}, N: 1, Lease: time.Minute}); err != nil || len(ts) != 0 {
		t.Fatalf("claim before the renewed lease ends = %+v, %v", ts, err)
	}
	clk.Advance(time.Millisecond)
	if ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "other", Types: []string{"job"}, N: 1, Lease: time.Minute}); err != nil || len(ts) != 1 {
		t.Fatalf("claim once the renewed lease ended = %+v, %v; want the task", ts, err)
	}
}

// probeCounter is a driver that counts the claims' probes for expired
// leases (TaskLeaseExpired outside a transaction). It hides SQLite's
// serial writes, so the ledger probes on either driver.
type probeCounter struct {
	driver.Driver
	n atomic.Int64
}

func (p *probeCounter) Executor() driver.Executor { return probeExec{p.Driver.Executor(), &p.n} }

type probeExec struct {
	driver.Executor
	n *atomic.Int64
}

func (e probeExec) TaskLeaseExpired(ctx context.Context, p driver.TaskLeaseExpiredParams) ([]driver.TaskRow, error) {
	e.n.Add(1)
	return e.Executor.TaskLeaseExpired(ctx, p)
}

// TestClaimProbesLeasesOncePerMinLease (both drivers): the claim's probe for
// expired leases spares the claims of the next MinLease when no lease
// expires before then, and a lease that does is still taken back by the
// first claim after it expired.
func TestClaimProbesLeasesOncePerMinLease(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		probes := &probeCounter{Driver: open(t, driver.WithClock(c))}
		s := backend.New(probes, driver.WithClock(c))
		t.Cleanup(func() { s.Close() })
		for i := range 12 {
			if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "t", Title: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(lease time.Duration) cks.ClaimedTask {
			t.Helper()
			got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", N: 1, Lease: lease})
			if err != nil || len(got) != 1 {
				t.Fatalf("claim: %v, %v", got, err)
			}
			return got[0]
		}
		for range 10 {
			claim(time.Hour)
		}
		if n := probes.n.Load(); n != 1 {
			t.Fatalf("10 claims in one instant probed %d times, want 1", n)
		}
		c.Advance(ledger.MinLease)
		short := claim(ledger.MinLease) // probes: nothing expires within MinLease
		if n := probes.n.Load(); n != 2 {
			t.Fatalf("a claim MinLease later probed %d times in all, want 2", n)
		}
		c.Advance(ledger.MinLease) // the short lease expired unrenewed
		if again := claim(time.Hour); again.ID != short.ID || again.Attempts != 2 {
			t.Fatalf("the claim after the short lease expired took task %d (attempt %d), want %d back (attempt 2)",
				again.ID, again.Attempts, short.ID)
		}
	})
}
