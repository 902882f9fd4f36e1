package sweeper

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/config"
)

// RecentPassesCap is how many of a sweeper's newest passes its status
// answers (SweeperStatus.RecentPasses, read from cks_sweeper_passes):
// enough for a chart of the last stretch and a sweeper card's list.
const RecentPassesCap = 30

// Runner runs one Sweeper every interval on its own goroutine, on a
// lifecycle.Base: Start and Stop serialise on its control lock, held across
// their whole check-then-act including Stop's wait for the loop goroutine to
// exit, so two concurrent Starts yield one loop, two concurrent Stops are
// safe, and a Start racing a Stop resolves to whichever took the lock first.
// When the override tells the loop to stop itself it does so through the
// same lock (Base.StopSelf), giving up on it as soon as a Stop that holds it
// cancels the loop.
type Runner struct {
	sw        Sweeper
	id        string
	interval  time.Duration
	enabled   bool
	overrides Overrides
	clock     clock.Clock
	log       *slog.Logger
	onRun     func(id string, d time.Duration, count int, err error)
	leader    Leadership
	passes    PassRecorder
	hub       string

	base *lifecycle.Base
	poke chan struct{} // one-slot, coalescing wake-up for the wait
	now  chan struct{} // one-slot, coalescing: end the wait and pass now (RunNow)

	// passedAt is when the last pass began (the loop goroutine's alone):
	// a Scheduler's NextPass not after it is spent.
	passedAt time.Time

	mu sync.Mutex // guards st
	st cks.SweeperStatus

	hooks *hooks // test instrumentation; nil outside tests
}

// hooks lets the package's tests observe lock order and live loops.
type hooks struct {
	locked    func(op string) // called holding the control lock: "start", "stop", "selfstop"
	loopEnter func()          // first thing on the loop goroutine
	loopExit  func()          // last thing before the goroutine signals its exit
	changed   func()          // after every status update
	selfStop  func()          // on the loop goroutine, before selfStop takes the control lock
}

// newRunner returns a stopped Runner for s.
func newRunner(s Sweeper, opts Options) (*Runner, error) {
	if s == nil {
		return nil, fmt.Errorf("new runner: nil sweeper")
	}
	id := s.ID()
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("new runner: %w", err)
	}
	if opts.Interval <= 0 {
		return nil, fmt.Errorf("new runner %s: interval must be positive, got %v", id, opts.Interval)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Runner{
		sw:        s,
		id:        id,
		interval:  opts.Interval,
		enabled:   opts.ConfigEnabled,
		overrides: opts.Overrides,
		clock:     opts.Clock,
		log:       opts.Logger.With("sweeper", id),
		onRun:     opts.OnRun,
		leader:    opts.Leader,
		passes:    opts.Passes,
		hub:       opts.Hub,
		poke:      make(chan struct{}, 1),
		now:       make(chan struct{}, 1),
		st: cks.SweeperStatus{
			AgentID:       id,
			Kind:          Kind,
			ConfigEnabled: opts.ConfigEnabled,
			IntervalS:     opts.Interval.Seconds(),
		},
	}
	r.base = lifecycle.New(lifecycle.Config{Run: r.run, Locked: r.locked, Changed: r.changed,
		OnPanic: func(v any, stack []byte) {
			r.log.Error("sweeper loop panicked; stopped", "panic", v, "stack", string(stack))
		}})
	return r, nil
}

// Status returns a snapshot of the sweeper's status.
func (r *Runner) Status() cks.SweeperStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Start starts the loop unless it is already running; the first pass runs at
// once. ctx bounds only the wait for the control lock (and for a previous loop
// that is still exiting); the loop itself keeps ctx's values but not its
// cancellation, and runs until Stop or the override stops it. A config-disabled
// runner is never started: Start returns an error matching ErrDisabledByConfig.
func (r *Runner) Start(ctx context.Context) error {
	if !r.enabled {
		enabled, _ := config.SweeperEnv(r.id)
		return fmt.Errorf("start sweeper %s: %w (enable it with %s=true)", r.id, ErrDisabledByConfig, enabled)
	}
	if err := r.base.Start(ctx); err != nil {
		return fmt.Errorf("start sweeper %s: %w", r.id, err)
	}
	return nil
}

