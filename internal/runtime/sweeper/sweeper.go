// Package sweeper runs the in-process background sweepers (ADR-015, DESIGN §7).
//
// A Sweeper is one bounded maintenance pass, SweepOnce. A Runner calls it every
// interval on its own goroutine, records its status, and after every wait reads
// the sweeper's persistent override (cks_sweeper_control.desired_running): an
// explicit false stops the loop, which is how a stop recorded on one node
// reaches the runners of every other node within one interval. Start and Stop
// hold one lock across their whole check-then-act, so concurrent callers can
// never leave two loops running. A Registry holds the runners of a process in
// registration order and applies the start-up rule to all of them.
package sweeper

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

// Kind is the value of Status.Kind for every sweeper record, as documented for
// the list_agents and agent_status tools.
const Kind = "sweeper"

// IDs are the agent ids of every sweeper cks defines, in their order of
// registration (a hub registers those its configuration and services
// have): the closed set an agent_id of the API is one of.
func IDs() []string {
	return []string{LeaseReaperID, DependencyReleaseID, StaleStopReportID, RetentionID,
		ForkDetectionID, ContradictionID, InferenceStalenessID, GraphHealthID}
}

// Sweeper is one background maintenance job.
type Sweeper interface {
	// ID is the sweeper's agent id, e.g. "lease_reaper": lower-case letters,
	// digits and underscores.
	ID() string
	// SweepOnce runs one pass and returns how many items it acted on. It must
	// return promptly once ctx is cancelled.
	SweepOnce(ctx context.Context) (count int, err error)
}

// Scheduler is a Sweeper that knows when it next has work before its
// interval ends (the lease reaper: the next attempt deadline). Its Runner
// passes at NextPass when that is sooner than the end of the interval; a
// zero time is no such moment.
type Scheduler interface {
	NextPass() time.Time
}

// Overrides reads the persistent start/stop override of a sweeper. The store
// implements it; a nil Overrides means there is no override store and every
// config-enabled sweeper runs.
type Overrides interface {
	// GetSweeperDesiredRunning returns the stored desired_running of id, or nil
	// when there is no row (the config default applies).
	GetSweeperDesiredRunning(ctx context.Context, id string) (*bool, error)
}

// Errors reported by this package; test for them with errors.Is.
var (
	// ErrUnknownSweeper: no sweeper with the requested id is registered.
	ErrUnknownSweeper = errors.New("unknown sweeper")
	// ErrDisabledByConfig: the sweeper is disabled by configuration and cannot be
	// started; the override table never enables it.
	ErrDisabledByConfig = errors.New("sweeper is disabled by configuration")
	// ErrDuplicateSweeper: a sweeper with the same id is already registered.
	ErrDuplicateSweeper = errors.New("sweeper already registered")
	// ErrSweepPanicked: SweepOnce panicked; the panic was recovered.
	ErrSweepPanicked = errors.New("sweep panicked")
	// ErrInvalidID: a sweeper id is empty or has characters other than
	// lower-case letters, digits and underscores.
	ErrInvalidID = errors.New("invalid sweeper id")
)

// Options configures a Runner.
type Options struct {
	// Interval is the wait between the end of one pass and the start of the
	// next. It must be positive.
	Interval time.Duration
	// ConfigEnabled is the sweeper's static enablement (CKS_<ID>_SWEEPER_ENABLED).
	// A config-disabled runner never starts.
	ConfigEnabled bool
	// Overrides is read after every wait (the per-tick check); nil disables the
	// check.
	Overrides Overrides
	// Clock stamps last_run_at and measures pass durations; nil means
	// clock.System.
	Clock clock.Clock
	// Logger receives pass failures, recovered panics and self-stops; nil means
	// slog.Default().
	Logger *slog.Logger
	// OnRun, if set, is called on the loop goroutine after every completed pass
	// with the pass duration, its count and its error, e.g. to export metrics.
	// It must not call Start or Stop of the same runner.
	OnRun func(id string, d time.Duration, count int, err error)
	// Leader, when set, is asked before every pass: a runner whose hub is not
	// the maintenance leader skips the pass (its status reads Standby) and
	// waits for the next, so that of several hubs on one database only the
	// leader scans. Nil runs every pass (one hub, or tests).
	Leader Leadership
	// Passes, when set, records every completed pass (cks_sweeper_passes,
	// through Controller.RecordPass), the one history of passes that
	// list_agents' recent_passes and the studio read. Nil records none.
	Passes PassRecorder
	// Hub is the id of this hub recorded with each pass (leader.Elector's
	// ID); "" when there is none.
	Hub string
}

// PassRecorder records a sweeper's completed pass.
type PassRecorder interface {
	RecordPass(ctx context.Context, id string, p cks.SweeperPass) error
}

// Leadership is the one question a runner asks of the hub's leader elector
// (leader.Elector).
type Leadership interface {
	IsLeader() bool
}
