package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/service/lease"
	"github.com/cks-dev/cks/internal/waitfor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

const every = time.Minute

// renewals is a renew function that reports each call on a channel and
// answers with the next error of errs (nil once they run out).
type renewals struct {
	calls chan int
	n     atomic.Int32
	errs  []error
}

func newRenewals(errs ...error) *renewals { return &renewals{calls: make(chan int, 16), errs: errs} }

func (r *renewals) renew(context.Context) error {
	n := int(r.n.Add(1))
	r.calls <- n
	if n <= len(r.errs) {
		return r.errs[n-1]
	}
	return nil
}

func (r *renewals) next(t testing.TB) int {
	t.Helper()
	select {
	case n := <-r.calls:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal")
		return 0
	}
}

// tick waits until the keeper waits on c, then moves c one period.
func tick(t testing.TB, c *clock.Fake) {
	t.Helper()
	if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil {
		t.Fatalf("the keeper never waited on the clock: %v", err)
	}
	c.Advance(every)
}

func keep(t testing.TB, ctx context.Context, c *clock.Fake, r *renewals) (*lease.Keeper, context.Context) {
	t.Helper()
	k, lctx, err := lease.Keep(ctx, lease.Config{Every: every, Renew: r.renew, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k, lctx
}

// TestRenewsEveryPeriod: one renewal per period of the clock, none before;
// a failed renewal that is not a loss is retried at the next period; Stop
// ends the renewals and cancels the lease context as stopped.
func TestRenewsEveryPeriod(t *testing.T) {
	c := clock.NewFake(t0)
	r := newRenewals(nil, errors.New("conn reset"))
	k, lctx := keep(t, context.Background(), c, r)
	if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(every - time.Nanosecond)
	if n := r.n.Load(); n != 0 {
		t.Fatalf("%d renewals before the first period ended", n)
	}
	c.Advance(time.Nanosecond)
	if n := r.next(t); n != 1 {
		t.Fatalf("renewal %d", n)
	}
	for want := 2; want <= 3; want++ {
		tick(t, c)
		if n := r.next(t); n != want {
			t.Fatalf("renewal %d, want %d", n, want)
		}
	}
	if lctx.Err() != nil {
		t.Fatalf("a failed renewal that is not a loss ended the lease: %v", context.Cause(lctx))
	}
	k.Stop()
	if !errors.Is(context.Cause(lctx), lifecycle.ErrStopped) {
		t.Fatalf("cause after Stop %v, want ErrStopped", context.Cause(lctx))
	}
	c.Advance(10 * every)
	if n := r.n.Load(); n != 3 || c.Armed() != 0 {
		t.Fatalf("%d renewals, %d timers armed after Stop", n, c.Armed())
	}
	k.Stop() // a second Stop is a no-op
}

// TestLossCancelsTheWork: a renewal that finds the lease lost cancels the
// lease context with the loss as its cause, and renews no more.
func TestLossCancelsTheWork(t *testing.T) {
	c := clock.NewFake(t0)
	lost := fmt.Errorf("task 7: %w", cks.ErrLeaseLost)
	r := newRenewals(nil, lost)
	k, lctx := keep(t, context.Background(), c, r)
	tick(t, c)
	r.next(t)
	tick(t, c)
	r.next(t)
	select {
	case <-lctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease context was not cancelled")
	}
	if cause := context.Cause(lctx); !errors.Is(cause, cks.ErrLeaseLost) || cause.Error() != lost.Error() {
		t.Fatalf("cause %v, want %v", cause, lost)
	}
	k.Stop() // the loop ended with the loss; Stop waits for it all the same
	if cause := context.Cause(lctx); cause.Error() != lost.Error() {
		t.Fatalf("Stop replaced the cause: %v", cause)
	}
	c.Advance(10 * every)
	if n := r.n.Load(); n != 2 {
		t.Fatalf("%d renewals; want none after the loss", n)
	}
}

// TestRenewsPastTheParent: the lease context ends with its parent, but the
// renewals go on until Stop: the work winding down still holds the lease.
func TestRenewsPastTheParent(t *testing.T) {
	c := clock.NewFake(t0)
	r := newRenewals()
	parent, cancel := context.WithCancel(context.Background())
	k, lctx := keep(t, parent, c, r)
	cancel()
	<-lctx.Done()
	tick(t, c)
	r.next(t)
	k.Stop()
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []lease.Config{
		{Renew: func(context.Context) error { return nil }},
		{Every: -time.Second, Renew: func(context.Context) error { return nil }},
		{Every: time.Second},
	} {
		if _, _, err := lease.Keep(context.Background(), cfg); err == nil {
			t.Errorf("Keep(%+v) = nil error", cfg)
		}
	}
}
