package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a manually driven clock for tests. Its time moves only by Advance
// and Set, which fire the timers and tickers that fall due, in the order of
// their fire times (ties: in the order they were armed), before returning.
// WaitArmed lets a test wait until a loop is waiting on the clock, so it
// moves time only then: no sleeps. Its zero value is not usable; create one
// with NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	armed   []*fakeTimer  // timers and tickers that will fire
	changed chan struct{} // closed and replaced whenever armed changes
}

// NewFake returns a Fake that reads t until it is moved.
func NewFake(t time.Time) *Fake { return &Fake{now: t.UTC(), changed: make(chan struct{})} }

// Now returns the fake's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Monotonic returns the fake's current time: a fake has no wall-clock
// steps to guard against.
func (f *Fake) Monotonic() time.Time { return f.Now() }

// Advance moves the fake forward by d, firing what falls due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moveLocked(f.now.Add(d))
}

// Set moves the fake to t, firing what falls due when t is later.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moveLocked(t.UTC())
}

// moveLocked fires every armed timer due by to, earliest first, then sets
// the time to to. A ticker due several times fires once and is re-armed for
// its first tick after to: its channel keeps one tick anyway, as a real
// ticker's does for a receiver that falls behind.
func (f *Fake) moveLocked(to time.Time) {
	fired := false
	for {
		i := -1
		for j, t := range f.armed {
			if t.when.After(to) {
				continue
			}
			if i < 0 || t.when.Before(f.armed[i].when) || (t.when.Equal(f.armed[i].when) && t.seq < f.armed[i].seq) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		t := f.armed[i]
		t.send(t.when)
		if t.period > 0 {
			t.when = t.when.Add((to.Sub(t.when)/t.period + 1) * t.period)
			f.seq++
			t.seq = f.seq
		} else {
			f.armed = slices.Delete(f.armed, i, i+1)
			t.on = false
		}
		fired = true
	}
	f.now = to
	if fired {
		f.notifyLocked()
	}
}

// Armed returns how many of the fake's timers and tickers are armed: made
// or reset, and neither fired (timers) nor stopped.
func (f *Fake) Armed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.armed)
}

// WaitArmed waits until at least n timers and tickers of the fake are armed
// (a loop is waiting on the clock), or ctx ends. A loop that re-arms its
// timer after the work a fire started is waiting again once WaitArmed
// returns after an Advance.
func (f *Fake) WaitArmed(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		ok, ch := len(f.armed) >= n, f.changed
		f.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// NewTimer returns a timer that fires when the fake reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.armLocked(d, 0)
	return t
}

// NewTicker returns a ticker that fires every d of the fake's time.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.armLocked(d, d)
	return fakeTicker{t}
}

// fakeTimer is a timer (period 0) or a ticker of a Fake; its fields are
// guarded by the fake's lock.
type fakeTimer struct {
	f      *Fake
	c      chan time.Time // one slot
	when   time.Time
	period time.Duration
	seq    uint64
	on     bool // in f.armed
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

// send delivers v unless a value is already waiting (then v is dropped).
func (t *fakeTimer) send(v time.Time) {
	select {
	case t.c <- v:
	default:
	}
}

// drain removes a value not yet received, so none from before a Stop or
// Reset is received after it.
func (t *fakeTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}

func (t *fakeTimer) disarmLocked() bool {
	was := t.on
	if was {
		t.f.armed = slices.DeleteFunc(t.f.armed, func(o *fakeTimer) bool { return o == t })
		t.on = false
		t.f.notifyLocked()
	}
	t.drain()
	return was
}

// armLocked arms t to fire d from now (at once when d is not positive and t
// is a timer) and every period after it when period is positive.
func (t *fakeTimer) armLocked(d, period time.Duration) {
	f := t.f
	t.period = period
	if d <= 0 && period == 0 {
		t.send(f.now)
		return
	}
	t.when = f.now.Add(d)
	f.seq++
	t.seq = f.seq
	t.on = true
	f.armed = append(f.armed, t)
	f.notifyLocked()
}

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.disarmLocked()
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.disarmLocked()
	t.armLocked(d, 0)
	return was
}

type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time { return k.t.c }

func (k fakeTicker) Stop() {
	k.t.f.mu.Lock()
	defer k.t.f.mu.Unlock()
	k.t.disarmLocked()
}

func (k fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	k.t.f.mu.Lock()
	defer k.t.f.mu.Unlock()
	k.t.disarmLocked()
	k.t.armLocked(d, d)
}
