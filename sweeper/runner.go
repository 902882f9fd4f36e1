package sweeper

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks/clock"
)

// Runner runs one Sweeper every interval on its own goroutine.
//
// Start and Stop serialise on one control lock held across their whole
// check-then-act, including Stop's wait for the loop goroutine to exit: two
// concurrent Starts yield one loop, two concurrent Stops are safe, and a Start
// racing a Stop resolves to whichever took the lock first. The lock is a
// one-slot channel rather than a sync.Mutex so that the loop, when the override
// tells it to stop itself, can give up acquiring it as soon as a Stop that
// holds it cancels the loop; see selfStop.
type Runner struct {
	sw        Sweeper
	id        string
	interval  time.Duration
	enabled   bool
	overrides Overrides
	clock     clock.Clock
	log       *slog.Logger
	onRun     func(id string, d time.Duration, count int, err error)

	ctl  chan struct{} // the control lock: full while held
	loop *loop         // the current loop or nil; guarded by ctl
	// starts counts Start calls that took the control lock. It is written
	// under ctl and read by the loop without it, to learn whether a Start came
	// after the override read that would stop the loop.
	starts atomic.Uint64
	poke   chan struct{} // one-slot, coalescing wake-up for the wait

	mu sync.Mutex // guards st
	st Status

	hooks *hooks // test instrumentation; nil outside tests
}

// loop is one run of the loop goroutine.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has exited
	// ending is set, under the control lock, once the loop has been cancelled
	// by Stop or has stopped itself: the goroutine is exiting or has exited,
	// and the next Start must wait for done before starting another.
	ending bool
}

// hooks lets the package's tests observe lock order and live loops.
type hooks struct {
	locked    func(op string) // called holding the control lock: "start", "stop", "selfstop"
	loopEnter func()          // first thing on the loop goroutine
	loopExit  func()          // last thing before the goroutine signals its exit
	changed   func()          // after every status update
	selfStop  func()          // on the loop goroutine, before selfStop takes the control lock
}

// NewRunner returns a stopped Runner for s.
func NewRunner(s Sweeper, opts Options) (*Runner, error) {
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
	return &Runner{
		sw:        s,
		id:        id,
		interval:  opts.Interval,
		enabled:   opts.ConfigEnabled,
		overrides: opts.Overrides,
		clock:     opts.Clock,
		log:       opts.Logger.With("sweeper", id),
		onRun:     opts.OnRun,
		ctl:       make(chan struct{}, 1),
		poke:      make(chan struct{}, 1),
		st: Status{
			AgentID:       id,
			Kind:          Kind,
			ConfigEnabled: opts.ConfigEnabled,
			IntervalS:     opts.Interval.Seconds(),
		},
	}, nil
}

// ID returns the sweeper's id.
func (r *Runner) ID() string { return r.id }

// ConfigEnabled reports whether configuration enables the sweeper.
func (r *Runner) ConfigEnabled() bool { return r.enabled }

// Interval returns the wait between passes.
func (r *Runner) Interval() time.Duration { return r.interval }

// Status returns a snapshot of the sweeper's status.
func (r *Runner) Status() Status {
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
		return fmt.Errorf("start sweeper %s: %w (enable it with %s=true)", r.id, ErrDisabledByConfig, envName(r.id, "ENABLED"))
	}
	if err := r.lock(ctx); err != nil {
		return fmt.Errorf("start sweeper %s: %w", r.id, err)
	}
	defer r.unlock()
	r.hook("start")
	r.starts.Add(1)
	if l := r.loop; l != nil {
		if !l.ending {
			return nil // already running
		}
		if err := wait(ctx, l.done); err != nil {
			return fmt.Errorf("start sweeper %s: wait for the previous loop to exit: %w", r.id, err)
		}
		r.loop = nil
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &loop{cancel: cancel, done: make(chan struct{})}
	r.loop = l
	r.update(func(s *Status) { s.Running = true })
	go r.run(lctx, l)
	r.log.Info("sweeper started", "interval", r.interval)
	return nil
}

// Stop cancels the loop and waits for its goroutine to exit; it is a no-op
// when the loop is not running. If ctx ends first, Stop returns its error and
// the loop, already cancelled and marked not running, finishes exiting on its
// own; the next Start or Stop waits for it.
func (r *Runner) Stop(ctx context.Context) error {
	if err := r.lock(ctx); err != nil {
		return fmt.Errorf("stop sweeper %s: %w", r.id, err)
	}
	defer r.unlock()
	r.hook("stop")
	l := r.loop
	if l == nil {
		return nil
	}
	wasRunning := !l.ending
	l.ending = true
	l.cancel()
	r.update(func(s *Status) { s.Running = false })
	if err := wait(ctx, l.done); err != nil {
		return fmt.Errorf("stop sweeper %s: wait for the loop to exit: %w", r.id, err)
	}
	r.loop = nil
	if wasRunning {
		r.log.Info("sweeper stopped")
	}
	return nil
}