// Stop cancels the loop and waits for its goroutine to exit; it is a no-op
// when the loop is not running. If ctx ends first, Stop returns its error and
// the loop, already cancelled and marked not running, finishes exiting on its
// own; the next Start or Stop waits for it.
func (r *Runner) Stop(ctx context.Context) error {
	if err := r.base.Stop(ctx); err != nil {
		return fmt.Errorf("stop sweeper %s: %w", r.id, err)
	}
	return nil
}

// wake wakes a waiting loop to read its override now instead of at the end of
// the interval, e.g. on a notification that another node recorded a stop. It
// does not trigger an extra pass, never blocks, and coalesces with pokes not
// yet seen.
func (r *Runner) wake() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// locked is called by the base holding the control lock. A self-stop is
// recorded by changed, once it is certain (a later Start may win over it).
func (r *Runner) locked(op lifecycle.Op) {
	if op == lifecycle.OpStopSelf || r.hooks == nil || r.hooks.locked == nil {
		return
	}
	r.hooks.locked(string(op))
}

// changed is called by the base holding the control lock when the loop
// starts or ends, so Status.Running is that of the last operation to take
// the lock.
func (r *Runner) changed(op lifecycle.Op, running bool) {
	if op == lifecycle.OpStopSelf && r.hooks != nil && r.hooks.locked != nil {
		r.hooks.locked(string(op))
	}
	r.update(func(s *cks.SweeperStatus) { s.Running = running })
	switch op {
	case lifecycle.OpStart:
		r.log.Info("sweeper started", "interval", r.interval)
	case lifecycle.OpStop:
		r.log.Info("sweeper stopped")
	case lifecycle.OpStopSelf:
		r.log.Info("sweeper stopped by its override (desired_running=false)")
	}
}

// update applies f to the status under its lock.
func (r *Runner) update(f func(*cks.SweeperStatus)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
	if r.hooks != nil && r.hooks.changed != nil {
		r.hooks.changed()
	}
}

// run is the loop: a pass, a wait, the override check, repeat.
func (r *Runner) run(ctx context.Context) {
	if h := r.hooks; h != nil {
		if h.loopExit != nil {
			defer h.loopExit()
		}
		if h.loopEnter != nil {
			h.loopEnter()
		}
	}
	for {
		r.pass(ctx)
		if !r.waitInterval(ctx) {
			return
		}
	}
}

// RunNow ends a waiting loop's wait so that it reads its override and runs
// its next pass at once (a hub that just became the maintenance leader runs
// what the old leader no longer does). It never blocks and coalesces.
func (r *Runner) RunNow() {
	select {
	case r.now <- struct{}{}:
	default:
	}
}

// pass runs SweepOnce once and records the outcome. A pass cut short by Stop
// is not recorded. A hub that is not the maintenance leader skips it.
func (r *Runner) pass(ctx context.Context) {
	select { // this pass answers every RunNow before it
	case <-r.now:
	default:
	}
	standby := r.leader != nil && !r.leader.IsLeader()
	if r.Status().Standby != standby {
		r.update(func(s *cks.SweeperStatus) { s.Standby = standby })
	}
	if standby {
		return
	}
	start, begin := r.clock.Now(), r.clock.Monotonic()
	r.passedAt = start
	count, err := r.sweepOnce(ctx)
	d := clock.Since(r.clock, begin)
	if ctx.Err() != nil {
		return
	}
	var details any
	if dt, ok := r.sw.(Detailer); ok {
		details = dt.Details()
	}
	ms := float64(d) / float64(time.Millisecond)
	p := cks.SweeperPass{At: start, DurationMS: ms, Count: count, Hub: r.hub}
	if err != nil {
		p.Error = err.Error()
	}
	// Recorded before the status counts it: a reader that saw the run
	// counted finds its row.
	r.record(ctx, p, details)
	r.update(func(s *cks.SweeperStatus) {
		s.Details = details
		s.LastRunAt = &start
		s.LastResultCount = &count
		s.LastRunDurationMS = &ms
		s.LastError = nil
		if err != nil {
			s.LastError = &p.Error
		}
		s.RunCount++
	})
	if err != nil {
		r.log.Warn("sweep failed", "err", err, "duration", d)
	} else {
		r.log.Debug("sweep done", "count", count, "duration", d)
	}
	if r.onRun != nil {
		r.onRun(r.id, d, count, err)
	}
}

