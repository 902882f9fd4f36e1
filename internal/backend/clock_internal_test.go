package backend

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
)

// TestRemeasure: the correction's loop measures the database's clock
// again every ClockRemeasure of the host's clock and follows it; a failed
// measurement keeps the offset in use.
func TestRemeasure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	var ahead atomic.Int64 // how far the fake database's clock is ahead
	ahead.Store(int64(5 * time.Second))
	down := errors.New("database down")
	var failing atomic.Bool
	read := func(context.Context) (time.Time, error) {
		if failing.Load() {
			return time.Time{}, down
		}
		return host.Now().Add(time.Duration(ahead.Load())), nil
	}
	c, err := newCorrection(ctx, host, read)
	if err != nil {
		t.Fatal(err)
	}
	c.logger = slog.New(slog.DiscardHandler)
	if got := c.clock.Now(); !got.Equal(host.Now().Add(5 * time.Second)) {
		t.Fatalf("corrected clock %v, want the database's %v", got, host.Now().Add(5*time.Second))
	}
	if err := c.loop.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.loop.Stop(ctx) //nolint:errcheck // the test's end

	for _, step := range []struct {
		ahead time.Duration
		fail  bool
		want  time.Duration
	}{
		{-2 * time.Second, false, -2 * time.Second}, // the host's clock was stepped forward 7 s
		{time.Hour, true, -2 * time.Second},         // the database does not answer: the last offset stays
		{time.Second, false, time.Second},
	} {
		ahead.Store(int64(step.ahead))
		failing.Store(step.fail)
		if err := host.WaitArmed(ctx, 1); err != nil {
			t.Fatal(err)
		}
		prev := c.clock.Get()
		host.Advance(ClockRemeasure - time.Nanosecond)
		if got := c.clock.Get(); got != prev {
			t.Fatalf("offset %v before ClockRemeasure passed, want %v still", got, prev)
		}
		host.Advance(time.Nanosecond)
		if err := host.WaitArmed(ctx, 1); err != nil { // the loop measured and sleeps again
			t.Fatal(err)
		}
		if got := c.clock.Get(); got != step.want {
			t.Fatalf("database %v ahead (failing %v): offset %v, want %v", step.ahead, step.fail, got, step.want)
		}
		if m, _ := (&Backend{corr: c}).ClockCorrection(); m.Offset != step.want {
			t.Fatalf("ClockCorrection reports %v, want %v", m.Offset, step.want)
		}
	}
}
