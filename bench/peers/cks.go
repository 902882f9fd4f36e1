package peers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/bench"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// cksType is the task type of every cks benchmark task.
const cksType = "peers"

// cksThroughput is `cksbench ledger --concurrent`'s run: enqueue jobs
// (four writers), then workers claim batches of batch and complete the
// batch's tasks concurrently, as River runs each job of a fetch on a
// goroutine of its own.
func cksThroughput(ctx context.Context, st *backend.Backend, jobs, priorities, workers, batch int, progress func(string, int, int)) (enqueue, work time.Duration, err error) {
	r, err := bench.Ledger(ctx, st.Tasks, bench.LedgerConfig{Tasks: jobs, Priorities: priorities, Workers: workers, Batch: batch,
		Concurrent: true, Type: cksType, Progress: progress})
	if err != nil {
		return 0, 0, fmt.Errorf("peers: cks: %w", err)
	}
	return r.EnqueueDuration, r.WorkDuration, nil
}

// agentSettings are the lease and heartbeat of the agent path.
type agentSettings struct {
	// lease is the lease each claim asks for; the executor's heartbeat is a
	// third of it, as `cks agent` sets them.
	lease time.Duration
	// touches is how many lease renewals each remote agent's task sends
	// before it completes (Config.Touches).
	touches int
}

// agentThroughput enqueues jobs as cksThroughput does, then runs workers
// agent loops, each as `cks agent` works: claim one task straight to
// RUNNING, run it through worker.Executor (the lease heartbeat alongside a
// no-op resolver, Complete, all fenced by the lease token). Each loop has an
// executor of its own, as each `cks agent` process has (an executor watches
// for aborts for as long as its loop runs); they share one store handle.
func agentThroughput(ctx context.Context, st *backend.Backend, jobs, priorities, workers int, a agentSettings, progress func(string, int, int)) (enqueue, work time.Duration, err error) {
	enqueue, err = enqueueCks(ctx, st, jobs, priorities, progress)
	if err != nil {
		return 0, 0, err
	}
	noop := func(context.Context, *worker.Attempt) (worker.Result, error) { return worker.Result{Output: "ok"}, nil }
	work, err = workAll(ctx, jobs, workers, progress, func(ctx context.Context, w int, completed func(int64, worker.Report) error) error {
		name := fmt.Sprintf("peers-agent-%d", w)
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: a.lease / 3})
		// As `cks agent`'s claim loop: the abort watch held for the loop,
		// a mark before each claim (no lease read per task).
		release := ex.Watch(ctx)
		defer release()
		for {
			mark := ex.Mark()
			ts, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: name, Types: []string{cksType}, N: 1, Lease: a.lease, Running: true})
			if err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			if len(ts) == 0 {
				return nil
			}
			rep, err := ex.RunWith(ctx, ts[0], noop, worker.RunParams{Mark: mark})
			if err != nil {
				return fmt.Errorf("run task %d: %w", ts[0].ID, err)
			}
			if err := completed(ts[0].ID, rep); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return enqueue, 0, fmt.Errorf("peers: cks agent: %w", err)
	}
	return enqueue, work, nil
}

// workAll runs loop on workers goroutines until each returns (its claims
// found no task left) and times it. A loop reports each task it ran with
// completed, which refuses an outcome other than COMPLETED and a task
// completed twice; workAll then checks that every one of jobs was.
func workAll(ctx context.Context, jobs, workers int, progress func(string, int, int),
	loop func(ctx context.Context, w int, completed func(id int64, rep worker.Report) error) error) (time.Duration, error) {
	var (
		done atomic.Int64
		mu   sync.Mutex
		seen = make(map[int64]bool, jobs)
	)
	completed := func(id int64, rep worker.Report) error {
		if rep.Outcome != worker.Completed {
			return fmt.Errorf("task %d: outcome %s", id, rep.Outcome)
		}
		mu.Lock()
		dup := seen[id]
		seen[id] = true
		mu.Unlock()
		if dup {
			return fmt.Errorf("task %d completed twice", id)
		}
		done.Add(1)
		return nil
	}
	stop := every(500*time.Millisecond, func() { progress("work", int(done.Load()), jobs) })
	start := time.Now()
	err := parallel(ctx, workers, func(ctx context.Context, w int) error { return loop(ctx, w, completed) })
	stop()
	work := time.Since(start)
	if err != nil {
		return 0, err
	}
	progress("work", int(done.Load()), jobs)
	if n := int(done.Load()); n != jobs {
		return 0, fmt.Errorf("completed %d of %d tasks", n, jobs)
	}
	return work, nil
}

// enqueueCks enqueues jobs tasks as bench.Ledger does: four writers, each
// storing EnqueueMany batches of bench.DefaultEnqueueBatch tasks (River's
// side inserts with InsertManyFast in batches of the same size), task i at
// priority i % priorities (cks claims the highest first).
func enqueueCks(ctx context.Context, st *backend.Backend, jobs, priorities int, progress func(string, int, int)) (time.Duration, error) {
	var n atomic.Int64
	stop := every(500*time.Millisecond, func() { progress("enqueue", int(n.Load()), jobs) })
	start := time.Now()
	err := bench.Enqueue(ctx, st.Tasks, jobs, bench.DefaultEnqueueBatch, func(i int) cks.NewTask {
		return cks.NewTask{Type: cksType, Title: fmt.Sprintf("peers %d", i), Priority: i % priorities}
	}, func(k int) { n.Add(int64(k)) })
	stop()
	if err != nil {
		return 0, fmt.Errorf("peers: cks: %w", err)
	}
	progress("enqueue", jobs, jobs)
	return time.Since(start), nil
}

