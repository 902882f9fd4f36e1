package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// AbortConfig is one run of the abort benchmark.
type AbortConfig struct {
	// Rounds is how many stops and how many updates are measured (default 200).
	Rounds int
	// Type is the task type used (default "bench-abort").
	Type string
	// Progress, when set, is called after every round with the phase name
	// and how far it got.
	Progress func(phase string, done, total int)
}

// AbortResult is what one run measured. Every latency is one operator call
// as the API makes it (ledger.Service.StopTask or UpdateTask with Wait):
// from the call to its return with a definite outcome.
type AbortResult struct {
	Rounds int `json:"rounds"`
	// Stop: stop of a RUNNING task until the executor's abort is confirmed.
	StopP50 time.Duration `json:"stop_confirmed_p50_ns"`
	StopP99 time.Duration `json:"stop_confirmed_p99_ns"`
	// Update: material update of a RUNNING task (stop → apply → start)
	// until the abort is confirmed.
	UpdateP50 time.Duration `json:"update_running_p50_ns"`
	UpdateP99 time.Duration `json:"update_running_p99_ns"`
	// Live: priority-only update of a RUNNING task (no stop).
	LiveP50 time.Duration `json:"update_live_p50_ns"`
	LiveP99 time.Duration `json:"update_live_p99_ns"`
}

// Abort measures how long an operator waits for a running executor to
// confirm an abort. The executor runs on agent (a handle of its own, as an
// agent process would have) with a heartbeat far longer than the run, so
// every abort reaches it through the change notification (Postgres NOTIFY,
// SQLite's change poll); the operator acts through op.
func Abort(ctx context.Context, agent, op *backend.Backend, cfg AbortConfig) (AbortResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 200
	}
	if cfg.Type == "" {
		cfg.Type = "bench-abort"
	}
	ex := worker.New(agent.Tasks, worker.Options{Heartbeat: time.Hour, Changes: agent.Changes})
	ctl := op.Tasks
	res := AbortResult{Rounds: cfg.Rounds}
	var stops, updates, lives []time.Duration
	for i := range cfg.Rounds {
		d, err := abortRound(ctx, agent, ex, cfg.Type, func(t cks.Task) (*cks.Abort, error) {
			r, err := ctl.StopTask(ctx, ledger.StopParams{ID: t.ID, Actor: "bench", Reason: "bench stop", Deadline: 30 * time.Second, Wait: true})
			return r.Abort, err
		})
		if err != nil {
			return res, fmt.Errorf("stop round %d: %w", i, err)
		}
		stops = append(stops, d)
		if cfg.Progress != nil {
			cfg.Progress("stop", i+1, cfg.Rounds)
		}
	}
	for i := range cfg.Rounds {
		var live time.Duration
		d, err := abortRound(ctx, agent, ex, cfg.Type, func(t cks.Task) (*cks.Abort, error) {
			prio := i % cks.MaxPriority
			begin := time.Now()
			if _, err := ctl.UpdateTask(ctx, ledger.UpdateParams{ID: t.ID, Actor: "bench", Patch: cks.TaskPatch{Priority: &prio}, Wait: true}); err != nil {
				return nil, err
			}
			live = time.Since(begin)
			desc := fmt.Sprintf("revision for round %d", i)
			r, err := ctl.UpdateTask(ctx, ledger.UpdateParams{ID: t.ID, Actor: "bench", Patch: cks.TaskPatch{Description: &desc}, Deadline: 30 * time.Second, Wait: true})
			if err == nil && r.Path != cks.UpdateRestart {
				err = fmt.Errorf("update took path %s, want %s", r.Path, cks.UpdateRestart)
			}
			// The restarted task is OPEN again; take it out of the way.
			if err == nil {
				_, err = op.Tasks.Cancel(ctx, t.ID, "bench", "round over")
			}
			return r.Abort, err
		})
		if err != nil {
			return res, fmt.Errorf("update round %d: %w", i, err)
		}
		updates = append(updates, d-live)
		lives = append(lives, live)
		if cfg.Progress != nil {
			cfg.Progress("update", i+1, cfg.Rounds)
		}
	}
	for _, l := range [][]time.Duration{stops, updates, lives} {
		slices.Sort(l)
	}
	res.StopP50, res.StopP99 = percentile(stops, 0.50), percentile(stops, 0.99)
	res.UpdateP50, res.UpdateP99 = percentile(updates, 0.50), percentile(updates, 0.99)
	res.LiveP50, res.LiveP99 = percentile(lives, 0.50), percentile(lives, 0.99)
	return res, nil
}

// abortRound enqueues and claims one task, runs it on ex with a resolver
// that works until aborted, and times act, which must abort it and return
// the abort with a confirmed outcome.
func abortRound(ctx context.Context, agent *backend.Backend, ex *worker.Executor, typ string, act func(cks.Task) (*cks.Abort, error)) (time.Duration, error) {
	if _, _, err := agent.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, Title: "abort round"}); err != nil {
		return 0, err
	}
	claimed, err := agent.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "bench-executor", Types: []string{typ}, N: 1, Lease: time.Hour})
	if err != nil {
		return 0, err
	}
	if len(claimed) != 1 {
		return 0, fmt.Errorf("claimed %d tasks, want 1", len(claimed))
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		r, err := ex.Run(ctx, claimed[0], func(rctx context.Context, _ *worker.Attempt) (worker.Result, error) {
			close(started)
			<-rctx.Done()
			return worker.Result{}, rctx.Err()
		})
		if err == nil && r.Outcome != worker.Aborted {
			err = fmt.Errorf("executor outcome %s, want %s", r.Outcome, worker.Aborted)
		}
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		return 0, fmt.Errorf("executor ended before it started: %v", err)
	}
	begin := time.Now()
	ab, err := act(claimed[0].Task)
	d := time.Since(begin)
	if rerr := <-done; err == nil {
		err = rerr
	}
	if err == nil && (ab == nil || ab.Outcome != cks.AbortConfirmed) {
		err = fmt.Errorf("abort %+v, want %s", ab, cks.AbortConfirmed)
	}
	return d, err
}
