// Package lifecycle is the one start/stop base of every background loop of
// cks (the sweeper runners, the liveness reporter, the lease keeper, the
// pipeline orchestrator, the agent's claim loop and background work, the
// notifier's listener, the SQLite WAL checkpointer, the worker's abort
// watch, the hub runtime's watchers): a Base runs a loop
// function on its own goroutine from Start until Stop, with the semantics
// ADR-015 asks of the sweeper runners, the strictest of them.
//
// Start and Stop serialise on one control lock held across their whole
// check-then-act, including Stop's wait for the loop goroutine to exit: two
// concurrent Starts yield one loop, two concurrent Stops are safe, and a
// Start racing a Stop resolves to whichever took the lock first. The lock is
// a one-slot channel rather than a sync.Mutex so that waiting for it is
// bounded by a context, and so that the loop, when it stops itself
// (StopSelf) or returns on its own, can give up acquiring it as soon as a
// Stop that holds it cancels the loop. A panic of the loop is recovered,
// reported to a hook, and ends the run as a return would.
//
// The design follows River's rivershared/startstop (a base embedded by every
// service, Started/Stopped channels, a cancel cause telling a controlled
// stop from another cancellation), with context-bounded Start and Stop.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// ErrStopped is the cancel cause of a loop's context when Stop or StopSelf
// ends it, so the loop (and what it started) can tell a controlled stop
// from another cancellation with context.Cause.
var ErrStopped = errors.New("lifecycle: stopped")

// Op names an operation that takes a Base's control lock.
type Op string

// The operations of a Base.
const (
	// OpStart is Start.
	OpStart Op = "start"
	// OpStop is Stop.
	OpStop Op = "stop"
	// OpStopSelf is StopSelf, called by the loop.
	OpStopSelf Op = "selfstop"
	// OpExit is the loop goroutine marking its run ended after the loop
	// function returned (or panicked) without being stopped.
	OpExit Op = "exit"
)

// Config configures a Base. Only Run is required.
type Config struct {
	// Run is the loop. It runs on its own goroutine from Start until its
	// context is done (Stop, or StopSelf) and must return promptly then.
	// The context keeps the values of Start's context but not its
	// cancellation; its cancel cause is ErrStopped after a Stop. A Run that
	// returns by itself ends the run: the Base reads stopped and the next
	// Start starts a new one.
	Run func(ctx context.Context)
	// Init, when set, runs under the control lock when Start is about to
	// start a loop, with Start's context; an error is returned by Start
	// and nothing is started (e.g. the liveness reporter's first
	// heartbeat: a process that cannot write it should say so and exit).
	Init func(ctx context.Context) error
	// Locked, when set, is called by Start, Stop and StopSelf (and by the
	// loop goroutine marking its run ended) as soon as they hold the
	// control lock, before anything else. Tests record the order of
	// operations with it.
	Locked func(op Op)
	// Changed, when set, is called holding the control lock whenever the
	// state changes: running true when Start started a loop, false when
	// Stop, StopSelf or the loop's own return ended it. State kept under it
	// (a status's running flag) is therefore that of the last operation to
	// take the lock.
	Changed func(op Op, running bool)
	// OnPanic, when set, is called on the loop goroutine with a panic of
	// Run and its stack; nil logs both with slog.Default(). Either way the
	// run then ends as if Run had returned.
	OnPanic func(v any, stack []byte)
}

// Base runs Config.Run under Start and Stop. Create one with New; it is
// stopped until Start.
type Base struct {
	cfg Config

	ctl chan struct{} // the control lock: full while held
	cur *run          // the current run or nil; guarded by ctl
	// starts counts Starts that took the control lock; see StopSelf.
	starts atomic.Uint64
	// running is what Running reports; written under ctl.
	running atomic.Bool

	mu      sync.Mutex    // guards started, stopped
	started chan struct{} // closed while a run is live
	stopped chan struct{} // closed once the last run's goroutine exited
}

// run is one run of the loop goroutine.
type run struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the goroutine has exited
	// ending is set, under the control lock, once the run has been told
	// to stop or has stopped itself: the goroutine is exiting or has
	// exited, and the next Start must wait for done before starting
	// another.
	ending bool
}

// New returns a stopped Base for cfg.
func New(cfg Config) *Base {
	if cfg.Run == nil {
		panic("lifecycle: New without a Run function")
	}
	return &Base{cfg: cfg, ctl: make(chan struct{}, 1)}
}

// Start starts the loop unless it is already running. ctx bounds only the
// wait for the control lock, for a previous run that is still exiting, and
// Config.Init; the loop keeps ctx's values but not its cancellation and
// runs until Stop, StopSelf or its own return. A Start that finds the loop
// running is a no-op that returns nil.
func (b *Base) Start(ctx context.Context) error {
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.unlock()
	b.starts.Add(1)
	b.locked(OpStart)
	if l := b.cur; l != nil {
		if !l.ending {
			return nil // already running
		}
		if err := wait(ctx, l.done); err != nil {
			return fmt.Errorf("wait for the previous loop to exit: %w", err)
		}
		b.cur = nil
	}
	if b.cfg.Init != nil {
		if err := b.cfg.Init(ctx); err != nil {
			return err
		}
	}
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	l := &run{cancel: cancel}
	b.mu.Lock()
	if b.stopped == nil || closed(b.stopped) {
		b.stopped = make(chan struct{})
	}
	l.done = b.stopped
	if b.started == nil {
		b.started = make(chan struct{})
	}
	close(b.started)
	b.mu.Unlock()
	b.cur = l
	b.changed(OpStart, true)
	go b.loop(lctx, l)
	return nil
}

