package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/notifier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noHeartbeat is a heartbeat period no test lives to see: an abort that
// arrives within a test's deadline came through the change watch.
const noHeartbeat = time.Hour

func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// claim enqueues a task of type "build" and claims it for worker with a
// lease of an hour.
func claim(t testing.TB, st *backend.Backend, n cks.NewTask, worker string) cks.ClaimedTask {
	t.Helper()
	n.Type = "build"
	if _, _, err := st.Tasks.Enqueue(ctx(t), n); err != nil {
		t.Fatal(err)
	}
	got, err := st.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: worker, Types: []string{"build"}, N: 1, Lease: time.Hour})
	if err != nil || len(got) != 1 {
		t.Fatalf("Claim = %v, %v", got, err)
	}
	return got[0]
}

// runAsync runs task in the background and returns the channel of its report.
func runAsync(t testing.TB, ex *worker.Executor, task cks.ClaimedTask, r worker.Resolver) <-chan worker.Report {
	t.Helper()
	out := make(chan worker.Report, 1)
	go func() {
		rep, err := ex.Run(context.Background(), task, r)
		if err != nil {
			t.Errorf("Run(%d): %v", task.ID, err)
		}
		out <- rep
	}()
	return out
}

func report(t testing.TB, ch <-chan worker.Report) worker.Report {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute")
		return worker.Report{}
	}
}

func wait(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestStopAbortsRunningResolver: an operator's stop, made through another
// handle on the database, cancels the resolver's context, the executor
// confirms, and the stop returns abort_confirmed — with a heartbeat period
// of an hour, so the notification path delivered it.
func TestStopAbortsRunningResolver(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		agentStore, opStore := open(t), open(t)
		task := claim(t, agentStore, cks.NewTask{Title: "long"}, "agent-1")
		ex := worker.New(agentStore.Tasks, worker.Options{Changes: agentStore.Changes, Heartbeat: noHeartbeat})
		started := make(chan struct{})
		rep := runAsync(t, ex, task, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			close(started)
			<-ctx.Done()
			return worker.Result{}, ctx.Err()
		})
		wait(t, started, "the resolver to start")
		begin := time.Now()
		res, err := opStore.Tasks.StopTask(ctx(t), ledger.StopParams{ID: task.ID, Actor: "operator", Reason: "investigate", Deadline: 30 * time.Second, Wait: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: stop → abort confirmed in %s", opStore.Dialect(), time.Since(begin))
		if res.Task.State != cks.TaskStopped || res.Abort == nil || res.Abort.Outcome != cks.AbortConfirmed ||
			res.Abort.Executor != "agent-1" || res.Abort.ResolvedAt.IsZero() {
			t.Fatalf("stop = %+v / abort %+v", res.Task.State, res.Abort)
		}
		r := report(t, rep)
		if r.Outcome != worker.Aborted || r.Abort == nil || r.Abort.ID != res.Abort.ID {
			t.Fatalf("report %+v", r)
		}
		got, err := opStore.Tasks.GetTask(ctx(t), task.ID)
		if err != nil || got.State != cks.TaskStopped || got.Attempts != 0 || got.LastAbort.Outcome != cks.AbortConfirmed {
			t.Fatalf("task %+v, %v", got, err)
		}
	})
}

