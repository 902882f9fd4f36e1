package ledger_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/waitfor"
)

// claimResult is what a waiting claim answered.
type claimResult struct {
	tasks []cks.ClaimedTask
	err   error
}

// waitingClaim starts a claim of p on s in the background.
func waitingClaim(ctx context.Context, s *backend.Backend, p ledger.ClaimParams) <-chan claimResult {
	done := make(chan claimResult, 1)
	go func() {
		ts, err := s.Tasks.Claim(ctx, p)
		done <- claimResult{ts, err}
	}()
	return done
}

// armedWithin waits up to a minute for n timers armed on c.
func armedWithin(c *clock.Fake, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.WaitArmed(ctx, n)
}

// answer waits for a waiting claim's answer.
func answer(t *testing.T, what string, done <-chan claimResult) claimResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(time.Minute):
		t.Fatalf("no answer from %s", what)
		return claimResult{}
	}
}

// TestClaimWaitWakesOnNewWork (both backends): claims that wait (the long
// poll) are answered when a task they can take is made OPEN by another
// handle on the database — one task wakes the oldest waiter of its type,
// not the others, and a waiter of another type keeps waiting.
func TestClaimWaitWakesOnNewWork(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s, op := open(t), open(t)
		ctx := context.Background()
		claim := func(worker string, types ...string) <-chan claimResult {
			return waitingClaim(ctx, s, ledger.ClaimParams{Worker: worker, Types: types, N: 1, Wait: ledger.MaxClaimWait})
		}
		first := claim("first", "x")
		waitfor.Until(t, "the first waiter in the room", func() bool { return s.Tasks.ClaimsWaiting() == 1 })
		second := claim("second", "x")
		other := claim("other", "y")
		waitfor.Until(t, "three waiters in the room", func() bool { return s.Tasks.ClaimsWaiting() == 3 })

		x1 := backendtest.MustEnqueue(t, op, cks.NewTask{Type: "x"})
		r := answer(t, "the first waiter", first)
		if r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != x1.ID || r.tasks[0].ClaimedBy != "first" {
			t.Fatalf("first waiter: %+v, %v; want task %d", r.tasks, r.err, x1.ID)
		}
		if n := s.Tasks.ClaimsWaiting(); n != 2 {
			t.Fatalf("%d claims waiting after the first was served, want 2", n)
		}
		y := backendtest.MustEnqueue(t, op, cks.NewTask{Type: "y"})
		if r := answer(t, "the waiter of y", other); r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != y.ID {
			t.Fatalf("waiter of y: %+v, %v; want task %d", r.tasks, r.err, y.ID)
		}
		x2 := backendtest.MustEnqueue(t, op, cks.NewTask{Type: "x"})
		if r := answer(t, "the second waiter", second); r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != x2.ID {
			t.Fatalf("second waiter: %+v, %v; want task %d", r.tasks, r.err, x2.ID)
		}
		waitfor.Until(t, "the room empty", func() bool { return s.Tasks.ClaimsWaiting() == 0 })
	})
}

// TestClaimWaitIdle (both backends): fifty claims waiting while nothing
// happens cost the ledger no read beyond the room's first; at the end of
// their wait, on the service's clock, each answers no task; a claim whose
// caller leaves answers its context's error and leaves the room.
func TestClaimWaitIdle(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		var waiting []<-chan claimResult
		for range 50 {
			waiting = append(waiting, waitingClaim(ctx, s, ledger.ClaimParams{Worker: "idle", Types: []string{"x"}, N: 1, Wait: 30 * time.Second}))
		}
		gone, leave := context.WithCancel(ctx)
		left := waitingClaim(gone, s, ledger.ClaimParams{Worker: "leaving", N: 1, Wait: 30 * time.Second})
		waitfor.Until(t, "51 waiters in the room, read once", func() bool {
			return s.Tasks.ClaimsWaiting() == 51 && ledger.RoomReads(s.Tasks) >= 1
		})
		leave()
		if r := answer(t, "the claim whose caller left", left); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("claim of a caller that left: %+v, %v; want context.Canceled", r.tasks, r.err)
		}
		waitfor.Until(t, "the leaving claim out of the room", func() bool { return s.Tasks.ClaimsWaiting() == 50 })
		reads := ledger.RoomReads(s.Tasks)
		c.Advance(30 * time.Second)
		for i, w := range waiting {
			if r := answer(t, "an idle waiter", w); r.err != nil || len(r.tasks) != 0 {
				t.Fatalf("idle waiter %d: %+v, %v; want no task at the end of its wait", i, r.tasks, r.err)
			}
		}
		if got := ledger.RoomReads(s.Tasks); got != reads {
			t.Fatalf("the room read the ledger %d times while nothing happened", got-reads)
		}
		if n := s.Tasks.ClaimsWaiting(); n != 0 {
			t.Fatalf("%d claims waiting after their wait, want 0", n)
		}
	})
}

