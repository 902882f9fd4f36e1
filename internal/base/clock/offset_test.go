package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
)

// TestOffset: Now is the base's moved by the offset, which Set changes
// while in use; Monotonic and the timers stay the base's.
func TestOffset(t *testing.T) {
	base := clock.NewFake(t0)
	o := clock.NewOffset(base, -30*time.Second)
	if got := o.Now(); !got.Equal(t0.Add(-30*time.Second)) || got.Location() != time.UTC {
		t.Fatalf("Now = %v, want t0-30s in UTC", got)
	}
	if got := o.Monotonic(); !got.Equal(t0) {
		t.Fatalf("Monotonic = %v, want the base's %v: durations do not depend on the offset", got, t0)
	}
	o.Set(2 * time.Second)
	if got, off := o.Now(), o.Get(); !got.Equal(t0.Add(2*time.Second)) || off != 2*time.Second {
		t.Fatalf("after Set: Now = %v, offset %v", got, off)
	}
	tm := o.NewTimer(time.Second)
	if base.Armed() != 1 {
		t.Fatal("the timer is not the base's")
	}
	base.Advance(time.Second)
	if _, ok := fired(tm.C()); !ok {
		t.Fatal("the timer did not fire by the base's time")
	}
}

// TestMeasureOffset: a reference clock 45 s ahead of the host, read over
// round trips that split unevenly, is measured from the shortest one (its
// midpoint is exact here); a failed read fails the measurement; n below 1
// still reads once.
func TestMeasureOffset(t *testing.T) {
	const ahead = 45 * time.Second
	for _, tc := range []struct {
		name string
		// trips are each read's delay out and back.
		trips      [][2]time.Duration
		wantOffset time.Duration
		wantRTT    time.Duration
	}{
		{"shortest trip wins", [][2]time.Duration{{30 * time.Millisecond, 10 * time.Millisecond},
			{time.Millisecond, time.Millisecond}, {5 * time.Millisecond, 50 * time.Millisecond}}, ahead, 2 * time.Millisecond},
		// A lone uneven trip is off by half the difference, within RTT/2.
		{"one uneven trip", [][2]time.Duration{{30 * time.Millisecond, 10 * time.Millisecond}}, ahead + 10*time.Millisecond, 40 * time.Millisecond},
		{"first of equal trips", [][2]time.Duration{{4 * time.Millisecond, 0}, {0, 4 * time.Millisecond}}, ahead + 2*time.Millisecond, 4 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := clock.NewFake(t0)
			i := 0
			read := func(context.Context) (time.Time, error) {
				trip := tc.trips[i]
				i++
				host.Advance(trip[0])
				ref := host.Now().Add(ahead)
				host.Advance(trip[1])
				return ref, nil
			}
			m, err := clock.MeasureOffset(context.Background(), host, len(tc.trips), read)
			if err != nil {
				t.Fatal(err)
			}
			if i != len(tc.trips) {
				t.Fatalf("read %d times, want %d", i, len(tc.trips))
			}
			if m.Offset != tc.wantOffset || m.RTT != tc.wantRTT {
				t.Fatalf("offset %v rtt %v, want %v and %v", m.Offset, m.RTT, tc.wantOffset, tc.wantRTT)
			}
			if d := m.Offset - ahead; d < -m.RTT/2 || d > m.RTT/2 {
				t.Fatalf("offset %v is off by %v, more than RTT/2 (%v)", m.Offset, d, m.RTT/2)
			}
		})
	}

	host := clock.NewFake(t0)
	reads := 0
	m, err := clock.MeasureOffset(context.Background(), host, 0, func(context.Context) (time.Time, error) {
		reads++
		return host.Now().Add(-time.Minute), nil
	})
	if err != nil || reads != 1 || m.Offset != -time.Minute || !m.At.Equal(t0) {
		t.Fatalf("n=0: %d reads, %+v, %v; want one read measuring -1m at t0", reads, m, err)
	}
	down := errors.New("database down")
	if _, err := clock.MeasureOffset(context.Background(), host, 3, func(context.Context) (time.Time, error) {
		return time.Time{}, down
	}); !errors.Is(err, down) {
		t.Fatalf("a failed read: %v, want it wrapped", err)
	}
}
