// Package backend opens a database from its URL: the driver the URL names
// (internal/driver/sqlite or internal/driver/postgres) under the services that hold every
// rule (Backend). It is the only package that imports both drivers and
// every service.
package backend

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres"
	"github.com/cks-dev/cks/internal/driver/sqlite"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/service/notifier"
	"github.com/cks-dev/cks/internal/service/schedule"
)

// Open opens the store named by url (ParseURL says which forms it takes):
// Postgres, or SQLite, creating the file and its directory. Any other
// form is refused with an error that lists the accepted ones.
// opts (driver.WithClock, driver.WithChangePollInterval) apply to the driver
// and the services of the returned handle.
//
// Without driver.WithClock, the services tell the time by the host's clock
// corrected to the database's when the database has a clock of its own
// (Postgres; see Clock): its offset is measured before Open returns and
// again every ClockRemeasure until Close.
func Open(ctx context.Context, url string, opts ...driver.Option) (*Backend, error) {
	d, err := openDriver(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	corr, opts, err := correctClock(ctx, d, opts)
	if err != nil {
		d.Close() //nolint:errcheck // the measurement's error is the one to report
		return nil, err
	}
	b := New(d, opts...)
	b.corr = corr
	if corr != nil {
		if err := corr.loop.Start(context.WithoutCancel(ctx)); err != nil {
			b.Close() //nolint:errcheck // the start's error is the one to report
			return nil, err
		}
	}
	return b, nil
}

// openDriver opens the driver url names.
func openDriver(ctx context.Context, url string, opts []driver.Option) (driver.Driver, error) {
	dialect, target, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	if dialect == "postgres" {
		return postgres.Open(ctx, target, opts...)
	}
	return sqlite.Open(ctx, target, opts...)
}

// ParseURL tells which dialect a database URL names ("sqlite" or
// "postgres") and what that dialect's driver opens: the file path of a
// SQLite URL, the whole URL of a Postgres one. It is the one rule of what
// a database URL is:
//   - "postgres://…" or "postgresql://…", and a libpq keyword/value
//     connection string ("host=db user=cks password=… dbname=cks", naming
//     a keyword libpq knows): Postgres;
//   - "sqlite:PATH" or "sqlite://PATH": SQLite, any path;
//   - a plain file path: SQLite — unless it looks like a URL (any other
//     "scheme:" or "scheme://") or holds "=" (a mistyped connection
//     string), which are refused naming the forms (a file whose name
//     has ":" or "=" is given as sqlite:PATH), so that no such string
//     ever becomes a SQLite file named after it (password included).
func ParseURL(url string) (dialect, target string, err error) {
	switch {
	case url == "":
		return "", "", fmt.Errorf("empty database URL: %w", errForms)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return "postgres", url, nil
	case strings.HasPrefix(url, "sqlite://"):
		return "sqlite", strings.TrimPrefix(url, "sqlite://"), nil
	case strings.HasPrefix(url, "sqlite:"):
		return "sqlite", strings.TrimPrefix(url, "sqlite:"), nil
	case postgres.IsConnString(url):
		return "postgres", url, nil
	}
	if m := schemeRE.FindStringSubmatch(url); m != nil {
		return "", "", fmt.Errorf("unknown database scheme %q in %q (a file whose name has a colon is sqlite:PATH): %w",
			m[1], RedactURL(url), errForms)
	}
	// A path that starts at the root or here is a path, "=" or not (a test's
	// temporary directory /tmp/TestX_a=b/…): no libpq keyword starts so.
	if strings.Contains(url, "=") && !strings.HasPrefix(url, "/") && !strings.HasPrefix(url, "./") && !strings.HasPrefix(url, "../") {
		return "", "", fmt.Errorf("%q is neither a file path nor a connection string libpq knows (a file whose name has \"=\" "+
			"is sqlite:PATH; a keyword/value string names host, dbname, user, …): %w", RedactURL(url), errForms)
	}
	return "sqlite", url, nil
}

// schemeRE matches a URL's scheme: letters, then letters, digits, "+",
// "-" or ".", then ":".
var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

var errForms = fmt.Errorf("expected a file path, sqlite:PATH, postgres://USER@HOST:PORT/DB, or host=HOST dbname=DB user=USER …: %w", cks.ErrInvalid)

// RedactURL is a database URL as cks prints it (cks config, cks doctor,
// the logs, errors): every password hidden as xxxxx, in whatever form it
// was given — the user information of a URL ("postgres://u:pw@h/db"),
// parsed or not, and a password= or sslpassword= parameter of a URL's
// query or of a libpq keyword/value string (quoted or not). It is the one
// redaction of a database URL.
func RedactURL(url string) string {
	s := url
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if user, _, hasPass := strings.Cut(rest[:at], ":"); hasPass {
				s = scheme + "://" + user + ":xxxxx" + rest[at:]
			}
		}
	}
	return passwordParamRE.ReplaceAllString(s, "${1}xxxxx")
}

// passwordParamRE matches a password parameter and its value: in a URL's
// query (up to "&" or "#"), or in a keyword/value string (a quoted value,
// or up to a space).
var passwordParamRE = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&#\s]*)`)

