package ledger_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// observedWrites is a ledger.Observer that keeps what it is told.
type observedWrites struct {
	mu     sync.Mutex
	claims []ledger.Claim
	ends   []ledger.AttemptEnd
}

func (r *observedWrites) Claimed(c []ledger.Claim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims = append(r.claims, c...)
}

func (r *observedWrites) AttemptsEnded(e []ledger.AttemptEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, e...)
}

func (r *observedWrites) UsageReported(cks.Usage) {}

// take returns what r was told since the last take, but for the
// attempts' identities and reasons (which full returns), and forgets it.
func (r *observedWrites) take() ([]ledger.Claim, []ledger.AttemptEnd) {
	c, e := r.full()
	for i := range c {
		c[i].Attempt = ledger.Attempt{}
	}
	for i := range e {
		e[i].Attempt, e[i].Reason = ledger.Attempt{}, ""
	}
	return c, e
}

// full returns what r was told since the last take, and forgets it.
func (r *observedWrites) full() ([]ledger.Claim, []ledger.AttemptEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, e := r.claims, r.ends
	r.claims, r.ends = nil, nil
	return c, e
}

// TestObserver (both backends): the service's Observer is told, after the
// commit, of each task a claim leased (the attempt, its type, its wait
// since its enqueue, whether it is its first claim) and of each attempt a
// write ended (the same attempt, with its outcome, its reason and its
// length by the service's clock): a
// completion, a retryable failure (retried), a last failure (failed), a
// give-back, a cancel, a lease that ran out (reclaimed), a stop — and of
// nothing else (an enqueue, a start of the attempt, a failed write).
func TestObserver(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		obs := &observedWrites{}
		s.Tasks.ObserveWith(obs)
		set := s.Tasks.Settings()
		set.RetryBackoff = 0 // a retry is due at once
		if err := s.Tasks.Configure(set); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		enqueue := func(typ string, maxAttempts int) int64 {
			t.Helper()
			task, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, MaxAttempts: maxAttempts})
			if err != nil {
				t.Fatal(err)
			}
			return task.ID
		}
		claim := func(typ string) cks.ClaimedTask {
			t.Helper()
			ts, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Minute})
			if err != nil || len(ts) != 1 {
				t.Fatalf("claim %s: %v %v", typ, ts, err)
			}
			return ts[0]
		}
		want := func(what string, claims []ledger.Claim, ends []ledger.AttemptEnd) {
			t.Helper()
			gotC, gotE := obs.take()
			if !slices.Equal(gotC, claims) || !slices.Equal(gotE, ends) {
				t.Fatalf("%s: told claims %+v, ends %+v; want %+v, %+v", what, gotC, gotE, claims, ends)
			}
		}

		a := enqueue("a", 2)
		want("an enqueue", nil, nil)
		c.Advance(3 * time.Second)
		ta := claim("a")
		// The attempt's identity, which a Tracer names its span by: the
		// same at the claim and at the end (with the end's reason).
		attempt := ledger.Attempt{ID: a, Attempt: 1, Agent: "w", ClaimedAt: backendtest.T0.Add(3 * time.Second), CreatedAt: backendtest.T0}
		claims, _ := obs.full()
		if len(claims) != 1 || !sameAttempt(claims[0].Attempt, attempt) || claims[0].Type != "a" || claims[0].Wait != 3*time.Second || !claims[0].First {
			t.Fatalf("a first claim: told %+v, want %+v of type a, waited 3s, first", claims, attempt)
		}
		c.Advance(5 * time.Second)
		if _, err := s.Tasks.Fail(ctx, a, ta.LeaseToken, true, "flaky"); err != nil {
			t.Fatal(err)
		}
		if _, ends := obs.full(); len(ends) != 1 || !sameAttempt(ends[0].Attempt, attempt) || ends[0].Reason != "retry: flaky" ||
			ends[0].Outcome != ledger.OutcomeRetried || ends[0].Took != 5*time.Second {
			t.Fatalf("a retryable failure: told %+v, want %+v retried after 5s, reason \"retry: flaky\" (the event's)", ends, attempt)
		}
		c.Advance(2 * time.Second)
		ta = claim("a")
		want("a second claim", []ledger.Claim{{Type: "a", Wait: 10 * time.Second}}, nil)
		if _, err := s.Tasks.Fail(ctx, a, ta.LeaseToken, true, "flaky again"); err != nil {
			t.Fatal(err)
		}
		want("a last failure", nil, []ledger.AttemptEnd{{Type: "a", Outcome: ledger.OutcomeFailed}})
		if _, err := s.Tasks.Fail(ctx, a, ta.LeaseToken, true, "twice"); err == nil {
			t.Fatal("a second Fail under the same lease succeeded")
		}
		want("a refused call", nil, nil)

		b := enqueue("b", 0)
		tb := claim("b")
		if _, err := s.Tasks.MarkRunning(ctx, b, tb.LeaseToken); err != nil {
			t.Fatal(err)
		}
		want("a claim and a start", []ledger.Claim{{Type: "b", First: true}}, nil)
		c.Advance(time.Second)
		if _, err := s.Tasks.GiveBack(ctx, b, tb.LeaseToken, "shutting down"); err != nil {
			t.Fatal(err)
		}
		want("a give-back", nil, []ledger.AttemptEnd{{Type: "b", Outcome: ledger.OutcomeGivenBack, Took: time.Second}})
		tb = claim("b")
		c.Advance(4 * time.Second)
		if _, err := s.Tasks.Complete(ctx, b, tb.LeaseToken, false, "done"); err != nil {
			t.Fatal(err)
		}
		_, ends := obs.take()
		if want := []ledger.AttemptEnd{{Type: "b", Outcome: ledger.OutcomeCompleted, Took: 4 * time.Second}}; !slices.Equal(ends, want) {
			t.Fatalf("a completion: told %+v, want %+v", ends, want)
		}

		d := enqueue("d", 0)
		claim("d")
		c.Advance(2 * time.Minute)
		if n, err := s.Tasks.ReclaimExpired(ctx, c.Now()); err != nil || n != 1 {
			t.Fatalf("reclaim: %d %v", n, err)
		}
		_, ends = obs.take()
		if want := []ledger.AttemptEnd{{Type: "d", Outcome: ledger.OutcomeReclaimed, Took: 2 * time.Minute}}; !slices.Equal(ends, want) {
			t.Fatalf("a lease run out: told %+v, want %+v", ends, want)
		}
		claim("d")
		obs.take()
		if _, err := s.Tasks.Cancel(ctx, d, "op", "not needed"); err != nil {
			t.Fatal(err)
		}
		want("a cancel", nil, []ledger.AttemptEnd{{Type: "d", Outcome: ledger.OutcomeCancelled}})

		e := enqueue("e", 0)
		claim("e")
		obs.take()
		if _, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: e, Actor: "op", Reason: "hold"}); err != nil {
			t.Fatal(err)
		}
		want("a stop", nil, []ledger.AttemptEnd{{Type: "e", Outcome: ledger.OutcomeStopped}})
	})
}