// Stop cancels the loop (cause ErrStopped) and waits for its goroutine to
// exit; it is a no-op when the loop is not running. If ctx ends first, Stop
// returns its error and the loop, already cancelled and marked not running,
// finishes exiting on its own; the next Start or Stop waits for it.
func (b *Base) Stop(ctx context.Context) error {
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.unlock()
	b.locked(OpStop)
	l := b.cur
	if l == nil {
		return nil
	}
	if !l.ending {
		l.ending = true
		l.cancel(ErrStopped)
		b.changed(OpStop, false)
	}
	if err := wait(ctx, l.done); err != nil {
		return fmt.Errorf("wait for the loop to exit: %w", err)
	}
	b.cur = nil
	return nil
}

// Starts returns how many Starts have taken the control lock. A loop about
// to make a decision to stop itself that any later Start must override (a
// read of a stored "stop" that a Start may have just replaced) reads it
// first and passes it to StopSelf.
func (b *Base) Starts() uint64 { return b.starts.Load() }

// StopSelf is called by the loop, on its goroutine and with its context, to
// stop itself: unless a Start took the control lock after Starts returned
// since, it marks the run ended (the loop must then return) and cancels
// ctx with cause ErrStopped. It reports whether the loop must return: true
// also when ctx is done, false when a later Start won and the loop goes on.
//
// It takes the control lock like Start and Stop, so a self-stop is ordered
// with them, but it never waits for the lock against a Stop: Stop holds the
// lock while it waits for this goroutine to exit, and cancels ctx before it
// waits, so acquiring the lock gives up when ctx is done and Stop finishes
// the bookkeeping. After a self-stop the run stays current until its
// goroutine exits, so the next Start waits for it.
func (b *Base) StopSelf(ctx context.Context, since uint64) bool {
	if err := b.lock(ctx); err != nil {
		return true
	}
	defer b.unlock()
	b.locked(OpStopSelf)
	l := b.cur
	if ctx.Err() != nil || l == nil || l.ending {
		return true
	}
	if b.starts.Load() != since {
		return false
	}
	l.ending = true
	l.cancel(ErrStopped)
	b.changed(OpStopSelf, false)
	return true
}

// Running reports whether a loop is running: started, and neither told to
// stop nor ended. It does not wait for the control lock.
func (b *Base) Running() bool { return b.running.Load() }

// Started returns a channel closed while a run is live: from the Start that
// started it until its goroutine exits. Taken before Start (or after a run
// ended), it is closed by the next Start that starts a loop.
func (b *Base) Started() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		b.started = make(chan struct{})
	}
	return b.started
}

// Stopped returns a channel closed once the goroutine of the current (or
// last) run has exited. Taken before the first Start, it is closed when the
// first run ends; taken after a Start, when that run ends (take it before
// calling Stop to wait for a loop that may also end by itself).
func (b *Base) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped == nil {
		b.stopped = make(chan struct{})
	}
	return b.stopped
}

// loop is the goroutine of run l.
func (b *Base) loop(ctx context.Context, l *run) {
	defer func() {
		b.mu.Lock()
		b.started = nil // the next Started waits for the next run
		b.mu.Unlock()
		close(l.done)
	}()
	defer b.exited(ctx, l)
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			if b.cfg.OnPanic != nil {
				b.cfg.OnPanic(v, stack)
			} else {
				slog.Default().Error("loop panicked", "panic", v, "stack", string(stack))
			}
		}
	}()
	b.cfg.Run(ctx)
}

// exited marks run l ended after the loop function returned without being
// stopped; if it was stopped (ctx is done), whoever stopped it did that.
func (b *Base) exited(ctx context.Context, l *run) {
	defer l.cancel(ErrStopped) // release the context's resources
	if ctx.Err() != nil || b.lock(ctx) != nil {
		return
	}
	defer b.unlock()
	b.locked(OpExit)
	if !l.ending {
		l.ending = true
		b.changed(OpExit, false)
	}
}

// lock acquires the control lock unless ctx ends first.
func (b *Base) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case b.ctl <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Base) unlock() { <-b.ctl }

// changed records a state change made under the control lock.
func (b *Base) changed(op Op, running bool) {
	b.running.Store(running)
	if b.cfg.Changed != nil {
		b.cfg.Changed(op, running)
	}
}

func (b *Base) locked(op Op) {
	if b.cfg.Locked != nil {
		b.cfg.Locked(op)
	}
}

// wait waits for done unless ctx ends first; a done channel already closed
// wins over an ended ctx.
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

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
