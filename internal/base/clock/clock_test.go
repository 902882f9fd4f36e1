package clock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/waitfor"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// fired returns the value waiting on ch, if any.
func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestSystem(t *testing.T) {
	var c clock.Clock = clock.System{}
	if now := c.Now(); now.Location() != time.UTC || strings.Contains(now.String(), "m=") {
		t.Fatalf("Now() = %v, want UTC without a monotonic reading", now)
	}
	m := c.Monotonic()
	if !strings.Contains(m.String(), "m=") {
		t.Fatalf("Monotonic() = %v, want a monotonic reading", m)
	}
	if d := clock.Since(c, m); d < 0 {
		t.Fatalf("Since = %v", d)
	}
	tm := c.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the system timer did not fire")
	}
	if tm.Stop() {
		t.Error("Stop of a fired timer reported it armed")
	}
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Reset(time.Hour)
	tk.Stop()
}

// TestFakeTimers: timers fire when the fake reaches their time, in order,
// never before; Stop and Reset leave no stale value; a ticker fires once
// per due Advance and keeps its cadence.
func TestFakeTimers(t *testing.T) {
	c := clock.NewFake(t0)
	a, b := c.NewTimer(2*time.Second), c.NewTimer(time.Second)
	tk := c.NewTicker(3 * time.Second)
	if n := c.Armed(); n != 3 {
		t.Fatalf("armed %d, want 3", n)
	}
	c.Advance(time.Second - time.Nanosecond)
	if _, ok := fired(b.C()); ok {
		t.Fatal("a timer fired early")
	}
	c.Advance(time.Nanosecond)
	if v, ok := fired(b.C()); !ok || !v.Equal(t0.Add(time.Second)) {
		t.Fatalf("b fired %v %v, want at t0+1s", v, ok)
	}
	if b.Stop() {
		t.Error("Stop of a fired timer reported it armed")
	}
	c.Advance(5 * time.Second) // t0+6s: a at 2s, the ticker at 3s and 6s (one tick kept)
	if v, ok := fired(a.C()); !ok || !v.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("a fired %v %v", v, ok)
	}
	if v, ok := fired(tk.C()); !ok || !v.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("ticker fired %v %v, want the first due tick", v, ok)
	}
	if _, ok := fired(tk.C()); ok {
		t.Fatal("the ticker queued a second tick")
	}
	c.Advance(3 * time.Second) // t0+9s: its cadence is kept
	if v, ok := fired(tk.C()); !ok || !v.Equal(t0.Add(9*time.Second)) {
		t.Fatalf("ticker fired %v %v, want at t0+9s", v, ok)
	}
	if n := c.Armed(); n != 1 {
		t.Fatalf("armed %d, want the ticker alone", n)
	}

	// Reset drains a value not received and re-arms from now.
	a.Reset(time.Second)
	c.Advance(time.Second)
	a.Reset(time.Second)
	if _, ok := fired(a.C()); ok {
		t.Fatal("a value from before Reset was received after it")
	}
	if !a.Stop() {
		t.Error("Stop of an armed timer reported it not armed")
	}
	c.Advance(time.Hour)
	if _, ok := fired(a.C()); ok {
		t.Fatal("a stopped timer fired")
	}
	tk.Stop()
	c.Advance(time.Hour)
	if _, ok := fired(tk.C()); ok || c.Armed() != 0 {
		t.Fatalf("a stopped ticker fired (armed %d)", c.Armed())
	}
	if z := c.NewTimer(0); c.Armed() != 0 {
		t.Fatal("a zero timer is armed")
	} else if v, ok := fired(z.C()); !ok || !v.Equal(c.Now()) {
		t.Fatalf("a zero timer fired %v %v, want at once", v, ok)
	}

	// Set fires what falls due, and moves back without firing.
	s := c.NewTimer(time.Minute)
	c.Set(c.Now().Add(-time.Hour))
	if _, ok := fired(s.C()); ok {
		t.Fatal("moving back fired a timer")
	}
	c.Set(c.Now().Add(2 * time.Hour))
	if _, ok := fired(s.C()); !ok {
		t.Fatal("Set past a timer's time did not fire it")
	}
}

// TestWaitArmed: a test learns that a loop waits on the clock, then moves
// time; WaitArmed ends with its context.
func TestWaitArmed(t *testing.T) {
	c := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitArmed(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitArmed with nothing armed = %v", err)
	}
	woke := make(chan time.Time)
	go func() {
		for range 3 {
			clock.Sleep(context.Background(), c, time.Minute, nil) //nolint:errcheck // ends by time
			woke <- c.Now()
		}
		close(woke)
	}()
	for i := 1; i <= 3; i++ {
		if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
		if got := <-woke; !got.Equal(t0.Add(time.Duration(i) * time.Minute)) {
			t.Fatalf("woke at %v", got)
		}
	}
	if _, ok := <-woke; ok {
		t.Fatal("the sleeper did not end")
	}
}

func TestSleep(t *testing.T) {
	c := clock.NewFake(t0)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		wake chan struct{}
		want error
	}{
		{"ended context", ended, time.Minute, nil, context.Canceled},
		{"ended context, zero wait", ended, 0, nil, context.Canceled},
		{"zero wait", context.Background(), 0, nil, nil},
		{"negative wait", context.Background(), -time.Second, nil, nil},
		{"woken", context.Background(), time.Hour, wake, clock.ErrWoken},
	} {
		if err := clock.Sleep(tc.ctx, c, tc.d, tc.wake); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: Sleep = %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := c.Armed(); n != 0 {
		t.Fatalf("%d timers left armed", n)
	}
	// A context that ends during the wait.
	ctx, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(ctx, c, time.Hour, nil) }()
	if err := c.WaitArmed(waitfor.Ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) || c.Armed() != 0 {
		t.Fatalf("Sleep = %v, armed %d", err, c.Armed())
	}
}
