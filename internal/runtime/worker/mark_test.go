package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/notifier"
)

// counted is a store that counts the executor's lease reads and signals
// every return of its change watch's callback (each a check of the runs).
// hold, while locked, keeps the callback from being called (a notification
// on its way); watches counts the WatchChanges calls not yet returned, and
// ended gets a send when one returns.
type counted struct {
	*ledger.Service
	changes    *notifier.Notifier
	leaseReads atomic.Int64
	checked    chan struct{} // one send per returned callback
	hold       sync.Mutex
	watches    atomic.Int64
	ended      chan struct{}
}

func newCounted(st *backend.Backend) *counted {
	return &counted{Service: st.Tasks, changes: st.Changes, checked: make(chan struct{}, 1000), ended: make(chan struct{}, 100)}
}

func (c *counted) LeaseHeld(ctx context.Context, id int64, tok string) (bool, error) {
	c.leaseReads.Add(1)
	return c.Service.LeaseHeld(ctx, id, tok)
}

func (c *counted) WatchChanges(ctx context.Context, topics []string, f func(string)) error {
	c.watches.Add(1)
	defer func() {
		c.watches.Add(-1)
		c.ended <- struct{}{}
	}()
	return c.changes.WatchChanges(ctx, topics, func(topic string) {
		c.hold.Lock()
		c.hold.Unlock() //nolint:staticcheck // only waits for the test to let the call through
		f(topic)
		c.checked <- struct{}{}
	})
}

// claimRunning enqueues a task of type "build" and claims it straight to
// RUNNING for worker, as `cks agent` claims (the executor then skips
// MarkRunning, so nothing but the abort watch or the heartbeat can tell it
// the lease is gone).
func claimRunning(t testing.TB, st *backend.Backend, title, worker string) cks.ClaimedTask {
	t.Helper()
	if _, _, err := st.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "build", Title: title}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: worker, Types: []string{"build"}, N: 1, Lease: time.Hour, Running: true})
	if err != nil || len(got) != 1 {
		t.Fatalf("Claim = %v, %v", got, err)
	}
	return got[0]
}

// errNotAborted is what awaitAbort's resolver returns when no abort came.
var errNotAborted = errors.New("the resolver was not aborted")

// awaitAbort returns a resolver that returns once its context is cancelled
// with a lost lease as the cause, or errNotAborted after a deadline no
// delivered abort comes near (the heartbeat is noHeartbeat, so only the
// abort watch or Run's own lease check can cancel it); aborted reports
// whether it was cancelled.
func awaitAbort() (r worker.Resolver, aborted *atomic.Bool) {
	aborted = new(atomic.Bool)
	return func(ctx context.Context, _ *worker.Attempt) (worker.Result, error) {
		select {
		case <-ctx.Done():
			aborted.Store(errors.Is(context.Cause(ctx), cks.ErrLeaseLost))
			return worker.Result{}, ctx.Err()
		case <-time.After(20 * time.Second):
			return worker.Result{}, errNotAborted
		}
	}, aborted
}

// drain empties c's checked signals so far.
func drain(c *counted) {
	for {
		select {
		case <-c.checked:
		default:
			return
		}
	}
}

