package clock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Offset is a Clock whose Now is its base's moved by an offset that may be
// changed while it is in use (Set). It is the host's clock corrected to a
// reference clock (the database's: see MeasureOffset), so that timestamps
// written by processes on different hosts compare as if one clock wrote
// them; and, with a fixed offset, a host clock that is wrong on purpose
// (a test playing a skewed host). Monotonic, timers and tickers are the
// base's: a duration is the same on every clock, whatever its offset.
type Offset struct {
	base Clock
	off  atomic.Int64 // nanoseconds
}

// NewOffset returns base moved by d.
func NewOffset(base Clock, d time.Duration) *Offset {
	o := &Offset{base: base}
	o.off.Store(int64(d))
	return o
}

// Now returns the base's Now plus the offset.
func (o *Offset) Now() time.Time { return o.base.Now().Add(o.Get()) }

// Monotonic returns the base's Monotonic, unmoved.
func (o *Offset) Monotonic() time.Time { return o.base.Monotonic() }

// NewTimer returns a timer of the base.
func (o *Offset) NewTimer(d time.Duration) Timer { return o.base.NewTimer(d) }

// NewTicker returns a ticker of the base.
func (o *Offset) NewTicker(d time.Duration) Ticker { return o.base.NewTicker(d) }

// Get returns the offset in use.
func (o *Offset) Get() time.Duration { return time.Duration(o.off.Load()) }

// Set makes d the offset from now on.
func (o *Offset) Set(d time.Duration) { o.off.Store(int64(d)) }

// Measurement is one estimate of a reference clock's offset from a host's.
type Measurement struct {
	// Offset is the reference's time minus the host's: what the host adds
	// to its own clock to tell the reference's time.
	Offset time.Duration
	// RTT is the round trip of the sample the offset is taken from; the
	// offset is within RTT/2 of the truth, however the trip split.
	RTT time.Duration
	// At is the host's time of the sample.
	At time.Time
}

// MeasureOffset reads the reference clock n times (at least once) and
// estimates its offset from host: each read is stamped with host's time at
// the midpoint of its round trip (the reference read its clock somewhere
// within it), and the sample with the shortest round trip is taken, since
// its midpoint is the least uncertain (NTP's minimum-delay filter). Round
// trips are measured on host's monotonic clock. A failed read fails the
// measurement.
func MeasureOffset(ctx context.Context, host Clock, n int, read func(context.Context) (time.Time, error)) (Measurement, error) {
	if read == nil {
		return Measurement{}, errors.New("clock: MeasureOffset without a reference clock")
	}
	var best Measurement
	for i := range max(n, 1) {
		wall, start := host.Now(), host.Monotonic()
		ref, err := read(ctx)
		if err != nil {
			return Measurement{}, fmt.Errorf("clock: read the reference clock: %w", err)
		}
		rtt := host.Monotonic().Sub(start)
		mid := wall.Add(rtt / 2)
		if i == 0 || rtt < best.RTT {
			best = Measurement{Offset: ref.Sub(mid), RTT: rtt, At: mid}
		}
	}
	return best, nil
}