// record writes the pass to the runner's PassRecorder, when it has one. A
// failed write is logged and costs the pass nothing: its work is done.
func (r *Runner) record(ctx context.Context, p cks.SweeperPass, details any) {
	if r.passes == nil {
		return
	}
	p.Details = details
	if err := r.passes.RecordPass(ctx, r.id, p); err != nil && ctx.Err() == nil {
		r.log.Warn("recording the sweeper pass failed", "err", err)
	}
}

// sweepOnce calls SweepOnce, turning a panic into an error.
func (r *Runner) sweepOnce(ctx context.Context) (count int, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("sweep panicked", "panic", p, "stack", string(debug.Stack()))
			count, err = 0, fmt.Errorf("%w: %v", ErrSweepPanicked, p)
		}
	}()
	return r.sw.SweepOnce(ctx)
}

// waitInterval waits one interval on the runner's clock (or until the
// sweeper's NextPass, a Scheduler's, when that is sooner), reading the
// override early on every wake and once more at the end. It reports whether
// the loop should run another pass.
func (r *Runner) waitInterval(ctx context.Context) bool {
	wait := r.interval
	if s, ok := r.sw.(Scheduler); ok {
		// A NextPass the last pass already reached is no reason to pass
		// again: the interval stands.
		if at := s.NextPass(); at.After(r.passedAt) {
			wait = min(wait, max(at.Sub(r.clock.Now()), 0))
		}
	}
	t := r.clock.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-r.poke:
			if r.overrideStops(ctx) {
				return false
			}
		case <-r.now:
			return !r.overrideStops(ctx)
		case <-t.C():
			return !r.overrideStops(ctx)
		}
	}
}

// overrideStops reads the override and reports whether the loop must exit:
// because it was cancelled, or because the override is false and the loop
// stopped itself. A failed read is recorded in the status and is not a stop.
// A Start that takes the control lock while the read is in flight wins over
// a false it returns (start_agent writes desired_running=true before it
// starts the local runner, so the read may be stale).
func (r *Runner) overrideStops(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	if r.overrides == nil {
		return false
	}
	starts := r.base.Starts()
	want, err := r.overrides.GetSweeperDesiredRunning(ctx, r.id)
	if ctx.Err() != nil {
		return true // stopped during the read
	}
	if err != nil {
		err = fmt.Errorf("read override: %w", err)
		r.log.Warn("sweeper override read failed; still running", "err", err)
		r.update(func(s *cks.SweeperStatus) {
			msg := err.Error()
			s.LastError = &msg
		})
		return false
	}
	r.update(func(s *cks.SweeperStatus) { s.DesiredRunning = want })
	if want == nil || *want {
		return false
	}
	if r.hooks != nil && r.hooks.selfStop != nil {
		r.hooks.selfStop()
	}
	if !r.base.StopSelf(ctx, starts) {
		r.log.Info("sweeper override is false but a later start wins; still running")
		return false
	}
	return true
}

// validID accepts lower-case letters, digits and underscores, so that every id
// maps to its own environment variable names.
func validID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return fmt.Errorf("%w: %q: expected lower-case letters, digits and underscores", ErrInvalidID, id)
		}
	}
	return nil
}