// stopTask requests the stop of task (an abort of its lease) through op
// without waiting for the confirmation.
func stopTask(t testing.TB, op *backend.Backend, task cks.ClaimedTask) {
	t.Helper()
	if _, err := op.Tasks.StopTask(ctx(t), ledger.StopParams{ID: task.ID, Actor: "operator", Reason: "between claim and run", Deadline: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

// wantAborted fails t unless the resolver was cancelled for the lost lease
// and Run reported the abort confirmed.
func wantAborted(t testing.TB, r worker.Report, err error, aborted *atomic.Bool) {
	t.Helper()
	if !aborted.Load() {
		t.Error("the resolver's context was not cancelled for the lost lease")
	}
	if err != nil || r.Outcome != worker.Aborted || r.Abort == nil || r.Abort.Outcome != cks.AbortConfirmed {
		t.Fatalf("report %+v (err %v), want outcome aborted with its abort confirmed", r, err)
	}
}

// TestAbortBeforeRunWhileAnotherRuns: a task whose abort was requested, and
// its notification checked, after its claim but before its Run — while the
// executor's watch was already running for another task — is aborted all
// the same: the watch's check could not see a run not yet registered, so
// Run reads the lease itself.
func TestAbortBeforeRunWhileAnotherRuns(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := newCounted(st)
		ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
		first := claimRunning(t, st, "in flight", "agent-1")
		started, finish := make(chan struct{}), make(chan struct{})
		inFlight := runAsync(t, ex, first, func(context.Context, *worker.Attempt) (worker.Result, error) {
			close(started)
			<-finish
			return worker.Result{Output: "ok"}, nil
		})
		wait(t, started, "the first resolver to start")
		wait(t, c.checked, "the watch to be established")

		second := claimRunning(t, st, "stopped before its run", "agent-1")
		drain(c)
		stopTask(t, st, second)
		wait(t, c.checked, "the watch to check after the stop")
		resolve, aborted := awaitAbort()
		r, err := ex.Run(ctx(t), second, resolve)
		wantAborted(t, r, err, aborted)

		close(finish)
		if r := report(t, inFlight); r.Outcome != worker.Completed {
			t.Fatalf("first run: %+v", r)
		}
	})
}

// heldWatch makes ex hold its watch for the test and waits for the watch's
// establishing call to return.
func heldWatch(t testing.TB, ex *worker.Executor, c *counted) {
	t.Helper()
	release := ex.Watch(ctx(t))
	t.Cleanup(release)
	wait(t, c.checked, "the watch to be established")
}

// TestAbortBetweenClaimAndRun: an abort requested after the claim and
// before Run is delivered (the resolver cancelled, the abort confirmed)
// whichever way the run was started: with a mark of the held watch whose
// notification is still on its way at Run (the watch's next call sees the
// run), with a mark followed by the notification's call before Run (Run
// reads the lease), without a mark, with a mark of a watch not yet
// established, and with no watch held at all.
func TestAbortBetweenClaimAndRun(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		t.Run("mark, notification after Run", func(t *testing.T) {
			st := open(t)
			c := newCounted(st)
			ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
			heldWatch(t, ex, c)
			c.hold.Lock()
			mark := ex.Mark()
			task := claimRunning(t, st, "stopped, notified late", "agent-1")
			stopTask(t, st, task)
			resolve, aborted := awaitAbort()
			started, out := startRun(t, ex, task, resolve, worker.RunParams{Mark: mark})
			wait(t, started, "the resolver to start")
			// The run skipped its own read: only the watch can abort it.
			if n := c.leaseReads.Load(); n != 0 {
				t.Errorf("%d lease reads before the notification's call, want 0 (the skip was not taken)", n)
			}
			c.hold.Unlock()
			wantAborted(t, report(t, out), nil, aborted)
		})
		t.Run("mark, notification before Run", func(t *testing.T) {
			st := open(t)
			c := newCounted(st)
			ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
			heldWatch(t, ex, c)
			mark := ex.Mark()
			task := claimRunning(t, st, "stopped, notified early", "agent-1")
			stopTask(t, st, task)
			wait(t, c.checked, "the watch to check after the stop")
			resolve, aborted := awaitAbort()
			r, err := ex.RunWith(ctx(t), task, resolve, worker.RunParams{Mark: mark})
			wantAborted(t, r, err, aborted)
		})
		t.Run("no mark, held watch", func(t *testing.T) {
			st := open(t)
			c := newCounted(st)
			ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
			heldWatch(t, ex, c)
			task := claimRunning(t, st, "stopped, run without a mark", "agent-1")
			stopTask(t, st, task)
			wait(t, c.checked, "the watch to check after the stop")
			resolve, aborted := awaitAbort()
			r, err := ex.Run(ctx(t), task, resolve)
			wantAborted(t, r, err, aborted)
		})
		t.Run("mark before the watch is established", func(t *testing.T) {
			st := open(t)
			c := newCounted(st)
			ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
			c.hold.Lock() // the establishing call waits
			release := ex.Watch(ctx(t))
			defer release()
			mark := ex.Mark()
			task := claimRunning(t, st, "stopped, watch connecting", "agent-1")
			stopTask(t, st, task)
			resolve, aborted := awaitAbort()
			r, err := ex.RunWith(ctx(t), task, resolve, worker.RunParams{Mark: mark})
			c.hold.Unlock()
			wantAborted(t, r, err, aborted)
		})
		t.Run("no watch held", func(t *testing.T) {
			st := open(t)
			c := newCounted(st)
			ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
			mark := ex.Mark() // of no watch: no mark
			task := claimRunning(t, st, "stopped, no watch", "agent-1")
			stopTask(t, st, task)
			resolve, aborted := awaitAbort()
			r, err := ex.RunWith(ctx(t), task, resolve, worker.RunParams{Mark: mark})
			wantAborted(t, r, err, aborted)
		})
	})
}

