package api

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
)

// TestFailureLimiterBounded: however many addresses fail, the limiter
// tracks at most its maximum of them, forgetting the oldest window first;
// the expired windows are dropped as the clock passes them.
func TestFailureLimiterBounded(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	l := newFailureLimiter(c, slog.New(slog.NewTextHandler(io.Discard, nil)), 2, time.Minute, 100)
	for i := range 10000 {
		l.fail(fmt.Sprint("198.51.", i/256, ".", i%256))
		if i%1000 == 0 {
			c.Advance(time.Second)
		}
	}
	if len(l.byIP) != 100 || l.order.Len() != 100 {
		t.Fatalf("limiter tracks %d (%d) addresses, want its maximum 100", len(l.byIP), l.order.Len())
	}
	// The newest address is still counted: its third failure is throttled.
	last := "198.51.39.15" // address 9999
	if _, over := l.fail(last); over {
		t.Fatal("second failure throttled at a limit of 2")
	}
	if wait, over := l.fail(last); !over || wait <= 0 || wait > time.Minute {
		t.Fatalf("third failure: throttled %v for %v, want throttled within the window", over, wait)
	}
	// The window passes: every entry expires and is dropped by the next failure.
	c.Advance(time.Minute)
	l.fail("192.0.2.1")
	if len(l.byIP) != 1 || l.order.Len() != 1 {
		t.Fatalf("after the window the limiter tracks %d addresses, want 1", len(l.byIP))
	}
}