// TestStopUnconfirmed: an executor that ignores the abort leaves the stop
// to its deadline: abort_unconfirmed, stored, naming the executor, and the
// task STOPPED all the same. When the executor finally returns, its write
// is refused and it confirms late.
func TestStopUnconfirmed(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		task := claim(t, st, cks.NewTask{Title: "wedged"}, "agent-wedged")
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		started, release := make(chan struct{}), make(chan struct{})
		rep := runAsync(t, ex, task, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			close(started)
			<-release // ignores ctx: a wedged executor
			return worker.Result{Output: "done anyway"}, nil
		})
		wait(t, started, "the resolver to start")
		res, err := st.Tasks.StopTask(ctx(t), ledger.StopParams{ID: task.ID, Actor: "operator", Reason: "runaway", Deadline: 200 * time.Millisecond, Wait: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Abort == nil || res.Abort.Outcome != cks.AbortUnconfirmed || res.Abort.Executor != "agent-wedged" {
			t.Fatalf("abort %+v", res.Abort)
		}
		got, err := st.Tasks.GetTask(ctx(t), task.ID)
		if err != nil || got.State != cks.TaskStopped || got.LastAbort == nil ||
			got.LastAbort.Outcome != cks.AbortUnconfirmed || got.LastAbort.Executor != "agent-wedged" {
			t.Fatalf("stored %+v / %+v, %v", got.State, got.LastAbort, err)
		}
		close(release)
		r := report(t, rep)
		if r.Outcome != worker.Aborted || r.Abort == nil || r.Abort.Outcome != cks.AbortConfirmed {
			t.Fatalf("late report %+v", r)
		}
		got, _ = st.Tasks.GetTask(ctx(t), task.ID)
		if got.State != cks.TaskStopped || got.Result != "" {
			t.Fatalf("the wedged executor's result landed: %+v", got)
		}
	})
}

// TestReentryFromTheTop is ADR 0020's key test: stop a task mid-execution,
// change its acceptance criteria and its children, start it; the next
// agent's first recorded decision is derived from the new revision, and the
// first agent's late Complete fails with ErrLeaseLost.
func TestReentryFromTheTop(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st, op := open(t), open(t)
		ctl := op.Tasks
		if _, _, err := st.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "build", Title: "login page",
			AcceptanceCriteria: "a form with user and password"}); err != nil {
			t.Fatal(err)
		}
		claimed, err := st.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "agent-a", Types: []string{"build"}, N: 1, Lease: time.Hour})
		if err != nil || len(claimed) != 1 {
			t.Fatal(claimed, err)
		}
		a := claimed[0]
		oldChild, _, err := st.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "sub", Title: "password form", ParentID: &a.ID})
		if err != nil {
			t.Fatal(err)
		}

		exA := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		started, release := make(chan struct{}), make(chan struct{})
		repA := runAsync(t, exA, a, func(ctx context.Context, at *worker.Attempt) (worker.Result, error) {
			if _, err := at.Decide(ctx, "plan_decomposed", "one child: password form"); err != nil {
				return worker.Result{}, err
			}
			if err := at.SetWorkspace(ctx, "/work/a-1"); err != nil {
				return worker.Result{}, err
			}
			close(started)
			<-release // keeps going on the old criteria, as a slow agent would
			return worker.Result{Output: "built a password form"}, nil
		})
		wait(t, started, "agent A to decide")

		if _, err := ctl.StopTask(ctx(t), ledger.StopParams{ID: a.ID, Actor: "operator", Reason: "wrong criteria", Deadline: time.Second, Wait: false}); err != nil {
			t.Fatal(err)
		}
		criteria := "sign in with a passkey; no passwords"
		up, err := ctl.UpdateTask(ctx(t), ledger.UpdateParams{ID: a.ID, Actor: "operator", Patch: cks.TaskPatch{
			AcceptanceCriteria: &criteria,
			AddChildren:        []cks.NewTask{{Type: "sub", Title: "passkey ceremony"}},
			CancelChildren:     []int64{oldChild.ID},
		}})
		if err != nil || up.Path != cks.UpdateInPlace || up.Task.Revision != 2 || len(up.Children) != 1 {
			t.Fatalf("update = %+v, %v", up, err)
		}
		if started, err := ctl.Start(ctx(t), a.ID, "operator", "criteria fixed"); err != nil ||
			started.State != cks.TaskOpen || started.Restarts != 1 || started.Attempts != 0 {
			t.Fatalf("start = %+v, %v", started, err)
		}

		claimed, err = st.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "agent-b", Types: []string{"build"}, N: 1, Lease: time.Hour})
		if err != nil || len(claimed) != 1 {
			t.Fatal(claimed, err)
		}
		b := claimed[0]
		if b.AcceptanceCriteria != criteria || b.Revision != 2 || b.Attempts != 1 || b.Restarts != 1 {
			t.Fatalf("agent B claimed %+v", b)
		}
		exB := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		var firstB cks.Decision
		rb, err := exB.Run(ctx(t), b, func(ctx context.Context, at *worker.Attempt) (worker.Result, error) {
			prev, err := at.PreviousWorkspaces(ctx)
			if err != nil || len(prev) != 1 || prev[0] != "/work/a-1" {
				return worker.Result{}, errors.New("previous workspaces: " + strings.Join(prev, ","))
			}
			// B re-derives from the top and chooses not to reuse A's tree.
			firstB, err = at.Decide(ctx, "plan_decomposed", "one child: passkey ceremony")
			return worker.Result{Output: "passkey sign-in"}, err
		})
		if err != nil || rb.Outcome != worker.Completed {
			t.Fatalf("agent B: %+v, %v", rb, err)
		}

		// A's late Complete, as the raw ledger call: the lease is gone.
		if _, err := st.Tasks.Complete(ctx(t), a.ID, a.LeaseToken, false, "built a password form"); !errors.Is(err, cks.ErrLeaseLost) {
			t.Fatalf("agent A's late Complete: %v, want ErrLeaseLost", err)
		}
		close(release)
		if ra := report(t, repA); ra.Outcome != worker.Aborted {
			t.Fatalf("agent A report %+v", ra)
		}

		got, err := st.Tasks.GetTask(ctx(t), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != cks.TaskCompleted || got.Result != "passkey sign-in" {
			t.Fatalf("final task %s %q", got.State, got.Result)
		}
		cur := got.Current
		if cur == nil || len(cur.Decisions) != 1 || cur.Decisions[0].ID != firstB.ID ||
			cur.Decisions[0].DerivedFromRevision != 2 || cur.Decisions[0].Actor != "agent-b" {
			t.Fatalf("current attempt %+v", cur)
		}
		if cur.Workspace != "" {
			t.Fatalf("B inherited workspace %q without deciding to", cur.Workspace)
		}
		if len(got.History) != 1 || !got.History[0].Aborted || len(got.History[0].Decisions) != 1 ||
			got.History[0].Decisions[0].DerivedFromRevision != 1 || got.History[0].Workspace != "/work/a-1" {
			t.Fatalf("history %+v", got.History)
		}
		child, _ := st.Tasks.GetTask(ctx(t), oldChild.ID)
		if child.State != cks.TaskCancelled {
			t.Fatalf("old child %s", child.State)
		}
	})
}

