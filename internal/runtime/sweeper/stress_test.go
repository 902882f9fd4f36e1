package sweeper

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

// The acceptance test of issue 4: 1,000 concurrent random Start/Stop calls on
// one runner never have more than one loop goroutine alive at any moment, and
// afterwards the runner's state is that of the last call to take the lock.
func TestStressConcurrentStartStop(t *testing.T) {
	const calls = 1000
	var inPass, maxInPass atomic.Int64
	sw := sweeperFunc("lease_reaper", func(context.Context, int) (int, error) {
		n := inPass.Add(1)
		defer inPass.Add(-1)
		for m := maxInPass.Load(); n > m && !maxInPass.CompareAndSwap(m, n); m = maxInPass.Load() {
		}
		// A pass that is slow to notice cancellation widens the window in
		// which a broken Start or Stop would let two loops overlap.
		for range 50 {
			runtime.Gosched()
		}
		return 1, nil
	})
	o := &atomicOverride{}
	o.set(ptr(true)) // the loops read it on every tick and must keep running
	// The real clock with a microsecond interval: the loops tick as fast as
	// they can, so passes and override reads overlap the storm (nothing
	// here is timed).
	r, p := newTestRunner(t, sw, Options{Interval: time.Microsecond, ConfigEnabled: true, Overrides: o, Clock: clock.System{}})

	ctx := context.Background()
	begin := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		start := rand.IntN(2) == 0
		wg.Go(func() {
			<-begin
			var err error
			if start {
				err = r.Start(ctx)
			} else {
				err = r.Stop(ctx)
			}
			if err != nil {
				errs <- err
			}
			r.wake()
			_ = r.Status()
		})
	}
	close(begin)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	ops := p.opsSnapshot()
	if len(ops) != calls {
		t.Fatalf("%d lock acquisitions recorded, want %d", len(ops), calls)
	}
	last := ops[len(ops)-1]
	wantRunning := last == "start"
	if got := r.Status().Running; got != wantRunning {
		t.Fatalf("after the storm running = %v, but the last call to take the lock was %q", got, last)
	}
	wantLive := int64(0)
	if wantRunning {
		wantLive = 1
	}
	p.waitFor(t, r, "the live loops to match the final state", func(cks.SweeperStatus) bool { return p.live.Load() == wantLive })
	if m := p.maxLive.Load(); m > 1 {
		t.Fatalf("%d loop goroutines were alive at once", m)
	}
	if m := maxInPass.Load(); m > 1 {
		t.Fatalf("%d passes ran at once", m)
	}
	mustStop(t, r)
	if n := p.live.Load(); n != 0 {
		t.Fatalf("%d loop goroutines alive after Stop", n)
	}
	t.Logf("last call %q; %d loops started; %d passes; %d override reads", last, p.entered.Load(), r.Status().RunCount, o.reads.Load())
}
