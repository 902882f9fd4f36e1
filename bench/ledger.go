// Package bench holds cks's load benchmarks, run by cmd/cksbench. They drive a
// real store the way a fleet would and report throughput and latency; they
// assert nothing.
package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// LedgerConfig is one run of the ledger benchmark.
type LedgerConfig struct {
	// Tasks is how many tasks are enqueued and then worked (default 100,000).
	Tasks int
	// Workers is how many concurrent claimers work the queue (default 4).
	Workers int
	// Batch is how many tasks one claim leases at most (default 10).
	Batch int
	// EnqueueBatch is how many tasks one EnqueueMany call stores (default
	// 1,000, as River's InsertMany batches in the side-by-side run); 1
	// enqueues one task per Enqueue call.
	EnqueueBatch int
	// Concurrent completes the tasks of one claim each on its own goroutine,
	// as River runs every job of a fetch in a goroutine of its own; then
	// Workers × Batch tasks are in flight and the completer can group as
	// many. Without it a worker completes its batch one task after another.
	Concurrent bool
	// Priorities is how many priority levels the tasks cycle through: task
	// i gets priority i % Priorities (default 1: every task the same, as
	// River's benchmark inserts its jobs). With more, the claims, which take
	// the highest priority first, skip through the table in strides of
	// Priorities, so each commit writes more pages for the same tasks.
	Priorities int
	// Keys, when set, gives task i the concurrency key "k:(i mod Keys)"
	// (issue 42); MaxRunning, when set too, caps every such key at
	// MaxRunning running tasks with one limit of pattern "k:*". A claim
	// that finds nothing then waits for a place to free (wait_s), and the
	// workers stop once every task is completed.
	Keys, MaxRunning int
	// Type is the task type used (default "bench").
	Type string
	// Progress, when set, is called about every half second and at the end of
	// each phase with the phase name and how far it got.
	Progress func(phase string, done, total int)
}

// LedgerResult is what one run measured.
type LedgerResult struct {
	Tasks           int           `json:"tasks"`
	Workers         int           `json:"workers"`
	Batch           int           `json:"batch"`
	EnqueueDuration time.Duration `json:"enqueue_duration_ns"`
	WorkDuration    time.Duration `json:"work_duration_ns"`
	// EnqueueRate and CompleteRate are tasks per second.
	EnqueueRate  float64 `json:"enqueue_per_s"`
	CompleteRate float64 `json:"complete_per_s"`
	Claims       int     `json:"claims"`
	// ClaimP50 and ClaimP99 are claim-call latencies.
	ClaimP50 time.Duration `json:"claim_p50_ns"`
	ClaimP99 time.Duration `json:"claim_p99_ns"`
}

