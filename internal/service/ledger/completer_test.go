package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres"
	"github.com/cks-dev/cks/internal/driver/sqlite"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// dialects open a fresh database of each dialect as a bare driver.
var dialects = []struct {
	name string
	open func(t testing.TB) driver.Driver
}{
	{"sqlite", func(t testing.TB) driver.Driver {
		t.Helper()
		d, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}},
	{"postgres", func(t testing.TB) driver.Driver {
		t.Helper()
		d, err := postgres.Open(context.Background(), backendtest.PostgresURL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}},
}

// gate is a driver that can hold the next flush of the completer (its
// locking read of the tasks) or the next claim statement until released,
// records the size of every flush and the params of every claim, and can
// fail event inserts.
type gate struct {
	driver.Driver
	flush, claim latch
	mu           sync.Mutex
	flushes      []int // ids of each locking read
	claims       []driver.TaskClaimParams
	// failEvents, when set, fails an event insert of n events (or a
	// move with n events, after its statement ran).
	failEvents func(n int) error
}

// latch can make the next call that passes it wait until released.
type latch struct {
	mu            sync.Mutex
	hold, arrived chan struct{}
}

// next makes the next pass wait until release is called; arrived is
// closed when it has begun waiting.
func (l *latch) next() (arrived <-chan struct{}, release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hold, l.arrived = make(chan struct{}), make(chan struct{})
	hold := l.hold
	return l.arrived, func() { close(hold) }
}

// pass waits if next armed the latch.
func (l *latch) pass() {
	l.mu.Lock()
	hold, arrived := l.hold, l.arrived
	l.hold = nil
	l.mu.Unlock()
	if hold != nil {
		close(arrived)
		<-hold
	}
}

func (g *gate) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	return g.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error { return fn(ctx, gated{ex, g}) })
}

// holdNext makes the next flush wait until the returned release is called,
// and returns a channel closed when it has begun waiting.
func (g *gate) holdNext() (held <-chan struct{}, release func()) { return g.flush.next() }

func (g *gate) sizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.flushes)
}

type gated struct {
	driver.Executor
	g *gate
}

func (e gated) TaskGetMany(ctx context.Context, p driver.TaskGetManyParams) ([]driver.TaskRow, error) {
	if p.Lock == driver.LockUpdate {
		e.g.mu.Lock()
		e.g.flushes = append(e.g.flushes, len(p.IDs))
		e.g.mu.Unlock()
		e.g.flush.pass()
	}
	return e.Executor.TaskGetMany(ctx, p)
}

func (e gated) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	e.g.mu.Lock()
	e.g.claims = append(e.g.claims, p)
	e.g.mu.Unlock()
	e.g.claim.pass()
	return e.Executor.TaskClaim(ctx, p)
}

func (e gated) TaskEventInsertMany(ctx context.Context, events []driver.TaskEventRow) error {
	e.g.mu.Lock()
	fail := e.g.failEvents
	e.g.mu.Unlock()
	if fail != nil {
		if err := fail(len(events)); err != nil {
			return err
		}
	}
	return e.Executor.TaskEventInsertMany(ctx, events)
}

// TaskMoveMany writes the moves and then fails as an event insert of their
// events would, so that what the statement wrote must be rolled back.
func (e gated) TaskMoveMany(ctx context.Context, p driver.TaskMoveManyParams) (int, error) {
	n, err := e.Executor.TaskMoveMany(ctx, p)
	e.g.mu.Lock()
	fail := e.g.failEvents
	e.g.mu.Unlock()
	if fail != nil && err == nil {
		err = fail(len(p.Events))
	}
	return n, err
}

// claimN enqueues n tasks of type typ and claims them all.
func claimN(t testing.TB, s *ledger.Service, typ string, n int) []cks.ClaimedTask {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: typ, Title: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: n, Lease: time.Hour})
	if err != nil || len(got) != n {
		t.Fatalf("claim: %d of %d, %v", len(got), n, err)
	}
	return got
}

// waitQueued waits until n calls of s wait for the next flush.
func waitQueued(t testing.TB, s *ledger.Service, n int) {
	t.Helper()
	waitN(t, "calls", func() int { return ledger.Queued(s) }, n)
}

