package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// LivenessConfig is one run of the liveness benchmark.
type LivenessConfig struct {
	// History is how many historical instance rows are written first
	// (default 100,000): ADR-014 keeps every instance's row.
	History int
	// Samples is how many timed calls of each kind are made (default 500;
	// a tenth of that for the full list).
	Samples int
	// Progress, when set, is called about every half second while the
	// history is written, and at its end.
	Progress func(phase string, done, total int)
}

// LivenessResult is what one run measured.
type LivenessResult struct {
	History int `json:"history"`
	// Heartbeat is one UpsertAgentLiveness of a live instance.
	HeartbeatP50 time.Duration `json:"heartbeat_p50_ns"`
	HeartbeatP99 time.Duration `json:"heartbeat_p99_ns"`
	// ReadBack is GetAgentLiveness of the own row (the ADR-016 tick).
	ReadBackP50 time.Duration `json:"read_back_p50_ns"`
	ReadBackP99 time.Duration `json:"read_back_p99_ns"`
	// Status is process_status: the newest instance of one kind.
	StatusP50 time.Duration `json:"process_status_p50_ns"`
	StatusP99 time.Duration `json:"process_status_p99_ns"`
	// List is list_processes: every row, each with its status.
	ListP50 time.Duration `json:"list_processes_p50_ns"`
	ListP99 time.Duration `json:"list_processes_p99_ns"`
}

// Liveness writes cfg.History old instance rows spread over the known
// kinds, then times a live instance's heartbeat and read-back, and
// process_status and list_processes over that history.
func Liveness(ctx context.Context, st *liveness.Service, cfg LivenessConfig) (LivenessResult, error) {
	if cfg.History <= 0 {
		cfg.History = 100_000
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 500
	}
	res := LivenessResult{History: cfg.History}
	kinds := liveness.KnownKinds()
	base := time.Now().Add(-time.Duration(cfg.History) * time.Second).UTC()
	var done atomic.Int64
	if cfg.Progress != nil {
		stop := ticker(func() { cfg.Progress("history", int(done.Load()), cfg.History) })
		for i := range cfg.History {
			if err := st.UpsertAgentLiveness(ctx, oldRow(i, kinds, base)); err != nil {
				stop()
				return res, err
			}
			done.Store(int64(i + 1))
		}
		stop()
		cfg.Progress("history", cfg.History, cfg.History)
	} else {
		for i := range cfg.History {
			if err := st.UpsertAgentLiveness(ctx, oldRow(i, kinds, base)); err != nil {
				return res, err
			}
		}
	}
	live := cks.AgentLiveness{InstanceID: liveness.NewInstanceID(), ProcessKind: "critic", Hostname: "bench",
		PID: 1, LivenessIntervalS: 30, StartedAt: time.Now().UTC()}
	svc := st
	timed := func(n int, f func() error) (p50, p99 time.Duration, err error) {
		ds := make([]time.Duration, 0, n)
		for range n {
			begin := time.Now()
			if err := f(); err != nil {
				return 0, 0, err
			}
			ds = append(ds, time.Since(begin))
		}
		slices.Sort(ds)
		return percentile(ds, 0.5), percentile(ds, 0.99), nil
	}
	var err error
	if res.HeartbeatP50, res.HeartbeatP99, err = timed(cfg.Samples, func() error {
		live.LastHeartbeatAt = time.Now().UTC()
		return st.UpsertAgentLiveness(ctx, live)
	}); err != nil {
		return res, err
	}
	if res.ReadBackP50, res.ReadBackP99, err = timed(cfg.Samples, func() error {
		_, err := st.GetAgentLiveness(ctx, live.InstanceID)
		return err
	}); err != nil {
		return res, err
	}
	if res.StatusP50, res.StatusP99, err = timed(cfg.Samples, func() error {
		p, err := svc.ProcessStatus(ctx, "critic")
		if err == nil && p.InstanceID != live.InstanceID {
			err = fmt.Errorf("process_status found %s, want the live instance %s", p.InstanceID, live.InstanceID)
		}
		return err
	}); err != nil {
		return res, err
	}
	res.ListP50, res.ListP99, err = timed(max(cfg.Samples/10, 1), func() error {
		ps, err := svc.ListProcesses(ctx)
		if err == nil && len(ps) != cfg.History+1 {
			err = fmt.Errorf("list_processes returned %d rows, want %d", len(ps), cfg.History+1)
		}
		return err
	})
	return res, err
}

// oldRow is the i-th historical instance: started i seconds after base,
// exited gracefully long ago.
func oldRow(i int, kinds []string, base time.Time) cks.AgentLiveness {
	at := base.Add(time.Duration(i) * time.Second)
	return cks.AgentLiveness{InstanceID: fmt.Sprintf("history-%07d", i), ProcessKind: kinds[i%len(kinds)],
		Hostname: "bench", PID: 1000 + i%30000, LivenessIntervalS: 30, StartedAt: at, LastHeartbeatAt: at, ExitedAt: at}
}

// StopConfig is one run of the process stop benchmark.
type StopConfig struct {
	// Rounds is how many processes are started and stopped (default 20).
	Rounds int
	// Launch starts one agent process and returns, once its first
	// heartbeat is written, its instance id and a function that waits for
	// the process to exit.
	Launch func(ctx context.Context) (instanceID string, wait func() error, err error)
	// Settle is how long a launched agent runs before its stop is requested:
	// a random time in [Settle, 2×Settle), so the request meets the agent in
	// its steady state (watch established) at a random point of its poll
	// and tick cycles. Default 500 ms.
	Settle time.Duration
	// Progress, when set, is called after every round.
	Progress func(done, total int)
}

// StopResult is the latency from a stop request to the process's exit.
type StopResult struct {
	Rounds int           `json:"rounds"`
	P50    time.Duration `json:"stop_p50_ns"`
	P99    time.Duration `json:"stop_p99_ns"`
	Max    time.Duration `json:"stop_max_ns"`
}

// ProcessStop measures remote stop (ADR-016): for each round it launches an
// idle agent process, requests its stop through st, and times until the
// process has exited (drained, written its final heartbeat, closed its
// store).
func ProcessStop(ctx context.Context, st *liveness.Service, cfg StopConfig) (StopResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 20
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 500 * time.Millisecond
	}
	res := StopResult{Rounds: cfg.Rounds}
	ds := make([]time.Duration, 0, cfg.Rounds)
	for i := range cfg.Rounds {
		id, wait, err := cfg.Launch(ctx)
		if err != nil {
			return res, fmt.Errorf("round %d: launch: %w", i, err)
		}
		settle := time.NewTimer(cfg.Settle + rand.N(cfg.Settle))
		select {
		case <-ctx.Done():
			settle.Stop()
			wait() //nolint:errcheck // the launcher kills it on ctx
			return res, ctx.Err()
		case <-settle.C:
		}
		begin := time.Now()
		found, err := st.RequestAgentStop(ctx, id)
		if err == nil && !found {
			err = fmt.Errorf("no liveness row for instance %s", id)
		}
		if err != nil {
			wait() //nolint:errcheck // the launcher kills it on ctx
			return res, fmt.Errorf("round %d: stop: %w", i, err)
		}
		if err := wait(); err != nil {
			return res, fmt.Errorf("round %d: the agent exited with %w", i, err)
		}
		ds = append(ds, time.Since(begin))
		if cfg.Progress != nil {
			cfg.Progress(i+1, cfg.Rounds)
		}
	}
	slices.Sort(ds)
	res.P50, res.P99, res.Max = percentile(ds, 0.5), percentile(ds, 0.99), ds[len(ds)-1]
	return res, nil
}