// Ledger enqueues cfg.Tasks tasks into st, then lets cfg.Workers workers claim
// them in batches and complete each, until none is left. Every task must end
// COMPLETED exactly once; anything else is an error.
func Ledger(ctx context.Context, st *ledger.Service, cfg LedgerConfig) (LedgerResult, error) {
	if cfg.Tasks <= 0 {
		cfg.Tasks = 100_000
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 10
	}
	if cfg.Type == "" {
		cfg.Type = "bench"
	}
	if cfg.EnqueueBatch <= 0 {
		cfg.EnqueueBatch = DefaultEnqueueBatch
	}
	if cfg.Priorities <= 0 {
		cfg.Priorities = 1
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	res := LedgerResult{Tasks: cfg.Tasks, Workers: cfg.Workers, Batch: cfg.Batch}

	var enqueued atomic.Int64
	stopTicker := ticker(func() { progress("enqueue", int(enqueued.Load()), cfg.Tasks) })
	start := time.Now()
	if cfg.MaxRunning > 0 {
		if _, err := st.SetLimit(ctx, ledger.SetLimitParams{Actor: "bench",
			LimitInput: cks.LimitInput{Name: "bench", Pattern: "k:*", MaxRunning: cfg.MaxRunning}}); err != nil {
			return res, err
		}
	}
	err := Enqueue(ctx, st, cfg.Tasks, cfg.EnqueueBatch, func(i int) cks.NewTask {
		n := cks.NewTask{Type: cfg.Type, Title: fmt.Sprintf("bench %d", i), Priority: i % cfg.Priorities}
		if cfg.Keys > 0 {
			n.ConcurrencyKeys = []string{fmt.Sprintf("k:%d", i%cfg.Keys)}
		}
		return n
	}, func(n int) { enqueued.Add(int64(n)) })
	stopTicker()
	if err != nil {
		return res, err
	}
	res.EnqueueDuration = time.Since(start)
	progress("enqueue", cfg.Tasks, cfg.Tasks)

	var (
		completed atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
		seen      = make(map[int64]bool, cfg.Tasks)
	)
	stopTicker = ticker(func() { progress("work", int(completed.Load()), cfg.Tasks) })
	start = time.Now()
	err = parallel(ctx, cfg.Workers, func(ctx context.Context, w int) error {
		worker := fmt.Sprintf("bench-worker-%d", w)
		var mine []time.Duration
		defer func() {
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
		var wait time.Duration
		for {
			t0 := time.Now()
			ts, err := st.Claim(ctx, ledger.ClaimParams{Worker: worker, Types: []string{cfg.Type}, N: cfg.Batch,
				Lease: time.Hour, Wait: wait})
			mine = append(mine, time.Since(t0))
			if err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			if len(ts) == 0 {
				if cfg.MaxRunning == 0 || completed.Load() >= int64(cfg.Tasks) {
					return nil
				}
				// Tasks left OPEN are of keys at their cap: wait for a
				// place to free. None left: the others finish theirs.
				open, err := st.CountTasks(ctx, cks.TaskFilter{States: []cks.TaskState{cks.TaskOpen}})
				if err != nil || open == 0 {
					return err
				}
				wait = time.Second
				continue
			}
			wait = 0
			complete := func(t cks.ClaimedTask) error {
				if _, err := st.Complete(ctx, t.ID, t.LeaseToken, false, "ok"); err != nil {
					return fmt.Errorf("complete task %d: %w", t.ID, err)
				}
				mu.Lock()
				dup := seen[t.ID]
				seen[t.ID] = true
				mu.Unlock()
				if dup {
					return fmt.Errorf("task %d completed twice", t.ID)
				}
				completed.Add(1)
				return nil
			}
			if !cfg.Concurrent {
				for _, t := range ts {
					if err := complete(t); err != nil {
						return err
					}
				}
				continue
			}
			errs := make([]error, len(ts))
			var wg sync.WaitGroup
			for i, t := range ts {
				wg.Go(func() { errs[i] = complete(t) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return err
			}
		}
	})
	stopTicker()
	if err != nil {
		return res, err
	}
	res.WorkDuration = time.Since(start)
	progress("work", int(completed.Load()), cfg.Tasks)
	if n := int(completed.Load()); n != cfg.Tasks {
		return res, fmt.Errorf("completed %d of %d tasks", n, cfg.Tasks)
	}
	res.EnqueueRate = float64(cfg.Tasks) / res.EnqueueDuration.Seconds()
	res.CompleteRate = float64(cfg.Tasks) / res.WorkDuration.Seconds()
	slices.Sort(latencies)
	res.Claims = len(latencies)
	res.ClaimP50 = percentile(latencies, 0.50)
	res.ClaimP99 = percentile(latencies, 0.99)
	return res, nil
}

// DefaultEnqueueBatch is LedgerConfig.EnqueueBatch's default.
const DefaultEnqueueBatch = 1000

// Enqueue stores tasks tasks, the i-th made by mk, with four writers (on
// Postgres that is how a fleet fills the queue; on SQLite the one writer
// connection serialises them anyway), each in EnqueueMany calls of batch
// tasks (batch 1: one Enqueue per task), and calls done with the count of
// each call's tasks once it returned.
func Enqueue(ctx context.Context, st *ledger.Service, tasks, batch int, mk func(i int) cks.NewTask, done func(n int)) error {
	const writers = 4
	batch = max(batch, 1)
	return parallel(ctx, writers, func(ctx context.Context, w int) error {
		// Writer w takes the chunks w, w+writers, …, of batch tasks each.
		for from := w * batch; from < tasks; from += writers * batch {
			to := min(from+batch, tasks)
			if batch == 1 {
				if _, _, err := st.Enqueue(ctx, mk(from)); err != nil {
					return fmt.Errorf("enqueue: %w", err)
				}
				done(1)
				continue
			}
			ns := make([]cks.NewTask, 0, to-from)
			for i := from; i < to; i++ {
				ns = append(ns, mk(i))
			}
			if _, err := st.EnqueueMany(ctx, ns); err != nil {
				return fmt.Errorf("enqueue: %w", err)
			}
			done(to - from)
		}
		return nil
	})
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// parallel runs f on n goroutines and returns the first error, cancelling the
// others.
func parallel(ctx context.Context, n int, f func(ctx context.Context, worker int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx, w); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// ticker calls f every half second, on a lifecycle.Base, until the
// returned stop function is called; stop waits for the loop to end.
func ticker(f func()) (stop func()) {
	b := lifecycle.New(lifecycle.Config{Run: func(ctx context.Context) {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f()
			}
		}
	}})
	// Without an Init or a deadline, Start and Stop return nil.
	b.Start(context.Background())                  //nolint:errcheck
	return func() { b.Stop(context.Background()) } //nolint:errcheck
}
