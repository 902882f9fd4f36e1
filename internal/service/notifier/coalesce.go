package notifier

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
)

// Coalescer publishes one change topic for a stream of changes at most once
// per interval, and never leaves the last change unpublished: the first
// change after a quiet spell is published at once (leading edge); the
// changes noted while an interval runs are published together when it ends
// (trailing edge); Close publishes what is still pending. It is for a topic
// whose changes are too frequent to publish in each change's transaction —
// cks.TopicTasksMoved, noted by the ledger after every commit that moved a
// task: on Postgres every NOTIFYing commit takes a global lock, so one per
// completion would serialise them, and a viewer that re-reads the board
// needs to know that something moved, not each move.
//
// It is here, in the package that owns the change notifications, and not in
// the ledger: the ledger decides what a move is (ledger.MovesNoter's doc),
// the Coalescer when a topic is published, one function for both (run), and
// the publication itself is the driver's Notify outside any transaction.
//
// Note costs an atomic swap while a publication is pending, and a mutex
// and a channel send once per publication: nothing of it waits for the
// database. The loop runs on a lifecycle.Base from the first Note until
// Close.
type Coalescer struct {
	cfg  CoalescerConfig
	base *lifecycle.Base
	// pending is set by Note and taken by the loop (and Close).
	pending atomic.Bool
	wake    chan struct{} // capacity 1: "pending was set"

	mu     sync.Mutex // guards closed, ordering Note's Start before Close's Stop
	closed bool
	// publishing is held from the take of pending through its publication
	// (run, Flush), so Flush returns only once what was taken is out.
	publishing sync.Mutex
}

// CoalescerConfig configures a Coalescer. Publish and Interval are
// required.
type CoalescerConfig struct {
	// Publish publishes the topic once (a driver's Executor().Notify,
	// outside any transaction). An error is logged: the notification is a
	// wake-up, and the next one (or the viewers' poll) catches up.
	Publish func(ctx context.Context) error
	// Interval is the least time between two publications.
	Interval time.Duration
	// Clock times the intervals; nil: the system clock.
	Clock clock.Clock
	// Logger receives the failed publications; nil is slog.Default().
	Logger *slog.Logger
	// Topic names the topic in the log.
	Topic string
}

// NewCoalescer returns a Coalescer of cfg; nothing runs until the first
// Note.
func NewCoalescer(cfg CoalescerConfig) *Coalescer {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Coalescer{cfg: cfg, wake: make(chan struct{}, 1)}
	c.base = lifecycle.New(lifecycle.Config{Run: c.run, OnPanic: func(v any, stack []byte) {
		cfg.Logger.Error("change coalescer panicked; the next change starts it again", "topic", cfg.Topic,
			"panic", v, "stack", string(stack))
	}})
	return c
}

// Note records a change to publish: at once when no interval runs, else at
// the end of the current one. After Close it does nothing.
func (c *Coalescer) Note() {
	if c.pending.Swap(true) {
		return // already pending: the loop publishes it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		// Close published what it found pending; this one is after it.
		c.pending.Store(false)
		return
	}
	// A no-op while the loop runs (once per publication: a Note that
	// finds one pending returned above). Only Close stops the loop, and it
	// marks closed under c.mu first.
	if err := c.base.Start(context.Background()); err != nil {
		c.cfg.Logger.Error("starting the change coalescer", "topic", c.cfg.Topic, "err", err)
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close stops the loop and publishes at once what was noted and not yet
// published, so a process that exits right after a change still tells the
// others; ctx bounds the wait for the loop and the publication. Later Notes
// do nothing.
func (c *Coalescer) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if err := c.base.Stop(ctx); err != nil {
		return err
	}
	return c.Flush(ctx)
}

// Flush publishes at once what was noted and not yet published, after the
// publication in flight, if any, has ended; it does not end the interval
// that runs. When it returns every change noted before it is published, and
// until the next Note nothing more will be: a test that compares the
// database before and after a call that must change nothing flushes first.
func (c *Coalescer) Flush(ctx context.Context) error {
	c.publishing.Lock()
	defer c.publishing.Unlock()
	if c.pending.Swap(false) {
		return c.cfg.Publish(ctx)
	}
	return nil
}

// take publishes what is pending, holding publishing; it reports whether
// there was anything, and false when ctx ended during the publication (then
// it is pending again, for Close).
func (c *Coalescer) take(ctx context.Context) bool {
	c.publishing.Lock()
	defer c.publishing.Unlock()
	if !c.pending.Swap(false) {
		return false
	}
	if err := c.cfg.Publish(ctx); err != nil {
		if ctx.Err() != nil {
			c.pending.Store(true) // cut short by Close, which publishes it
			return false
		}
		c.cfg.Logger.Warn("publishing a change", "topic", c.cfg.Topic, "err", err)
	}
	return true
}

// run is the one function that decides when the topic is published: woken
// by a Note, it publishes, then waits out the interval and publishes again
// if more was noted meanwhile, until an interval passes with nothing noted;
// then it waits for the next Note.
func (c *Coalescer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		for c.take(ctx) {
			if clock.Sleep(ctx, c.cfg.Clock, c.cfg.Interval, nil) != nil {
				return // Close publishes what is pending
			}
		}
	}
}