// TestClaimWaitForRetry (both backends): a claim waiting for a task whose
// retry is not due yet — no notification comes when it becomes due — is
// answered once the service's clock reaches its run_after.
func TestClaimWaitForRetry(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		task := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "x"})
		got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", N: 1, Lease: time.Minute})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %v, %v", got, err)
		}
		retried, err := s.Tasks.Fail(ctx, task.ID, got[0].LeaseToken, true, "try again")
		if err != nil || retried.State != cks.TaskOpen || !retried.RunAfter.After(c.Now()) {
			t.Fatalf("failed task: %s run_after %s, %v; want OPEN, due later", retried.State, retried.RunAfter, err)
		}
		armed := c.Armed()
		done := waitingClaim(ctx, s, ledger.ClaimParams{Worker: "waiter", Types: []string{"x"}, N: 1, Wait: ledger.MaxClaimWait})
		// The claim's deadline and the room's timer for the retry.
		if err := armedWithin(c, armed+2); err != nil {
			t.Fatalf("the claim's deadline and the room's timer for the retry: %v", err)
		}
		select {
		case r := <-done:
			t.Fatalf("claim answered before the retry was due: %+v, %v", r.tasks, r.err)
		default:
		}
		c.Set(retried.RunAfter)
		r := answer(t, "the waiter of the retry", done)
		if r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != task.ID || r.tasks[0].Attempts != 2 {
			t.Fatalf("waiter: %+v, %v; want task %d's second attempt", r.tasks, r.err, task.ID)
		}

		// Again with the room empty when the retry is made (it reads
		// nothing then): the next waiter learns of the due time all the same.
		retried, err = s.Tasks.Fail(ctx, task.ID, r.tasks[0].LeaseToken, true, "try again")
		if err != nil || retried.State != cks.TaskOpen || !retried.RunAfter.After(c.Now()) {
			t.Fatalf("failed task: %s run_after %s, %v; want OPEN, due later", retried.State, retried.RunAfter, err)
		}
		armed = c.Armed()
		done = waitingClaim(ctx, s, ledger.ClaimParams{Worker: "waiter", Types: []string{"x"}, N: 1, Wait: ledger.MaxClaimWait})
		if err := armedWithin(c, armed+2); err != nil {
			t.Fatalf("the claim's deadline and the room's timer for the retry: %v", err)
		}
		c.Set(retried.RunAfter)
		if r := answer(t, "the waiter of the second retry", done); r.err != nil || len(r.tasks) != 1 || r.tasks[0].Attempts != 3 {
			t.Fatalf("waiter: %+v, %v; want task %d's third attempt", r.tasks, r.err, task.ID)
		}
	})
}

// TestClaimWaitBounds: a wait past ledger.MaxClaimWait, or below 0, is
// refused naming wait_s.
func TestClaimWaitBounds(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		for _, d := range []time.Duration{-time.Second, ledger.MaxClaimWait + time.Millisecond} {
			_, err := s.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "w", N: 1, Wait: d})
			var fe *cks.FieldError
			if !errors.As(err, &fe) || fe.Field != "wait_s" {
				t.Fatalf("wait %s: %v, want a FieldError naming wait_s", d, err)
			}
		}
	})
}

