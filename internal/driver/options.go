package driver

import (
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
)

// Options are the settings every backend's Open accepts.
type Options struct {
	// Clock tells the time of every write whose time is not an argument.
	Clock clock.Clock
	// ChangePollInterval is the change poll period of a polling backend
	// (see WithChangePollInterval); DefaultChangePollInterval when <= 0.
	ChangePollInterval time.Duration
	// MovesInterval is the least time between two publications of
	// cks.TopicTasksMoved by one handle (see WithMovesInterval);
	// DefaultMovesInterval when <= 0.
	MovesInterval time.Duration
	// HostClockSkew moves the host's clock by a fixed offset before any
	// correction (see WithHostClockSkew). Test only.
	HostClockSkew time.Duration
	// NoClockCorrection leaves the host's clock uncorrected on a database
	// with a clock of its own (see WithoutClockCorrection). Test only.
	NoClockCorrection bool
}

// Option sets one of the Options.
type Option func(*Options)

// WithClock makes the store read the time from c instead of the system clock.
func WithClock(c clock.Clock) Option { return func(o *Options) { o.Clock = c } }

// WithHostClockSkew plays a host whose clock is off by d: the clock of a
// backend opened without WithClock is the system clock plus d, before the
// backend corrects it to the database's. For tests of the correction
// (CKS_TEST_CLOCK_SKEW); an injected clock is used as it is.
func WithHostClockSkew(d time.Duration) Option { return func(o *Options) { o.HostClockSkew = d } }

// WithoutClockCorrection keeps a backend opened without WithClock on the
// host's clock even when the database has a clock of its own, as before
// the correction existed: for the tests that show what it prevents
// (CKS_TEST_CLOCK_CORRECTION=off).
func WithoutClockCorrection() Option { return func(o *Options) { o.NoClockCorrection = true } }

// ApplyOptions returns the Options that opts produce, with defaults for the
// rest (the system clock).
func ApplyOptions(opts []Option) Options {
	o := Options{Clock: clock.System{}}
	for _, f := range opts {
		f(&o)
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.ChangePollInterval <= 0 {
		o.ChangePollInterval = DefaultChangePollInterval
	}
	if o.MovesInterval <= 0 {
		o.MovesInterval = DefaultMovesInterval
	}
	return o
}

// DefaultChangePollInterval is how often a polling backend (SQLite) checks
// for changes made by other processes; see WithChangePollInterval.
const DefaultChangePollInterval = 100 * time.Millisecond

// WithChangePollInterval sets how often a polling backend (SQLite) checks
// cks_changes for changes committed by other processes. Backends that are
// pushed changes (Postgres) ignore it. d <= 0 means the default.
func WithChangePollInterval(d time.Duration) Option {
	return func(o *Options) { o.ChangePollInterval = d }
}

// DefaultMovesInterval is how often, at most, one handle publishes
// cks.TopicTasksMoved after the task moves it made: a viewer (the studio's
// board) learns of a move made in another process within about this long,
// and a process that makes thousands of moves a second publishes one
// notification a second instead of one per transaction — on Postgres every
// NOTIFYing commit takes a global lock, so a NOTIFY per move would
// serialise the completions (issue 27). See WithMovesInterval.
const DefaultMovesInterval = time.Second

// WithMovesInterval sets the least time between two publications of
// cks.TopicTasksMoved by the handle (package notifier's Coalescer, which
// the backend gives the ledger). d <= 0 means the default.
func WithMovesInterval(d time.Duration) Option {
	return func(o *Options) { o.MovesInterval = d }
}

// Time normalises t to what every backend can store exactly: UTC with
// microsecond precision (Postgres timestamptz resolution).
func Time(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