// sameAttempt reports whether a and b are one attempt (times compared as
// instants).
func sameAttempt(a, b ledger.Attempt) bool {
	return a.ID == b.ID && a.Attempt == b.Attempt && a.Restarts == b.Restarts && a.Agent == b.Agent &&
		a.ClaimedAt.Equal(b.ClaimedAt) && a.CreatedAt.Equal(b.CreatedAt) && a.Traceparent == b.Traceparent && a.Keys == b.Keys
}

// countingDriver counts the reads and writes made through it: each
// transaction and each statement outside one. When slow is set, each
// transaction takes that long of the clock c.
type countingDriver struct {
	driver.Driver
	n    *atomic.Int64
	c    *clock.Fake
	slow *atomic.Int64
}

func (d countingDriver) Executor() driver.Executor { d.n.Add(1); return d.Driver.Executor() }

func (d countingDriver) WithTx(ctx context.Context, opts driver.TxOptions, fn func(ctx context.Context, ex driver.Executor) error) error {
	d.n.Add(1)
	d.c.Advance(time.Duration(d.slow.Load()))
	return d.Driver.WithTx(ctx, opts, fn)
}

// TestTaskCounts (both backends): TaskCounts counts the tasks by state
// and, for the types it names, by state and type; an answer younger than
// CountsTTL is given again without touching the database (a task enqueued
// meanwhile shows once it expired); at most MaxCountedTypes types are
// named, the busiest (most due OPEN tasks) first, and the named types'
// counts never exceed the whole; an answer whose read took long is kept
// CountsCostFactor times as long as the read took.
func TestTaskCounts(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		var queries, slow atomic.Int64
		counted := ledger.NewService(countingDriver{Driver: s.Driver(), n: &queries, c: c, slow: &slow}, nil, driver.WithClock(c))
		ctx := context.Background()
		enqueue := func(typ string, n int) {
			t.Helper()
			for range n {
				if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ}); err != nil {
					t.Fatal(err)
				}
			}
		}
		counts := func() ledger.TaskCounts {
			t.Helper()
			tc, err := counted.TaskCounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return tc
		}
		enqueue("a", 3)
		enqueue("b", 1)
		ts, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"a"}, N: 1})
		if err != nil || len(ts) != 1 {
			t.Fatalf("claim: %v %v", ts, err)
		}
		tc := counts()
		if queries.Load() == 0 {
			t.Fatal("the first TaskCounts read nothing")
		}
		check := func(tc ledger.TaskCounts, open, claimed, openA, openB int) {
			t.Helper()
			if tc.ByState[cks.TaskOpen] != open || tc.ByState[cks.TaskClaimed] != claimed || tc.ByState[cks.TaskCompleted] != 0 ||
				tc.ByType["a"][cks.TaskOpen] != openA || tc.ByType["a"][cks.TaskClaimed] != claimed || tc.ByType["b"][cks.TaskOpen] != openB ||
				len(tc.ByState) != len(ledger.All) || len(tc.ByType["b"]) != len(ledger.All) {
				t.Fatalf("counts %+v; want OPEN %d (a %d, b %d), CLAIMED %d (a), every state", tc, open, openA, openB, claimed)
			}
		}
		check(tc, 3, 1, 2, 1)
		tc.ByState[cks.TaskOpen] = 99 // a caller's copy is its own

		// Fresh: no statement, no transaction; the kept answer.
		queries.Store(0)
		enqueue("b", 1)
		c.Advance(ledger.CountsTTL - time.Millisecond)
		check(counts(), 3, 1, 2, 1)
		if n := queries.Load(); n != 0 {
			t.Fatalf("TaskCounts within CountsTTL made %d reads of the database, want 0", n)
		}
		c.Advance(time.Millisecond)
		check(counts(), 4, 1, 2, 2)
		if queries.Load() == 0 {
			t.Fatal("TaskCounts after CountsTTL read nothing")
		}

		// MaxCountedTypes+3 more types: the busiest are named, the rest
		// are counted in the whole alone.
		for i := range ledger.MaxCountedTypes + 3 {
			enqueue(fmt.Sprintf("t%02d", i), 5)
		}
		c.Advance(ledger.CountsTTL)
		tc = counts()
		if len(tc.ByType) != ledger.MaxCountedTypes {
			t.Fatalf("%d types named, want %d", len(tc.ByType), ledger.MaxCountedTypes)
		}
		for i := range ledger.MaxCountedTypes {
			if typ := fmt.Sprintf("t%02d", i); tc.ByType[typ][cks.TaskOpen] != 5 {
				t.Fatalf("type %s: %v, want 5 OPEN (the busiest types are named first)", typ, tc.ByType[typ])
			}
		}
		named := 0
		for _, byState := range tc.ByType {
			named += byState[cks.TaskOpen]
		}
		if whole := tc.ByState[cks.TaskOpen]; whole != 4+5*(ledger.MaxCountedTypes+3) || named > whole {
			t.Fatalf("OPEN: %d in all, %d of the named types", whole, named)
		}

		// A read that takes long is kept CountsCostFactor times as long:
		// this one's two transactions (the types, the counts) take 1 s each.
		c.Advance(ledger.CountsTTL)
		slow.Store(int64(time.Second))
		counts()
		slow.Store(0)
		queries.Store(0)
		const kept = ledger.CountsCostFactor * 2 * time.Second
		c.Advance(kept - 2*time.Second - time.Millisecond)
		counts()
		if n := queries.Load(); n != 0 {
			t.Fatalf("TaskCounts within %s of a read that took 2 s made %d reads, want 0", kept, n)
		}
		c.Advance(time.Millisecond)
		counts()
		if queries.Load() == 0 {
			t.Fatalf("TaskCounts %s after a read that took 2 s read nothing", kept)
		}
	})
}