// TestMarkedRunReadsNoLease: runs of a held watch, each handed a mark taken
// before its claim with no notification since, read no lease: the claim
// loop's cost per task is the claim and the outcome. A run still aborts
// through the watch afterwards.
func TestMarkedRunReadsNoLease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := newCounted(st)
		ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
		heldWatch(t, ex, c)
		for i := range 5 {
			mark := ex.Mark()
			task := claimRunning(t, st, "quick", "agent-1")
			r, err := ex.RunWith(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
				return worker.Result{Output: "ok"}, nil
			}, worker.RunParams{Mark: mark})
			if err != nil || r.Outcome != worker.Completed {
				t.Fatalf("run %d: %+v, %v", i, r, err)
			}
		}
		if n := c.leaseReads.Load(); n != 0 {
			t.Errorf("%d lease reads for 5 marked runs, want 0", n)
		}

		// Without a mark, Run reads the lease once.
		task := claimRunning(t, st, "unmarked", "agent-1")
		if r, err := ex.Run(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{Output: "ok"}, nil
		}); err != nil || r.Outcome != worker.Completed {
			t.Fatalf("unmarked run: %+v, %v", r, err)
		}
		if n := c.leaseReads.Load(); n != 1 {
			t.Errorf("%d lease reads after an unmarked run, want 1", n)
		}

		// A marked run in flight is aborted through the watch.
		mark := ex.Mark()
		task = claimRunning(t, st, "marked, stopped while running", "agent-1")
		resolve, aborted := awaitAbort()
		started, out := startRun(t, ex, task, resolve, worker.RunParams{Mark: mark})
		wait(t, started, "the resolver to start")
		stopTask(t, st, task)
		wantAborted(t, report(t, out), nil, aborted)
	})
}

// TestWatchLifetime: a held watch ends when its owner's context ends (or
// on release) — but not while a run still needs it: a run in flight when
// the hold ends is aborted through the watch all the same, and the watch
// ends with it.
func TestWatchLifetime(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := newCounted(st)
		ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})

		owner, cancel := context.WithCancel(ctx(t))
		release := ex.Watch(owner)
		wait(t, c.checked, "the watch to be established")
		cancel()
		wait(t, c.ended, "the watch to end with its owner's context")
		release() // idempotent after the context's end
		if n := c.watches.Load(); n != 0 {
			t.Fatalf("%d watches still running", n)
		}

		owner, cancel = context.WithCancel(ctx(t))
		defer cancel()
		release = ex.Watch(owner)
		wait(t, c.checked, "the second watch to be established")
		mark := ex.Mark()
		task := claimRunning(t, st, "outlives the hold", "agent-1")
		resolve, aborted := awaitAbort()
		started, out := startRun(t, ex, task, resolve, worker.RunParams{Mark: mark})
		wait(t, started, "the resolver to start")
		release()
		if n := c.watches.Load(); n != 1 {
			t.Fatalf("%d watches after the hold ended with a run in flight, want 1", n)
		}
		stopTask(t, st, task)
		wantAborted(t, report(t, out), nil, aborted)
		wait(t, c.ended, "the watch to end with the run")
		if n := c.watches.Load(); n != 0 {
			t.Fatalf("%d watches still running", n)
		}
	})
}

// TestReleaseStopsTheWatch: release returns only once the watch's
// goroutine has ended, its WatchChanges returned; releasing again does
// nothing.
func TestReleaseStopsTheWatch(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := newCounted(open(t))
		ex := worker.New(c, worker.Options{Heartbeat: noHeartbeat, Changes: c})
		release := ex.Watch(ctx(t))
		wait(t, c.checked, "the watch to be established")
		release()
		if n := c.watches.Load(); n != 0 {
			t.Fatalf("%d watches still running after release", n)
		}
		if m := ex.Mark(); m != (worker.Mark{}) {
			t.Fatal("a mark of a released watch")
		}
		release()
	})
}

// startRun runs task on ex with resolve and p on a goroutine; started is
// closed when the resolver begins, out receives the report.
func startRun(t testing.TB, ex *worker.Executor, task cks.ClaimedTask, resolve worker.Resolver,
	p worker.RunParams) (started <-chan struct{}, out <-chan worker.Report) {
	t.Helper()
	begun, reports := make(chan struct{}), make(chan worker.Report, 1)
	go func() {
		r, err := ex.RunWith(context.Background(), task, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			close(begun)
			return resolve(ctx, a)
		}, p)
		if err != nil {
			t.Errorf("RunWith: %v", err)
		}
		reports <- r
	}()
	return begun, reports
}