// waitN waits until count() is n.
func waitN(t testing.TB, what string, count func() int, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for count() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d %s queued, want %d", count(), what, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// withHeldFlush starts a Complete of blocker, holds its flush, runs queue
// (which starts the calls that are to queue behind it) and waits until
// want calls are queued, then releases the flush and waits for blocker.
func withHeldFlush(t testing.TB, s *ledger.Service, g *gate, blocker cks.ClaimedTask, want int, queue func()) {
	t.Helper()
	withHeld(t, &g.flush, func() error {
		_, err := s.Complete(context.Background(), blocker.ID, blocker.LeaseToken, false, "first")
		return err
	}, queue, func() { waitQueued(t, s, want) })
}

// withHeld runs first on a goroutine and holds it at l; once it waits
// there, runs queue (which starts the calls that are to queue behind it)
// and queued (which waits until they have), then releases first and waits
// for it to succeed.
func withHeld(t testing.TB, l *latch, first func() error, queue, queued func()) {
	t.Helper()
	held, release := l.next()
	done := make(chan error, 1)
	go func() { done <- first() }()
	<-held
	queue()
	queued()
	release()
	if err := <-done; err != nil {
		t.Fatalf("the held call: %v", err)
	}
}

// TestCompleterGroupsWithOneStaleToken: completions made while a flush is
// in flight go out together in the next one, and a stale token among them
// (an earlier lease of a task that was reclaimed and claimed again) is
// that caller's ErrLeaseLost alone; the task's current token, in the same
// flush, completes it once.
func TestCompleterGroupsWithOneStaleToken(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil), context.Background()
			ledger.SetMaxFlushes(s, 1) // while the held flush runs, the others queue
			old := claimN(t, s, "x", 1)[0]
			if n, err := s.ReclaimExpired(ctx, time.Now().Add(2*time.Hour)); err != nil || n != 1 {
				t.Fatalf("reclaim: %d %v", n, err)
			}
			claimed := claimN(t, s, "x", 5) // x again (the oldest), and four of five new tasks
			blocker := claimN(t, s, "b", 1)[0]
			i := slices.IndexFunc(claimed, func(c cks.ClaimedTask) bool { return c.ID == old.ID })
			if i < 0 || claimed[i].LeaseToken == old.LeaseToken {
				t.Fatalf("task %d was not claimed again with a new token", old.ID)
			}
			calls := append(slices.Clone(claimed), old) // the stale token last
			errs := make([]error, len(calls))
			var wg sync.WaitGroup
			withHeldFlush(t, s, g, blocker, len(calls), func() {
				for k, c := range calls {
					wg.Go(func() {
						_, errs[k] = s.Complete(ctx, c.ID, c.LeaseToken, false, "done")
					})
				}
			})
			wg.Wait()
			for k, c := range calls {
				stale := k == len(calls)-1
				if stale && !errors.Is(errs[k], cks.ErrLeaseLost) {
					t.Errorf("stale token of task %d: %v, want ErrLeaseLost", c.ID, errs[k])
				}
				if !stale && errs[k] != nil {
					t.Errorf("task %d: %v", c.ID, errs[k])
				}
			}
			if got := g.sizes(); !slices.Equal(got, []int{1, len(claimed)}) {
				t.Errorf("flushes of %v tasks, want [1 %d]: the queued calls in one", got, len(claimed))
			}
			for _, c := range claimed {
				task, err := s.GetTask(ctx, c.ID)
				if err != nil || task.State != cks.TaskCompleted {
					t.Fatalf("task %d: %s %v, want COMPLETED", c.ID, task.State, err)
				}
				n := 0
				for _, e := range task.Events {
					if e.To == cks.TaskCompleted {
						n++
					}
				}
				if n != 1 {
					t.Errorf("task %d has %d COMPLETED events, want 1", c.ID, n)
				}
			}
		})
	}
}

