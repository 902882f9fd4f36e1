package schedule

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
)

// Leader tells whether this hub leads (leader.Elector).
type Leader interface {
	IsLeader() bool
}

// Watcher delivers change notifications (notifier.Notifier).
type Watcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	// Leader, when set, is asked before every round: only the leader
	// fires. Nil fires always (a lone process).
	Leader Leader
	// Changes, when set, wakes the runner when a schedule changes on any
	// hub (cks.TopicSchedules), so a new or resumed schedule's first slot
	// gets its timer at once.
	Changes Watcher
	Clock   clock.Clock
	Logger  *slog.Logger
	// Retry is how long the runner waits after a failed round (default
	// 5 s); Idle is how long it waits with nothing to fire, or while
	// another hub leads, unless woken (default 1 min: a missed wake-up is
	// made good by then).
	Retry, Idle time.Duration
	// OnRound, if set, is called after each round with the next slot it
	// set its timer to (zero: none) and its error (for tests and metrics).
	OnRound func(next time.Time, err error)
}

// Runner fires the due slots of every schedule on the leader hub: one
// round (fireDue) when it starts, when woken (Wake: the hub became the
// leader, a schedule changed) and when its timer reaches the next slot —
// a timer to the next slot, never a poll of the table.
type Runner struct {
	svc  *Service
	cfg  RunnerConfig
	base *lifecycle.Base
	wake chan struct{}
}

// NewRunner returns a stopped Runner over svc.
func NewRunner(svc *Service, cfg RunnerConfig) *Runner {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 5 * time.Second
	}
	if cfg.Idle <= 0 {
		cfg.Idle = time.Minute
	}
	r := &Runner{svc: svc, cfg: cfg, wake: make(chan struct{}, 1)}
	r.base = lifecycle.New(lifecycle.Config{Run: r.run, OnPanic: func(v any, stack []byte) {
		cfg.Logger.Error("schedule runner panicked; no schedule fires on this hub", "panic", v, "stack", string(stack))
	}})
	return r
}

// Start starts the runner's loop.
func (r *Runner) Start(ctx context.Context) error { return r.base.Start(ctx) }

// Stop ends the loop and waits for it (a fire in flight commits or rolls
// back as a whole).
func (r *Runner) Stop(ctx context.Context) error { return r.base.Stop(ctx) }

// Wake makes the runner run a round now.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if r.cfg.Changes != nil {
		wg.Go(func() {
			err := r.cfg.Changes.WatchChanges(ctx, []string{cks.TopicSchedules}, func(string) { r.Wake() })
			if err != nil && ctx.Err() == nil {
				r.cfg.Logger.Warn("schedule watch ended; schedules changed on other hubs are seen at the next slot or idle wait", "err", err)
			}
		})
	}
	for ctx.Err() == nil {
		wait := r.cfg.Idle
		if r.cfg.Leader == nil || r.cfg.Leader.IsLeader() {
			next, err := r.svc.fireDue(ctx)
			if r.cfg.OnRound != nil {
				r.cfg.OnRound(next, err)
			}
			switch {
			case err != nil && ctx.Err() == nil:
				r.cfg.Logger.Warn("firing schedules", "err", err)
				wait = r.cfg.Retry
			case !next.IsZero():
				wait = min(max(next.Sub(r.cfg.Clock.Now()), 0), r.cfg.Idle)
			}
		}
		clock.Sleep(ctx, r.cfg.Clock, wait, r.wake) //nolint:errcheck // woken or timed out alike: a round
	}
}