// TestUpdateRunningTask: a material update of a running task stops, edits
// and restarts it in one operation, and the executor's abort is confirmed;
// a priority-only update leaves it running.
func TestUpdateRunningTask(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st, op := open(t), open(t)
		ctl := op.Tasks
		task := claim(t, st, cks.NewTask{Title: "t", Description: "v1"}, "agent-1")
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		started := make(chan struct{})
		rep := runAsync(t, ex, task, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			close(started)
			<-ctx.Done()
			return worker.Result{}, ctx.Err()
		})
		wait(t, started, "the resolver to start")
		prio := 9
		live, err := ctl.UpdateTask(ctx(t), ledger.UpdateParams{ID: task.ID, Actor: "operator", Patch: cks.TaskPatch{Priority: &prio}, Deadline: 0, Wait: true})
		if err != nil || live.Path != cks.UpdateLive || live.Task.State != cks.TaskRunning || live.Abort != nil ||
			live.Task.Priority != 9 || live.Task.Revision != 1 {
			t.Fatalf("live update = %+v, %v", live, err)
		}
		desc := "v2"
		res, err := ctl.UpdateTask(ctx(t), ledger.UpdateParams{ID: task.ID, Actor: "operator", Patch: cks.TaskPatch{Description: &desc}, Deadline: 30 * time.Second, Wait: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != cks.UpdateRestart || res.Task.State != cks.TaskOpen || res.Task.Revision != 2 ||
			res.Abort == nil || res.Abort.Outcome != cks.AbortConfirmed {
			t.Fatalf("update = %+v / %+v", res, res.Abort)
		}
		if r := report(t, rep); r.Outcome != worker.Aborted {
			t.Fatalf("report %+v", r)
		}
	})
}

