package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// DelayedConfig is one run of the delayed-task benchmark.
type DelayedConfig struct {
	// Tasks is how many delayed tasks are measured (default 100).
	Tasks int
	// Spacing is the time between two tasks' run_after (default 50ms), so
	// that one task at a time becomes due on an otherwise idle ledger.
	Spacing time.Duration
	// Lead is how far ahead of its creation the first task is due
	// (default 1s).
	Lead time.Duration
	// PollInterval is the agent's (default 5s, `cks agent`'s): the longest
	// one claim waits in the ledger before it claims again.
	PollInterval time.Duration
	// Type is the task type used (default "bench-delayed").
	Type string
}

// DelayedResult is what one run measured: the lateness of each task's
// claim, from its run_after to its claimed_at (both the ledger's clock).
type DelayedResult struct {
	Tasks       int           `json:"tasks"`
	LatenessP50 time.Duration `json:"lateness_p50_ns"`
	LatenessP99 time.Duration `json:"lateness_p99_ns"`
	LatenessMax time.Duration `json:"lateness_max_ns"`
	// Early counts the claims before their run_after: any is a bug.
	Early int `json:"early"`
}

// Delayed measures how late an idle `cks agent` claim loop (agents.Run on
// agent, as `cks agent` runs on the database) claims delayed tasks that op
// creates with run_after: the agent's claims wait in the ledger's waiting
// room, which wakes them when the next task becomes due.
func Delayed(ctx context.Context, agent, op *backend.Backend, cfg DelayedConfig) (DelayedResult, error) {
	if cfg.Tasks <= 0 {
		cfg.Tasks = 100
	}
	if cfg.Spacing <= 0 {
		cfg.Spacing = 50 * time.Millisecond
	}
	if cfg.Lead <= 0 {
		cfg.Lead = time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.Type == "" {
		cfg.Type = "bench-delayed"
	}
	set, err := config.DefaultAgent("enrichment")
	if err != nil {
		return DelayedResult{}, err
	}
	set.Types, set.PollInterval = []string{cfg.Type}, cfg.PollInterval
	late := make(chan time.Duration, cfg.Tasks)
	resolve := func(_ context.Context, a *worker.Attempt) (worker.Result, error) {
		t := a.Task()
		var p struct {
			Due time.Time `json:"due"`
		}
		if err := json.Unmarshal(t.Payload, &p); err != nil {
			return worker.Result{}, worker.Permanent(err)
		}
		late <- t.ClaimedAt.Sub(p.Due)
		return worker.Result{Output: "ok"}, nil
	}
	actx, stop := context.WithCancel(ctx)
	defer stop()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- agents.Run(actx, agents.ServicesOf(agent), set, resolve, agents.Options{
			Logger: slog.New(slog.DiscardHandler), Started: func(*liveness.Reporter) { close(started) }})
	}()
	select {
	case <-started:
	case err := <-done:
		return DelayedResult{}, fmt.Errorf("agent: %w", err)
	}
	first := time.Now().Add(cfg.Lead)
	for i := range cfg.Tasks {
		due := first.Add(time.Duration(i) * cfg.Spacing).UTC()
		payload, _ := json.Marshal(map[string]time.Time{"due": due})
		if _, _, err := op.Tasks.Enqueue(ctx, cks.NewTask{Type: cfg.Type, Title: "delayed", RunAfter: due, Payload: payload}); err != nil {
			return DelayedResult{}, err
		}
	}
	res := DelayedResult{Tasks: cfg.Tasks}
	got := make([]time.Duration, 0, cfg.Tasks)
	limit := time.After(cfg.Lead + time.Duration(cfg.Tasks)*cfg.Spacing + time.Minute)
	for len(got) < cfg.Tasks {
		select {
		case d := <-late:
			if d < 0 {
				res.Early++
			}
			got = append(got, d)
		case <-limit:
			return res, fmt.Errorf("delayed: %d of %d tasks claimed a minute after the last was due", len(got), cfg.Tasks)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	stop()
	if err := <-done; err != nil {
		return res, fmt.Errorf("agent: %w", err)
	}
	slices.Sort(got)
	res.LatenessP50, res.LatenessP99, res.LatenessMax = percentile(got, 0.50), percentile(got, 0.99), got[len(got)-1]
	return res, nil
}