// cksCompleted counts the COMPLETED benchmark tasks, through the store.
func cksCompleted(ctx context.Context, st *backend.Backend) (int, error) {
	return st.Tasks.CountTasks(ctx, cks.TaskFilter{States: []cks.TaskState{"COMPLETED"}, Types: []string{cksType}})
}

// cksLatency runs workers idle claim loops that wait as `cks agent` waits
// (the tasks_ready change notification, or the poll interval), then
// enqueues one task at a time, paced by p, and measures each task's
// enqueue→claim (its claimed_at) and enqueue→work-start: for the agent
// path the resolver's start inside worker.Executor.Run (the task claimed
// straight to RUNNING), otherwise the return of Claim (the task then completed).
func cksLatency(ctx context.Context, st *backend.Backend, agentPath bool, workers int, poll time.Duration, a agentSettings, p pacing) ([]sample, error) {
	type started struct {
		seq     int
		claimed time.Time
		at      time.Time
	}
	ch := make(chan started, 16)
	report := func(title string, claimed, at time.Time) {
		seq, err := strconv.Atoi(strings.TrimPrefix(title, "latency "))
		if err != nil {
			return
		}
		select {
		case ch <- started{seq, claimed, at}:
		default: // nobody waits for it (its sample timed out)
		}
	}
	run, cancel := context.WithCancel(ctx)
	defer cancel()
	// One watch wakes every loop, as each agent process has its own.
	wakes := make([]chan struct{}, workers)
	for i := range wakes {
		wakes[i] = make(chan struct{}, 1)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		st.Changes.WatchChanges(run, []string{cks.TopicTasksReady}, func(string) { //nolint:errcheck // nil when run ends
			for _, w := range wakes {
				select {
				case w <- struct{}{}:
				default:
				}
			}
		})
	}()
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: a.lease / 3})
			errs <- claimLoop(run, st, ex, fmt.Sprintf("peers-latency-%d", w), agentPath, poll, a, wakes[w], report)
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	return p.run(ctx, func(ctx context.Context, seq int) (sample, error) {
		t0 := time.Now()
		if _, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: cksType, Title: fmt.Sprintf("latency %d", seq)}); err != nil {
			return sample{}, fmt.Errorf("peers: cks enqueue: %w", err)
		}
		for {
			select {
			case <-ctx.Done():
				return sample{}, ctx.Err()
			case err := <-errs:
				if err == nil {
					err = errors.New("ended")
				}
				return sample{}, fmt.Errorf("peers: cks claim loop: %w", err)
			case s := <-ch:
				if s.seq != seq {
					continue
				}
				return sample{claim: s.claimed.Sub(t0), start: s.at.Sub(t0)}, nil
			}
		}
	})
}

// claimLoop is one idle worker of cksLatency; it returns nil when ctx ends.
func claimLoop(ctx context.Context, st *backend.Backend, ex *worker.Executor, name string, agentPath bool, poll time.Duration,
	a agentSettings, wake <-chan struct{}, report func(title string, claimed, at time.Time)) error {
	if agentPath {
		// As `cks agent`'s claim loop: the abort watch held for the loop,
		// a mark before each claim.
		release := ex.Watch(ctx)
		defer release()
	}
	for ctx.Err() == nil {
		mark := ex.Mark()
		// The agent path claims as `cks agent` does: straight to RUNNING.
		ts, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: name, Types: []string{cksType}, N: 1, Lease: a.lease, Running: agentPath})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("claim: %w", err)
		}
		if len(ts) == 0 {
			t := time.NewTimer(poll)
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-wake:
			}
			t.Stop()
			continue
		}
		t := ts[0]
		if !agentPath {
			report(t.Title, t.ClaimedAt, time.Now())
			if _, err := st.Tasks.Complete(context.WithoutCancel(ctx), t.ID, t.LeaseToken, false, "ok"); err != nil {
				return fmt.Errorf("complete task %d: %w", t.ID, err)
			}
			continue
		}
		rep, err := ex.RunWith(context.WithoutCancel(ctx), t, func(_ context.Context, at *worker.Attempt) (worker.Result, error) {
			report(at.Task().Title, t.ClaimedAt, time.Now())
			return worker.Result{Output: "ok"}, nil
		}, worker.RunParams{Mark: mark})
		if err != nil {
			return fmt.Errorf("run task %d: %w", t.ID, err)
		}
		if rep.Outcome != worker.Completed {
			return fmt.Errorf("task %d: outcome %s", t.ID, rep.Outcome)
		}
	}
	return nil
}

// parallel runs f on n goroutines and returns the first error, cancelling
// the others.
func parallel(ctx context.Context, n int, f func(ctx context.Context, worker int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			if err := f(ctx, w); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// every calls f every d until the returned stop function is called.
func every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(done); <-finished }
}