// TestRunOutcomes: the resolver's result decides the write.
func TestRunOutcomes(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		for _, tc := range []struct {
			name    string
			result  worker.Result
			err     error
			outcome worker.Outcome
			state   cks.TaskState
		}{
			{"complete", worker.Result{Output: "ok"}, nil, worker.Completed, cks.TaskCompleted},
			{"review", worker.Result{NeedsReview: true}, nil, worker.NeedsReview, cks.TaskNeedsReview},
			{"retry", worker.Result{}, errors.New("flaky"), worker.Failed, cks.TaskOpen},
			{"permanent", worker.Result{}, worker.Permanent(errors.New("bad input")), worker.Failed, cks.TaskFailed},
		} {
			task := claim(t, st, cks.NewTask{Title: tc.name}, "w")
			r, err := ex.Run(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
				return tc.result, tc.err
			})
			if err != nil || r.Outcome != tc.outcome || r.Task.State != tc.state {
				t.Errorf("%s: %+v, %v", tc.name, r, err)
			}
		}
		if _, err := ex.Run(ctx(t), cks.ClaimedTask{Task: cks.Task{ID: 1}}, nil); !cks.IsFieldError(err, "task") {
			t.Errorf("unclaimed task: %v", err)
		}
	})
}

// TestHeartbeatFindsLostLease: with the change watch unable to help (the
// task is reclaimed by a write that publishes nothing), the heartbeat finds
// the lease gone and cancels the resolver; there is no abort to confirm.
// The heartbeat runs on a fake clock: the reclaim happens while it waits,
// and the next beat, the test's Advance, is the one that finds the loss.
func TestHeartbeatFindsLostLease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		n := cks.NewTask{Type: "build", Title: "short lease"}
		if _, _, err := st.Tasks.Enqueue(ctx(t), n); err != nil {
			t.Fatal(err)
		}
		// A lease long enough to outlive any load: the store reads it on
		// the real clock, and a lease of a second ran out under load 20
		// before the abort watch's first check, which then found it lost
		// and stopped the heartbeat before it ever armed its clock. The
		// test's reclaim takes it all the same (expired before now+1h).
		got, err := st.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"build"}, N: 1, Lease: 30 * time.Minute})
		if err != nil || len(got) != 1 {
			t.Fatal(got, err)
		}
		c := clock.NewFake(backendtest.T0)
		w := &watched{Notifier: st.Changes, checked: make(chan struct{})}
		ex := worker.New(st.Tasks, worker.Options{Heartbeat: 5 * time.Millisecond, Clock: c, Changes: w})
		started := make(chan struct{})
		rep := runAsync(t, ex, got[0], func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			close(started)
			<-ctx.Done()
			return worker.Result{}, ctx.Err()
		})
		wait(t, started, "the resolver to start")
		// The abort watch checks every lease once when its listener
		// connects; a check after the reclaim would find the loss before
		// the heartbeat does (and stop it), so reclaim only after it.
		wait(t, w.checked, "the abort watch's first check")
		// Reclaim as the reaper does once the lease is stale. On Postgres the
		// reaper skips a row a heartbeat holds locked at that instant, so
		// try until it got it.
		deadline := time.Now().Add(time.Minute)
		for {
			n, err := st.Tasks.ReclaimExpired(ctx(t), time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the lease was never reclaimed")
			}
		}
		beat(t, c, 5*time.Millisecond)
		r := report(t, rep)
		if r.Outcome != worker.LeaseLost {
			t.Fatalf("report %+v", r)
		}
	})
}