// Poke wakes a waiting loop to read its override now instead of at the end of
// the interval, e.g. on a notification that another node recorded a stop. It
// does not trigger an extra pass, never blocks, and coalesces with pokes not
// yet seen.
func (r *Runner) Poke() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// lock acquires the control lock unless ctx ends first.
func (r *Runner) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case r.ctl <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runner) unlock() { <-r.ctl }

func (r *Runner) hook(op string) {
	if r.hooks != nil && r.hooks.locked != nil {
		r.hooks.locked(op)
	}
}

// wait waits for done unless ctx ends first.
func wait(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// update applies f to the status under its lock.
func (r *Runner) update(f func(*Status)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
	if r.hooks != nil && r.hooks.changed != nil {
		r.hooks.changed()
	}
}

// run is the loop goroutine: a pass, a wait, the override check, repeat.
func (r *Runner) run(ctx context.Context, l *loop) {
	defer close(l.done)
	defer l.cancel()
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
		if !r.waitInterval(ctx, l) {
			return
		}
	}
}

// pass runs SweepOnce once and records the outcome. A pass cut short by Stop
// is not recorded.
func (r *Runner) pass(ctx context.Context) {
	start := r.clock.Now()
	count, err := r.sweepOnce(ctx)
	d := r.clock.Now().Sub(start)
	if ctx.Err() != nil {
		return
	}
	var details any
	if dt, ok := r.sw.(Detailer); ok {
		details = dt.Details()
	}
	r.update(func(s *Status) {
		s.Details = details
		s.LastRunAt = &start
		s.LastResultCount = &count
		ms := float64(d) / float64(time.Millisecond)
		s.LastRunDurationMS = &ms
		s.LastError = nil
		if err != nil {
			msg := err.Error()
			s.LastError = &msg
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

// waitInterval waits one interval, reading the override early on every Poke
// and once more at the end. It reports whether the loop should run another
// pass.
func (r *Runner) waitInterval(ctx context.Context, l *loop) bool {
	t := time.NewTimer(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-r.poke:
			if r.overrideStops(ctx, l) {
				return false
			}
		case <-t.C:
			return !r.overrideStops(ctx, l)
		}
	}
}

// overrideStops reads the override and reports whether the loop must exit:
// because it was cancelled, or because the override is false and the loop
// stopped itself. A failed read is recorded in the status and is not a stop.
func (r *Runner) overrideStops(ctx context.Context, l *loop) bool {
	if ctx.Err() != nil {
		return true
	}
	if r.overrides == nil {
		return false
	}
	starts := r.starts.Load()
	want, err := r.overrides.GetSweeperDesiredRunning(ctx, r.id)
	if ctx.Err() != nil {
		return true // stopped during the read
	}
	if err != nil {
		err = fmt.Errorf("read override: %w", err)
		r.log.Warn("sweeper override read failed; still running", "err", err)
		r.update(func(s *Status) {
			msg := err.Error()
			s.LastError = &msg
		})
		return false
	}
	r.update(func(s *Status) { s.DesiredRunning = want })
	if want == nil || *want {
		return false
	}
	return r.selfStop(ctx, l, starts)
}

// selfStop stops the loop on behalf of a false override read after starts
// Start calls had taken the control lock, and reports whether it did.
//
// It takes the control lock like Start and Stop, so a self-stop is ordered
// with them, but it must never wait for the lock against a Stop: Stop holds
// the lock while it waits for this goroutine to exit. Stop cancels ctx before
// it waits, so selecting on ctx.Done() while acquiring the lock turns that
// would-be deadlock into a plain exit, and Stop finishes the bookkeeping.
// With the lock held, a Start that took it after the read began wins over the
// read (it may have written desired_running=true just before), and the loop
// goes on. Otherwise the loop marks itself ending and not running and exits
// without clearing r.loop, so the next Start waits for this goroutine to be
// gone before starting another.
func (r *Runner) selfStop(ctx context.Context, l *loop, starts uint64) bool {
	if r.hooks != nil && r.hooks.selfStop != nil {
		r.hooks.selfStop()
	}
	if err := r.lock(ctx); err != nil {
		return true
	}
	defer r.unlock()
	if ctx.Err() != nil {
		return true
	}
	if r.starts.Load() != starts {
		r.log.Info("sweeper override is false but a later start wins; still running")
		return false
	}
	r.hook("selfstop")
	l.ending = true
	l.cancel()
	r.update(func(s *Status) { s.Running = false })
	r.log.Info("sweeper stopped by its override (desired_running=false)")
	return true
}