// TestCompleterFlushFailure: when a flush's transaction fails, every call
// it carries gets the error and nothing of it is written — each task is
// still CLAIMED under the same lease, with no new event, and completes
// afterwards.
func TestCompleterFlushFailure(t *testing.T) {
	boom := errors.New("boom")
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil), context.Background()
			ledger.SetMaxFlushes(s, 1) // while the held flush runs, the others queue
			claimed := claimN(t, s, "x", 3)
			blocker := claimN(t, s, "b", 1)[0]
			g.failEvents = func(n int) error {
				if n > 1 {
					return boom
				}
				return nil
			}
			errs := make([]error, len(claimed))
			var wg sync.WaitGroup
			withHeldFlush(t, s, g, blocker, len(claimed), func() {
				for k, c := range claimed {
					wg.Go(func() {
						if k == 1 {
							_, errs[k] = s.Fail(ctx, c.ID, c.LeaseToken, false, "no")
						} else {
							_, errs[k] = s.Complete(ctx, c.ID, c.LeaseToken, false, "done")
						}
					})
				}
			})
			wg.Wait()
			g.mu.Lock()
			g.failEvents = nil
			g.mu.Unlock()
			for k, c := range claimed {
				if !errors.Is(errs[k], boom) {
					t.Errorf("task %d: %v, want the flush's error", c.ID, errs[k])
				}
				task, err := s.GetTask(ctx, c.ID)
				if err != nil || task.State != cks.TaskClaimed || len(task.Events) != 2 {
					t.Fatalf("task %d after the failed flush: %s, %d events, %v; want CLAIMED, 2", c.ID, task.State,
						len(task.Events), err)
				}
				if _, err := s.Complete(ctx, c.ID, c.LeaseToken, false, "again"); err != nil {
					t.Errorf("task %d: the lease did not survive the failed flush: %v", c.ID, err)
				}
			}
		})
	}
}

// TestCompleterWithdraw: a call whose context ends while it waits for the
// next flush returns the context's error and writes nothing; the others
// of that flush commit.
func TestCompleterWithdraw(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil), context.Background()
			ledger.SetMaxFlushes(s, 1) // while the held flush runs, the others queue
			claimed := claimN(t, s, "x", 2)
			blocker := claimN(t, s, "b", 1)[0]
			cctx, cancel := context.WithCancel(ctx)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			withHeldFlush(t, s, g, blocker, 1, func() {
				wg.Go(func() { _, errs[0] = s.Complete(cctx, claimed[0].ID, claimed[0].LeaseToken, false, "x") })
				waitQueued(t, s, 1)
				wg.Go(func() { _, errs[1] = s.Complete(ctx, claimed[1].ID, claimed[1].LeaseToken, false, "y") })
				waitQueued(t, s, 2)
				cancel()
			})
			wg.Wait()
			if !errors.Is(errs[0], context.Canceled) || errs[1] != nil {
				t.Fatalf("withdrawn call: %v; the other: %v", errs[0], errs[1])
			}
			for k, want := range []cks.TaskState{cks.TaskClaimed, cks.TaskCompleted} {
				if task, err := s.GetTask(ctx, claimed[k].ID); err != nil || task.State != want {
					t.Errorf("task %d: %s %v, want %s", claimed[k].ID, task.State, err, want)
				}
			}
		})
	}
}

// TestCompleterTouches: heartbeats made while a flush is in flight renew
// their leases in the next flush, each by its own length from the clock's
// now; a Heartbeat before a Complete of the same task in one flush does not
// undo the completion, and a Heartbeat after it has lost the lease.
func TestCompleterTouches(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(backendtest.T0)
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil, driver.WithClock(clk)), context.Background()
			ledger.SetMaxFlushes(s, 1) // while the held flush runs, the others queue
			claimed := claimN(t, s, "x", 3)
			a, b, c := claimed[0], claimed[1], claimed[2]
			blocker := claimN(t, s, "b", 1)[0]
			clk.Advance(30 * time.Second)
			type call struct {
				task  cks.ClaimedTask
				touch bool
			}
			calls := []call{{a, true}, {c, true}, {c, false}, {b, true}, {c, true}}
			errs := make([]error, len(calls))
			held := make([]bool, len(calls))
			var wg sync.WaitGroup
			withHeldFlush(t, s, g, blocker, len(calls), func() {
				for k, cl := range calls {
					wg.Go(func() {
						if cl.touch {
							var res cks.TouchResult
							res, errs[k] = s.Heartbeat(ctx, cl.task.ID, cl.task.LeaseToken)
							held[k] = res.Held
						} else {
							_, errs[k] = s.Complete(ctx, cl.task.ID, cl.task.LeaseToken, false, "done")
							held[k] = errs[k] == nil
						}
					})
					waitQueued(t, s, k+1) // in this order
				}
			})
			wg.Wait()
			for k, err := range errs {
				if last := k == len(calls)-1; last == held[k] || err != nil {
					t.Errorf("call %d on task %d: held %v, %v", k, calls[k].task.ID, held[k], err)
				}
			}
			if got := g.sizes(); !slices.Equal(got, []int{1, 3}) {
				t.Errorf("flushes of %v tasks, want [1 3]", got)
			}
			want := backendtest.T0.Add(30*time.Second + time.Hour)
			for _, ct := range []cks.ClaimedTask{a, b} {
				task, err := s.GetTask(ctx, ct.ID)
				if err != nil || task.State != cks.TaskClaimed || !task.LeaseExpiresAt.Equal(want) {
					t.Errorf("task %d: %s, lease until %v, %v; want CLAIMED until %v", ct.ID, task.State, task.LeaseExpiresAt, err, want)
				}
			}
			if task, err := s.GetTask(ctx, c.ID); err != nil || task.State != cks.TaskCompleted {
				t.Errorf("task %d touched and completed in one flush: %s %v, want COMPLETED", c.ID, task.State, err)
			}
		})
	}
}