// TestHeartbeatDeliversAStop: with no change watch (an executor over
// HTTP, whose store is package client's Client), an operator's stop reaches
// the resolver through the heartbeat, which answers the lease not held: the
// resolver is cancelled at the next beat and the executor confirms the
// abort.
func TestHeartbeatDeliversAStop(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		task := claim(t, st, cks.NewTask{Title: "over HTTP"}, "agent-http")
		c := clock.NewFake(backendtest.T0)
		ex := worker.New(st.Tasks, worker.Options{Heartbeat: 5 * time.Millisecond, Clock: c})
		started := make(chan struct{})
		rep := runAsync(t, ex, task, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			close(started)
			<-ctx.Done()
			return worker.Result{}, ctx.Err()
		})
		wait(t, started, "the resolver to start")
		res, err := st.Tasks.StopTask(ctx(t), ledger.StopParams{ID: task.ID, Actor: "operator", Reason: "investigate"})
		if err != nil || res.Abort == nil {
			t.Fatalf("stop: %+v, %v", res, err)
		}
		beat(t, c, 5*time.Millisecond)
		if r := report(t, rep); r.Outcome != worker.Aborted || r.Abort == nil || r.Abort.ID != res.Abort.ID || r.Abort.Outcome != cks.AbortConfirmed {
			t.Fatalf("report %+v, want the stop's abort confirmed", r)
		}
	})
}

// beat waits until the heartbeat waits on c and moves c by d.
func beat(t testing.TB, c *clock.Fake, d time.Duration) {
	t.Helper()
	if err := c.WaitArmed(ctx(t), 1); err != nil {
		t.Fatalf("the heartbeat never waited on the clock: %v", err)
	}
	c.Advance(d)
}

// TestHeartbeatEveryThirdOfTheLease: with no period set, the heartbeat
// renews the lease every third of it (the seeds' rule), timed by the
// executor's clock; the store, on the same clock, renews to now.
func TestHeartbeatEveryThirdOfTheLease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		st := open(t, driver.WithClock(c))
		task := claim(t, st, cks.NewTask{Title: "long"}, "w") // a lease of an hour
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Clock: c})
		started, finish := make(chan struct{}), make(chan struct{})
		rep := runAsync(t, ex, task, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
			close(started)
			<-finish
			return worker.Result{Output: "done"}, nil
		})
		wait(t, started, "the resolver to start")
		renewed := func() time.Time {
			got, err := st.Tasks.GetTask(ctx(t), task.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.LeaseRenewedAt
		}
		if err := c.WaitArmed(ctx(t), 1); err != nil {
			t.Fatal(err)
		}
		c.Advance(20*time.Minute - time.Nanosecond)
		if got := renewed(); !got.Equal(backendtest.T0) {
			t.Fatalf("renewed at %v before a third of the lease passed", got)
		}
		c.Advance(time.Nanosecond)
		for i := 1; i <= 2; i++ {
			// The next wait is armed once this beat's Heartbeat returned.
			if err := c.WaitArmed(ctx(t), 1); err != nil {
				t.Fatal(err)
			}
			if got, want := renewed(), backendtest.T0.Add(time.Duration(i)*20*time.Minute); !got.Equal(want) {
				t.Fatalf("beat %d renewed at %v, want %v", i, got, want)
			}
			c.Advance(20 * time.Minute)
		}
		close(finish)
		if r := report(t, rep); r.Outcome != worker.Completed {
			t.Fatalf("report %+v", r)
		}
	})
}

// watched is a store whose change watch closes checked once the first call
// of its callback (the check a watch makes when its listener connects) has
// returned.
type watched struct {
	*notifier.Notifier
	once    sync.Once
	checked chan struct{}
}

// WatchChanges passes on the watch's first call (the check of every lease
// when its listener connects) and closes checked after it; it swallows the
// later ones — a reconnect of the listener under load calls again, and that
// check would find the lost lease before the heartbeat the test is about
// (seen on Postgres at load 20: the heartbeat, stopped, never armed its
// clock).
func (w *watched) WatchChanges(ctx context.Context, topics []string, f func(string)) error {
	return w.Notifier.WatchChanges(ctx, topics, func(topic string) {
		w.once.Do(func() {
			f(topic)
			close(w.checked)
		})
	})
}

// flaky is a store whose writes of an attempt fail on the connection the
// first times they are made, as across a database restart.
type flaky struct {
	*ledger.Service
	mu    sync.Mutex
	fails map[string]int // op → failures left
	calls map[string]int
}

