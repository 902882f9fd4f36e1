// Package clock abstracts time so that every rule that depends on it
// (liveness TTL, leases, stale reports) and every loop that waits on it
// (sweeper intervals, heartbeats, polls, retry waits) can be tested without
// sleeping: a loop takes its Clock from its configuration, makes its timers
// with it, and a test hands it a Fake and moves time with Advance.
package clock

import (
	"context"
	"errors"
	"time"
)

// Clock tells the time and makes timers that fire by it.
type Clock interface {
	// Now returns the current wall time in UTC, for timestamps. The UTC
	// conversion strips the monotonic reading, so a difference of two Now
	// values moves with wall-clock steps; measure durations with Monotonic.
	Now() time.Time
	// Monotonic returns the current instant for measuring durations: on
	// the system clock it carries the monotonic reading, so Since (or Sub
	// of two Monotonic values) is immune to wall-clock steps. It is not a
	// timestamp: compare it only with another Monotonic value.
	Monotonic() time.Time
	// NewTimer returns a Timer that fires once, d from now (at once when d
	// is not positive).
	NewTimer(d time.Duration) Timer
	// NewTicker returns a Ticker that fires every d; d must be positive.
	NewTicker(d time.Duration) Ticker
}

// Timer is a one-shot timer of a Clock, with the semantics of *time.Timer
// since Go 1.23: after Stop or Reset returns, no value from before the call
// is received from C.
type Timer interface {
	// C is the channel the fire time is sent on.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was armed.
	Stop() bool
	// Reset re-arms the timer to fire d from now; it reports whether it was
	// armed.
	Reset(d time.Duration) bool
}

// Ticker fires every period of a Clock; a receiver that falls behind skips
// ticks rather than queueing them, as with *time.Ticker.
type Ticker interface {
	// C is the channel the tick times are sent on.
	C() <-chan time.Time
	// Stop turns the ticker off.
	Stop()
	// Reset stops the ticker and restarts it with period d (positive).
	Reset(d time.Duration)
}

// Since returns the time elapsed on c since start, a value of c.Monotonic().
func Since(c Clock, start time.Time) time.Duration { return c.Monotonic().Sub(start) }

// ErrWoken is what Sleep returns when its wake channel fired before the
// duration passed.
var ErrWoken = errors.New("clock: woken before the wait ended")

// Sleep waits d on c. It returns nil once d has passed, ErrWoken when wake
// receives first (a nil wake never does), and ctx.Err() when ctx ends first
// (also when it has already ended). A d that is not positive has passed at
// once. It is the one context-aware wait of every loop: backoffs, retry
// waits, idle polls.
func Sleep(ctx context.Context, c Clock, d time.Duration, wake <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return ErrWoken
	case <-t.C():
		return nil
	}
}

// System is the real clock; Now is in UTC.
type System struct{}

// Now returns the current UTC time.
func (System) Now() time.Time { return time.Now().UTC() }

// Monotonic returns time.Now(), with its monotonic reading.
func (System) Monotonic() time.Time { return time.Now() }

// NewTimer returns a *time.Timer as a Timer.
func (System) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

// NewTicker returns a *time.Ticker as a Ticker.
func (System) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time   { return t.t.C }
func (t systemTicker) Stop()                 { t.t.Stop() }
func (t systemTicker) Reset(d time.Duration) { t.t.Reset(d) }