// Backend is one database's services, each the one service of its domain,
// built once per process over one driver and handed to every surface (the
// hub builds its ops.Services from them): the task ledger, the knowledge
// store, process liveness, principals, sweeper overrides, schedules, and change
// notification (one listener of the driver for every watcher of the
// process). Storage health is the driver's. Backend adds no rule of its own.
type Backend struct {
	Tasks      *ledger.Service
	Objects    *knowledge.Service
	Liveness   *liveness.Service
	Principals *auth.Service
	Sweepers   *sweeper.Controller
	// Schedules are the schedules (issue 42), whose tasks the ledger
	// creates; the hub's leader fires them (schedule.Runner).
	Schedules *schedule.Service
	Changes   *notifier.Notifier
	// moves publishes cks.TopicTasksMoved for the ledger's moves,
	// coalesced (notifier.Coalescer); closed first by Close.
	moves *notifier.Coalescer
	drv   driver.Driver
	clk   clock.Clock
	// corr corrects clk to the database's clock; nil when nothing does.
	corr *correction
}

// New returns the services over d, which the Backend owns from then on
// (Close closes it). opts are those d was opened with: the clock
// (driver.WithClock) tells the services the time of every write whose time
// is not an argument.
//
// The ledger's moves publish cks.TopicTasksMoved through one
// notifier.Coalescer of the handle: at most once per
// driver.WithMovesInterval, outside the moves' transactions.
func New(d driver.Driver, opts ...driver.Option) *Backend {
	o := driver.ApplyOptions(opts)
	clk := o.Clock
	changes := notifier.New(d.Listener, nil)
	tasks := ledger.NewService(d, changes, opts...)
	// The interval is real time on the system clock, never the services'
	// (an injected fake): it paces notifications, it decides nothing
	// stored, and a test that counts its fake's armed timers must not meet
	// it.
	moves := notifier.NewCoalescer(notifier.CoalescerConfig{Topic: cks.TopicTasksMoved, Interval: o.MovesInterval,
		Clock: clock.System{}, Publish: func(ctx context.Context) error {
			return d.Executor().Notify(ctx, cks.TopicTasksMoved)
		}})
	tasks.NoteMovesTo(moves)
	principals := auth.NewService(d)
	principals.CacheTokens(changes, clk)
	return &Backend{
		Tasks:      tasks,
		Objects:    knowledge.New(d, clk),
		Liveness:   liveness.NewService(d, clk),
		Principals: principals,
		Sweepers:   sweeper.NewController(d, clk),
		Schedules:  schedule.New(d, tasks, clk),
		Changes:    changes,
		moves:      moves,
		drv:        d,
		clk:        clk,
	}
}

// FlushMoves publishes at once the task moves of this handle not yet
// published (cks.TopicTasksMoved; notifier.Coalescer.Flush): until the next
// move, the handle writes nothing more in the background. For tests that
// compare the database before and after a call that must change nothing.
func (b *Backend) FlushMoves(ctx context.Context) error { return b.moves.Flush(ctx) }

// closeWait bounds Close's wait for the last publication of
// cks.TopicTasksMoved: one statement, unless the database is gone.
const closeWait = 5 * time.Second

// Clock returns the clock the services tell the time by, for the loops of
// the process that stamp or judge times in the database (the liveness
// reporter, the lease reaper, the hub's liveness reads): the injected one
// (driver.WithClock); else, on a database with a clock of its own, the
// host's clock corrected to it, so that heartbeats, lease deadlines and
// liveness written and judged on hosts whose clocks disagree are all on the
// database's clock; else the host's.
func (b *Backend) Clock() clock.Clock { return b.clk }

// ClockCorrection returns the last measurement of the database's clock
// against the host's and whether the services' clock is corrected by it
// (ok false on SQLite, with an injected clock, or the correction turned
// off).
func (b *Backend) ClockCorrection() (m clock.Measurement, ok bool) {
	if b.corr == nil {
		return clock.Measurement{}, false
	}
	return *b.corr.last.Load(), true
}

// Driver returns the driver the services run on, for tests of what the
// services leave in the database.
func (b *Backend) Driver() driver.Driver { return b.drv }

// StorageHealth tells, cheaply and without writing, whether the database
// takes writes (the driver's Health): nil; an error matching
// cks.ErrStorageReadOnly when it refuses them; one matching
// cks.ErrStorageFull when a write of this process failed for lack of space
// within driver.FaultMemory; any other error when the check itself failed.
// A hub refuses to start on a read-only database and reports the rest at
// /healthz.
func (b *Backend) StorageHealth(ctx context.Context) error { return b.drv.Health(ctx) }

// DatabaseNow reads the database's own clock, when it has one of its own:
// Postgres's clock_timestamp() (own true). A SQLite database is a file of
// this host, whose clock it has: own false, and the time is zero.
func (b *Backend) DatabaseNow(ctx context.Context) (t time.Time, own bool, err error) {
	c, ok := b.drv.(interface {
		DatabaseNow(ctx context.Context) (time.Time, error)
	})
	if !ok {
		return time.Time{}, false, nil
	}
	t, err = c.DatabaseNow(ctx)
	return t, true, err
}

// Dialect names the database: "sqlite" or "postgres".
func (b *Backend) Dialect() string { return b.drv.Dialect() }

// Close publishes the moves not yet published (cks.TopicTasksMoved, within
// closeWait), ends the change listener (every WatchChanges returns), then
// closes the driver's connections. The services are unusable afterwards.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	moved := b.moves.Close(ctx)
	if b.corr != nil {
		b.corr.loop.Stop(context.Background()) //nolint:errcheck // a background context waits for the loop
	}
	b.Changes.Close()
	return errors.Join(moved, b.drv.Close())
}