var errConnClosed = errors.New("conn closed")

func (f *flaky) fail(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.fails[op] > 0 {
		f.fails[op]--
		return errConnClosed
	}
	return nil
}

func (f *flaky) MarkRunning(ctx context.Context, id int64, tok string) (cks.Task, error) {
	if err := f.fail("running"); err != nil {
		return cks.Task{}, err
	}
	return f.Service.MarkRunning(ctx, id, tok)
}

func (f *flaky) Complete(ctx context.Context, id int64, tok string, review bool, result string) (cks.Task, error) {
	if err := f.fail("complete"); err != nil {
		return cks.Task{}, err
	}
	return f.Service.Complete(ctx, id, tok, review, result)
}

// TestWritesOutlastAConnectionLoss: writes of the attempt that fail on the
// connection (not with an answer of the ledger) are made again while the
// lease lasts, so the task completes once, by this run, instead of waiting
// for the reaper and running twice; an answer is not retried.
func TestWritesOutlastAConnectionLoss(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		f := &flaky{Service: st.Tasks, fails: map[string]int{"running": 2, "complete": 3}, calls: map[string]int{}}
		ex := worker.New(f, worker.Options{Heartbeat: noHeartbeat, RetryWait: time.Millisecond, Changes: st.Changes})
		task := claim(t, st, cks.NewTask{Title: "across a restart"}, "w")
		r, err := ex.Run(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{Output: "done"}, nil
		})
		if err != nil || r.Outcome != worker.Completed || r.Task.State != cks.TaskCompleted {
			t.Fatalf("%+v, %v", r, err)
		}
		if f.calls["running"] != 3 || f.calls["complete"] != 4 {
			t.Errorf("calls %v, want running 3 and complete 4", f.calls)
		}
		got, err := st.Tasks.GetTask(ctx(t), task.ID)
		if err != nil {
			t.Fatal(err)
		}
		completions := 0
		for _, e := range got.Events {
			if e.To == cks.TaskCompleted {
				completions++
			}
		}
		if completions != 1 || got.Attempts != 1 {
			t.Errorf("%d COMPLETED events, %d attempts; want 1 and 1", completions, got.Attempts)
		}

		// A lost lease is an answer: one call, no retry.
		lost := claim(t, st, cks.NewTask{Title: "stopped"}, "w")
		if _, err := st.Tasks.StopTask(ctx(t), ledger.StopParams{ID: lost.ID, Actor: "op", Reason: "hold", Deadline: time.Second}); err != nil {
			t.Fatal(err)
		}
		f.calls = map[string]int{}
		if r, err := ex.Run(ctx(t), lost, nil); err != nil || r.Outcome != worker.Aborted || f.calls["running"] != 1 {
			t.Errorf("lost lease: %+v, %v, calls %v", r, err, f.calls)
		}
	})
}

// TestResolverContextCarriesTheTrace (both backends): the resolver's
// context carries the claim's trace context as OpenTelemetry propagation
// reads it (a remote span context of the task's trace and span), and the
// Attempt names it; a task without one gets neither.
func TestResolverContextCarriesTheTrace(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		for _, given := range []string{tp, ""} {
			var sc trace.SpanContext
			var named string
			rep, err := ex.Run(ctx(t), claim(t, st, cks.NewTask{Title: "t", Traceparent: given}, "w"),
				func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
					sc, named = trace.SpanContextFromContext(ctx), a.Traceparent()
					return worker.Result{}, nil
				})
			if err != nil || rep.Outcome != worker.Completed {
				t.Fatalf("run: %+v, %v", rep, err)
			}
			if named != given {
				t.Errorf("Attempt.Traceparent() = %q, want %q", named, given)
			}
			switch {
			case given == "" && sc.IsValid():
				t.Errorf("a task without a traceparent: the context carries %v", sc)
			case given != "" && (sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
				sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() || !sc.IsSampled()):
				t.Errorf("the resolver's span context %v: want the claim's, remote and sampled", sc)
			}
		}
	})
}
