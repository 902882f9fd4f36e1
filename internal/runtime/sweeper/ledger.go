package sweeper

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// Ids of the ledger sweepers.
const (
	LeaseReaperID       = "lease_reaper"
	DependencyReleaseID = "dependency_release"
	StaleStopReportID   = "stale_stop_report"
)

// DefaultStaleStopThreshold is how long a task may stay STOPPED before the
// stale_stop_report sweeper reports it: CKS_STALE_STOP_THRESHOLD's default.
const DefaultStaleStopThreshold = config.DefaultStaleStopThreshold

// LeaseReaper cancels the tasks past their expires_at
// (ledger.Service.ExpireTasks), ends the attempts that ran past their attempt timeout
// (ledger.Service.TimeOutAttempts: an abort as a stop's, then retried or
// FAILED by max_attempts), and reclaims the task leases that expired unrenewed: back to
// OPEN, or FAILED ("max attempts") when attempts are used up. The next
// claim takes such a lease back at once (the ledger's claim does), so the
// reaper is the safety net for the tasks nobody claims: it is the periodic
// caller of ledger.Service.ReclaimExpired, which skips the
// dispatch-excluded states. It also settles abort requests whose deadline
// passed with nobody left waiting for them (ledger.Service.ExpireAborts),
// so every abort ends confirmed or unconfirmed even when the stop's caller
// went away. And it releases the claims of the knowledge store's pipeline
// objects (ADR-007 §2) not taken or renewed within StaleWindow
// (knowledge.Service.ReleaseStaleClaims), so an object whose step worker died
// is claimed again by another worker.
type LeaseReaper struct {
	Tasks LeaseStore
	// Claims holds the pipeline's object claims; nil releases none.
	Claims ClaimStore
	Clock  clock.Clock
	// StaleWindow is the lease of a pipeline object claim, which names
	// none: the default lease (ledger.Settings.DefaultLease,
	// CKS_STALE_WINDOW). Task leases carry their own length.
	StaleWindow time.Duration
	// ClaimTokens, when set, deletes the credentials that no longer
	// authenticate — the task-scoped credentials of leases that ended, and
	// the studio sessions that expired (auth.Service.DeleteEndedCredentials) — and
	// returns how many.
	ClaimTokens func(context.Context) (int, error)
}

// LeaseStore is what LeaseReaper needs of the ledger.
type LeaseStore interface {
	ReclaimExpired(ctx context.Context, now time.Time) (int, error)
	ExpireAborts(ctx context.Context, now time.Time) (int, error)
	TimeOutAttempts(ctx context.Context, now time.Time) (int, time.Time, error)
	NextAttemptDeadline() time.Time
	ExpireTasks(ctx context.Context, now time.Time) (int, time.Time, error)
	NextExpiry() time.Time
}

// ClaimStore is what LeaseReaper needs of the knowledge store.
type ClaimStore interface {
	ReleaseStaleClaims(ctx context.Context, olderThan time.Time) (int, error)
}

// ID returns "lease_reaper".
func (LeaseReaper) ID() string { return LeaseReaperID }

// NextPass is when the next attempt deadline or expiry falls, whichever
// is first (the ledger's NextAttemptDeadline, NextExpiry): the runner
// passes again then, not only at the end of its interval, so an attempt is
// ended and a task cancelled on time. An attempt claimed, or a task
// created, after a pass is seen by the next one, at most an interval
// later.
func (r LeaseReaper) NextPass() time.Time {
	a, b := r.Tasks.NextAttemptDeadline(), r.Tasks.NextExpiry()
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// SweepOnce cancels every task past its expires_at, ends every attempt
// past its attempt timeout, reclaims every expired task lease, settles
// every overdue abort, releases every object claim older than StaleWindow
// and revokes the credentials of ended leases; it returns how many of all
// six it handled.
func (r LeaseReaper) SweepOnce(ctx context.Context) (int, error) {
	now := r.Clock.Now()
	e, _, err := r.Tasks.ExpireTasks(ctx, now)
	if err != nil {
		return e, err
	}
	t, _, err := r.Tasks.TimeOutAttempts(ctx, now)
	t += e
	if err != nil {
		return t, err
	}
	n, err := r.Tasks.ReclaimExpired(ctx, now)
	n += t
	if err != nil {
		return n, err
	}
	m, err := r.Tasks.ExpireAborts(ctx, now)
	if err != nil {
		return n + m, err
	}
	var o int
	if r.Claims != nil {
		if o, err = r.Claims.ReleaseStaleClaims(ctx, now.Add(-r.StaleWindow)); err != nil {
			return n + m + o, err
		}
	}
	if r.ClaimTokens == nil {
		return n + m + o, nil
	}
	c, err := r.ClaimTokens(ctx)
	return n + m + o + c, err
}

// DependencyRelease is the safety net behind the ledger's own release on
// completion: WAITING tasks whose dependencies are all COMPLETED become OPEN,
// and those with a FAILED or CANCELLED dependency become BLOCKED.
type DependencyRelease struct {
	Tasks *ledger.Service
}

// ID returns "dependency_release".
func (DependencyRelease) ID() string { return DependencyReleaseID }

// SweepOnce releases or blocks what it can and returns how many tasks moved.
func (d DependencyRelease) SweepOnce(ctx context.Context) (int, error) {
	res, err := d.Tasks.ReleaseDependencies(ctx)
	return res.Released + res.Blocked, err
}

// StaleStopReport counts tasks held STOPPED longer than Threshold (an operator
// hold that may have been forgotten) and logs them. The count is the pass's
// result, so it shows in the sweeper status and metrics; the tasks themselves
// are listed by GET /v1/tasks?stopped_longer_than=.
type StaleStopReport struct {
	Tasks     *ledger.Service
	Clock     clock.Clock
	Threshold time.Duration
	Logger    *slog.Logger
}

// ID returns "stale_stop_report".
func (StaleStopReport) ID() string { return StaleStopReportID }

// StaleStopFilter selects the tasks held STOPPED for at least threshold at
// now: the one definition of a stale stop, which the report counts, the
// list_tasks filter stopped_longer_than selects and the studio flags
// (IsStaleStop).
func StaleStopFilter(now time.Time, threshold time.Duration) cks.TaskFilter {
	return cks.TaskFilter{States: []cks.TaskState{cks.TaskStopped}, StateChangedBefore: now.Add(-threshold)}
}

// IsStaleStop reports whether StaleStopFilter(now, threshold) selects t.
func IsStaleStop(t cks.Task, now time.Time, threshold time.Duration) bool {
	f := StaleStopFilter(now, threshold)
	return slices.Contains(f.States, t.State) && !t.StateChangedAt.IsZero() && !t.StateChangedAt.After(f.StateChangedBefore)
}

// SweepOnce counts the tasks stopped for longer than the threshold.
func (s StaleStopReport) SweepOnce(ctx context.Context) (int, error) {
	n, err := s.Tasks.CountTasks(ctx, StaleStopFilter(s.Clock.Now(), s.Threshold))
	if err == nil && n > 0 && s.Logger != nil {
		s.Logger.Warn("tasks stopped longer than the threshold", "count", n, "threshold", s.Threshold.String(),
			"list", "cks task list --state STOPPED")
	}
	return n, err
}
