package backend

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
)

// One clock (issue 26, item 2). Heartbeats, lease deadlines and the times
// liveness and leases are judged at are written by processes on many hosts
// into one database; compared across hosts, a few seconds of skew would
// flip a process's status or expire a lease early. So every process tells
// the time by its host's clock corrected by the measured offset of the
// database's clock: the times are the database's, while the rules that
// compare them stay in the Go services (and tests inject clock.Fake).

// ClockSamples is how many round trips a measurement of the database's
// clock takes; the shortest one's midpoint is taken.
const ClockSamples = 5

// ClockRemeasure is how often an open backend measures the database's
// clock again, so that the correction follows a host clock that drifts or
// is stepped.
const ClockRemeasure = time.Minute

// ClockOptions are the options of Open that make a host's clock wrong on
// purpose, as c says (config.ParseTestClock reads it from the test-only
// variables CKS_TEST_CLOCK_SKEW and CKS_TEST_CLOCK_CORRECTION): the
// process-level tests of the correction run hubs and agents whose host
// clocks are off. The zero TestClock gives none.
func ClockOptions(c config.TestClock) []driver.Option {
	var opts []driver.Option
	if c.Skew != 0 {
		opts = append(opts, driver.WithHostClockSkew(c.Skew))
	}
	if c.Uncorrected {
		opts = append(opts, driver.WithoutClockCorrection())
	}
	return opts
}

// correction keeps a backend's clock corrected to the database's.
type correction struct {
	host   clock.Clock   // the host's clock, uncorrected
	clock  *clock.Offset // host corrected by the last measurement
	read   func(context.Context) (time.Time, error)
	last   atomic.Pointer[clock.Measurement]
	loop   *lifecycle.Base
	logger *slog.Logger
}

// correctClock decides the clock of a backend opened on d with opts. An
// injected clock (driver.WithClock) is kept as it is, correction nil. Else
// the host's clock (the system's, moved by driver.WithHostClockSkew) is
// corrected by the database's when d has a clock of its own and the
// correction is not turned off: measured once here, a failure failing the
// open. It returns opts with the clock the services are to use.
func correctClock(ctx context.Context, d driver.Driver, opts []driver.Option) (*correction, []driver.Option, error) {
	var given driver.Options
	for _, f := range opts {
		f(&given)
	}
	if given.Clock != nil {
		return nil, opts, nil
	}
	var host clock.Clock = clock.System{}
	if given.HostClockSkew != 0 {
		host = clock.NewOffset(host, given.HostClockSkew)
	}
	opts = append(opts[:len(opts):len(opts)], driver.WithClock(host))
	db, own := d.(interface {
		DatabaseNow(ctx context.Context) (time.Time, error)
	})
	if !own || given.NoClockCorrection {
		return nil, opts, nil
	}
	c, err := newCorrection(ctx, host, db.DatabaseNow)
	if err != nil {
		return nil, nil, err
	}
	return c, append(opts, driver.WithClock(c.clock)), nil
}

// newCorrection measures read's clock against host's once; its loop, not
// started, measures again every ClockRemeasure.
func newCorrection(ctx context.Context, host clock.Clock, read func(context.Context) (time.Time, error)) (*correction, error) {
	c := &correction{host: host, read: read, logger: slog.Default()}
	m, err := clock.MeasureOffset(ctx, host, ClockSamples, c.read)
	if err != nil {
		return nil, fmt.Errorf("measure the database's clock: %w", err)
	}
	c.last.Store(&m)
	c.clock = clock.NewOffset(host, m.Offset)
	c.loop = lifecycle.New(lifecycle.Config{Run: c.remeasure})
	return c, nil
}

// remeasure measures the offset again every ClockRemeasure until ctx ends;
// a failed measurement keeps the last offset.
func (c *correction) remeasure(ctx context.Context) {
	for clock.Sleep(ctx, c.host, ClockRemeasure, nil) == nil {
		m, err := clock.MeasureOffset(ctx, c.host, ClockSamples, c.read)
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Warn("measuring the database's clock failed; the last offset stays in use",
					"offset", c.clock.Get().String(), "err", err)
			}
			continue
		}
		c.last.Store(&m)
		c.clock.Set(m.Offset)
	}
}
