package sweeper

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every condition wait; conditions normally hold within
// milliseconds, so reaching it means the condition will never hold.
const waitLimit = 10 * time.Second

func t0() time.Time { return time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC) }

// funcSweeper is a Sweeper whose pass is a function.
type funcSweeper struct {
	id string
	f  func(ctx context.Context, call int) (int, error)
	n  atomic.Int64
}

func (s *funcSweeper) ID() string { return s.id }

func (s *funcSweeper) SweepOnce(ctx context.Context) (int, error) {
	return s.f(ctx, int(s.n.Add(1)))
}

func sweeperFunc(id string, f func(ctx context.Context, call int) (int, error)) *funcSweeper {
	return &funcSweeper{id: id, f: f}
}

// noop is a sweeper whose passes do nothing.
func noop(id string) *funcSweeper {
	return sweeperFunc(id, func(context.Context, int) (int, error) { return 0, nil })
}

// overridesFunc adapts a function to Overrides.
type overridesFunc func(ctx context.Context, id string) (*bool, error)

func (f overridesFunc) GetSweeperDesiredRunning(ctx context.Context, id string) (*bool, error) {
	return f(ctx, id)
}

// atomicOverride is an in-memory override for one sweeper: no row, true or
// false. It counts its reads.
type atomicOverride struct {
	v     atomic.Int32 // 0: no row, 1: true, 2: false
	reads atomic.Int64
}

func (o *atomicOverride) set(v *bool) {
	switch {
	case v == nil:
		o.v.Store(0)
	case *v:
		o.v.Store(1)
	default:
		o.v.Store(2)
	}
}

func (o *atomicOverride) GetSweeperDesiredRunning(context.Context, string) (*bool, error) {
	o.reads.Add(1)
	switch o.v.Load() {
	case 1:
		return ptr(true), nil
	case 2:
		return ptr(false), nil
	}
	return nil, nil
}

func ptr[T any](v T) *T { return &v }

// probe observes a runner through its test hooks.
type probe struct {
	changed chan struct{} // one slot: something observable changed
	live    atomic.Int64  // loop goroutines alive now
	maxLive atomic.Int64  // the most ever alive at once
	entered atomic.Int64  // loop goroutines ever started

	mu  sync.Mutex
	ops []string // control-lock acquisitions, in order
}

func (p *probe) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *probe) opsSnapshot() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ops...)
}

// newTestRunner returns a runner for s with a fake clock at t0 (unless opts
// has a clock), a silent logger and hooks feeding a probe. The runner is
// stopped when the test ends.
func newTestRunner(t testing.TB, s Sweeper, opts Options) (*Runner, *probe) {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clock.NewFake(t0())
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	r, err := newRunner(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{changed: make(chan struct{}, 1)}
	r.hooks = &hooks{
		locked: func(op string) {
			p.mu.Lock()
			p.ops = append(p.ops, op)
			p.mu.Unlock()
		},
		loopEnter: func() {
			n := p.live.Add(1)
			p.entered.Add(1)
			for {
				m := p.maxLive.Load()
				if n <= m || p.maxLive.CompareAndSwap(m, n) {
					break
				}
			}
			p.notify()
		},
		loopExit: func() {
			p.live.Add(-1)
			p.notify()
		},
		changed: p.notify,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := r.Stop(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return r, p
}

// waitFor waits until cond holds, re-checking whenever the runner's status or
// its set of live loops changes, and fails the test after waitLimit.
func (p *probe) waitFor(t testing.TB, r *Runner, what string, cond func(cks.SweeperStatus) bool) cks.SweeperStatus {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		st := r.Status()
		if cond(st) {
			return st
		}
		select {
		case <-p.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; status %+v, live loops %d", what, r.Status(), p.live.Load())
		}
	}
}

// waitCtx is a context that ends after waitLimit or with the test.
func waitCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// tick waits until the runner's loop waits on c (its interval timer is
// armed) and then moves c by d.
func tick(t testing.TB, c *clock.Fake, d time.Duration) {
	t.Helper()
	if err := c.WaitArmed(waitCtx(t), 1); err != nil {
		t.Fatalf("the loop never waited on the clock: %v", err)
	}
	c.Advance(d)
}

// recv waits for a value from ch and fails the test after waitLimit.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func mustStart(t testing.TB, r *Runner) {
	t.Helper()
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustStop(t testing.TB, r *Runner) {
	t.Helper()
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func errText(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