// BenchmarkClaimWaiters: 10,000 claims waiting in one service's room (the
// long poll of 10,000 idle agents). It reports the heap each waiting claim
// holds (waiter-B), how long the room's pass over them all takes when one
// task arrives (ns/op: one read of the ledger, then the oldest waiter
// woken and served), and the room's reads of the ledger per task
// (reads/op) — while nothing arrives there are none (TestClaimWaitIdle).
func BenchmarkClaimWaiters(b *testing.B) {
	const waiters = 10_000
	for _, d := range backendtest.All() {
		b.Run(d.Name, func(b *testing.B) {
			s := d.NewDB(b)(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			answers := make(chan claimResult, waiters)
			for range waiters {
				go func() {
					ts, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "idle", Types: []string{"bench"}, N: 1, Wait: ledger.MaxClaimWait})
					answers <- claimResult{ts, err}
				}()
			}
			for s.Tasks.ClaimsWaiting() < waiters {
				time.Sleep(time.Millisecond)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perWaiter := float64(after.HeapAlloc-before.HeapAlloc) / waiters
			reads := ledger.RoomReads(s.Tasks)
			b.ResetTimer()
			for range b.N {
				backendtest.MustEnqueue(b, s, cks.NewTask{Type: "bench"})
				r := <-answers
				if r.err != nil || len(r.tasks) != 1 {
					b.Fatalf("served %+v, %v", r.tasks, r.err)
				}
				// The served waiter comes back, as an agent's next long poll does.
				go func() {
					ts, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "idle", Types: []string{"bench"}, N: 1, Wait: ledger.MaxClaimWait})
					answers <- claimResult{ts, err}
				}()
			}
			b.StopTimer()
			b.ReportMetric(perWaiter, "waiter-B")
			b.ReportMetric(float64(ledger.RoomReads(s.Tasks)-reads)/float64(b.N), "reads/op")
			cancel()
			for range waiters {
				<-answers
			}
		})
	}
}

// TestClaimWaitSparesTheFirstLook (both backends): a waiting claim whose
// types the room's last read found nothing due of goes straight to waiting
// (an idle agent's re-poll costs no claim), while one whose type is due
// claims at once; what the room knows lapses when a task is announced and
// after a while (so a notification the listener lost unnoticed delays a
// claim at most that long).
func TestClaimWaitSparesTheFirstLook(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		wait := func(worker string, types ...string) <-chan claimResult {
			return waitingClaim(ctx, s, ledger.ClaimParams{Worker: worker, Types: types, N: 1, Wait: ledger.MaxClaimWait})
		}
		first := wait("first", "x")
		waitfor.Until(t, "the first waiter in, the room read", func() bool {
			return s.Tasks.ClaimsWaiting() == 1 && ledger.RoomKnows(s.Tasks)
		})
		spared := ledger.RoomSpared(s.Tasks)
		second := wait("second", "x")
		waitfor.Until(t, "the second waiter in", func() bool { return s.Tasks.ClaimsWaiting() == 2 })
		if n := ledger.RoomSpared(s.Tasks) - spared; n != 1 {
			t.Fatalf("a claim of a type known not due looked %d times spared, want 1", n)
		}

		// A task of y announced: the room reads, knows y due; a claim of y
		// takes it at once, a claim of x is still spared.
		reads := ledger.RoomReads(s.Tasks)
		y, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "y", Title: "y"})
		if err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, "the room's read after y", func() bool {
			return ledger.RoomReads(s.Tasks) > reads && ledger.RoomKnows(s.Tasks)
		})
		spared = ledger.RoomSpared(s.Tasks)
		if r := answer(t, "the claim of y", wait("third", "y")); r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != y.ID {
			t.Fatalf("claim of y: %+v, %v; want task %d", r.tasks, r.err, y.ID)
		}
		fourth := wait("fourth", "x")
		waitfor.Until(t, "the fourth waiter in", func() bool { return s.Tasks.ClaimsWaiting() == 3 })
		if n := ledger.RoomSpared(s.Tasks) - spared; n != 1 {
			t.Fatalf("spared %d claims, want 1 (x, not the due y)", n)
		}

		// What the room knows lapses: a claim looks, and the room reads.
		c.Advance(31 * time.Second)
		spared, reads = ledger.RoomSpared(s.Tasks), ledger.RoomReads(s.Tasks)
		fifth := wait("fifth", "x")
		waitfor.Until(t, "the fifth waiter in, the room read again", func() bool {
			return s.Tasks.ClaimsWaiting() == 4 && ledger.RoomReads(s.Tasks) > reads && ledger.RoomKnows(s.Tasks)
		})
		if n := ledger.RoomSpared(s.Tasks) - spared; n != 0 {
			t.Fatalf("spared %d claims on what the room read 31 s ago, want 0", n)
		}
		cancel()
		for _, w := range []<-chan claimResult{first, second, fourth, fifth} {
			answer(t, "a waiter", w)
		}
	})
}