// TestCompleterCancel: a flush is abandoned (rolled back, every caller
// told the context's error) only when the contexts of all the calls it
// carries have ended; while one caller still waits, it commits for all.
func TestCompleterCancel(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil), context.Background()
			ledger.SetMaxFlushes(s, 1) // while the held flush runs, the others queue
			claimed := claimN(t, s, "x", 2)
			blocker := claimN(t, s, "b", 1)[0]
			// Two calls in one flush, one caller gives up: both commit.
			held1, release1 := g.holdNext()
			first := make(chan error, 1)
			go func() { _, err := s.Complete(ctx, blocker.ID, blocker.LeaseToken, false, "b"); first <- err }()
			<-held1
			c1, cancel1 := context.WithCancel(ctx)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			wg.Go(func() { _, errs[0] = s.Complete(c1, claimed[0].ID, claimed[0].LeaseToken, false, "x") })
			wg.Go(func() { _, errs[1] = s.Complete(ctx, claimed[1].ID, claimed[1].LeaseToken, false, "y") })
			waitQueued(t, s, 2)
			held2, release2 := g.holdNext() // the flush that carries both
			release1()
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			<-held2
			cancel1()
			release2()
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("one of two callers gone: %v, %v; want both committed", errs[0], errs[1])
			}
			// A flush whose one caller gives up is rolled back.
			again := claimN(t, s, "y", 1)[0]
			c2, cancel2 := context.WithCancel(ctx)
			held, release := g.holdNext()
			done := make(chan error, 1)
			go func() { _, err := s.Complete(c2, again.ID, again.LeaseToken, false, "z"); done <- err }()
			<-held
			cancel2()
			release()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the only caller gone: %v, want context.Canceled", err)
			}
			if task, err := s.GetTask(ctx, again.ID); err != nil || task.State != cks.TaskClaimed {
				t.Fatalf("task %d: %s %v, want CLAIMED", again.ID, task.State, err)
			}
		})
	}
}

// TestCompleterTwoFlushes: a call that finds one flush in flight flushes
// at once beside it (two may run); only when both are in flight do calls
// queue, and they go out together in the next.
func TestCompleterTwoFlushes(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			if dl.name == "sqlite" {
				// The second flush waits for the one writer that the held
				// first holds, so two cannot be held inside their
				// transactions at once.
				t.Skip("SQLite's one writer: two flushes cannot both be held")
			}
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil), context.Background()
			blockers := claimN(t, s, "b", 2)
			claimed := claimN(t, s, "x", 4)
			first := make(chan error, 2)
			var releases []func()
			for _, b := range blockers {
				held, release := g.holdNext()
				go func() { _, err := s.Complete(ctx, b.ID, b.LeaseToken, false, "b"); first <- err }()
				<-held // in flight, not queued
				releases = append(releases, release)
			}
			errs := make([]error, len(claimed))
			var wg sync.WaitGroup
			for k, c := range claimed {
				wg.Go(func() { _, errs[k] = s.Complete(ctx, c.ID, c.LeaseToken, false, "x") })
			}
			waitQueued(t, s, len(claimed))
			for _, release := range releases {
				release()
			}
			wg.Wait()
			for range blockers {
				if err := <-first; err != nil {
					t.Fatal(err)
				}
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if got := g.sizes(); !slices.Equal(got, []int{1, 1, len(claimed)}) {
				t.Errorf("flushes of %v tasks, want [1 1 %d]", got, len(claimed))
			}
		})
	}
}
