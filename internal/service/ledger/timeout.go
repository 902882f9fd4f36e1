package ledger

import (
	"context"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// runningStates are the states of an attempt that runs: those an attempt
// timeout ends (a review's lease has no attempt timeout).
var runningStates = [...]cks.TaskState{cks.TaskClaimed, cks.TaskRunning}

// attemptTimeout is r's attempt timeout; 0 when it has none.
func attemptTimeout(r driver.TaskRow) time.Duration {
	return time.Duration(r.AttemptTimeoutMs) * time.Millisecond
}

// attemptDeadline is when r's running attempt times out: its claim plus
// its attempt timeout. ok is false when r runs no attempt (not CLAIMED or
// RUNNING, or no claim time) or has no timeout. The deadline is computed,
// never stored: a claim writes nothing for it, and an update of the
// timeout moves the deadline of the attempt that runs.
func attemptDeadline(r driver.TaskRow) (deadline time.Time, ok bool) {
	st := cks.TaskState(r.State)
	if r.AttemptTimeoutMs <= 0 || r.ClaimedAt.IsZero() || r.LeaseTokenHash == "" ||
		(st != cks.TaskClaimed && st != cks.TaskRunning) {
		return time.Time{}, false
	}
	return r.ClaimedAt.Add(attemptTimeout(r)), true
}

// timedOutReason is the reason of the event, the abort request and the
// last error of an attempt ended by its timeout d: "timed out after 10m".
func timedOutReason(d time.Duration) string {
	return "timed out after " + cks.FormatDuration(d)
}

// NextAttemptDeadline is the earliest deadline of a running attempt that
// the last TimeOutAttempts of this service found not yet due (zero when
// it found none, or never ran): when the lease reaper's next pass has an
// attempt to end. An attempt claimed since that pass is not in it.
func (s *Service) NextAttemptDeadline() time.Time {
	ns := s.nextDeadline.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// unixNanoOr0 is t in Unix ns, 0 for the zero time.
func unixNanoOr0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timedBatch is how many running attempts with a timeout one read of
// TimeOutAttempts takes.
const timedBatch = 500

// TimeOutAttempts is the lease reaper's pass over attempt deadlines: every
// CLAIMED or RUNNING task whose attempt runs past its attempt timeout at
// now (claimed_at + attempt_timeout <= now) is ended through the abort
// path a stop uses — its lease revoked, a pending abort recorded for its
// executor (deadline cks.DefaultAbortDeadline, published on
// TopicTaskAborts, so an exec agent kills its command's process tree and
// confirms) — and, as an expired lease is, moved back to OPEN with its
// attempt counted, or to FAILED when its attempts reached max_attempts
// (its WAITING dependants BLOCKED). The event is by actor "reaper", its
// reason and the task's last error timedOutReason ("timed out after
// 10m"). It returns how many attempts it ended and the next deadline of
// an attempt still running (zero when none has one), for the reaper to
// wake then.
//
// The attempts with a timeout are read unlocked (they are few: the tasks
// in hand across the fleet that have one); only the overdue ones are then
// locked and checked again, so the pass never holds the lease of an
// attempt that is not ending (a heartbeat or a completion waits for none
// of them).
func (s *Service) TimeOutAttempts(ctx context.Context, now time.Time) (n int, next time.Time, err error) {
	now = driver.Time(now)
	var overdue []int64
	err = s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		overdue, next = nil, time.Time{}
		for after := int64(0); ; {
			rows, err := ex.TaskAttemptsTimed(ctx, driver.TaskAttemptsTimedParams{States: strs(runningStates[:]),
				ClaimedBefore: now, After: after, Limit: timedBatch})
			if err != nil {
				return err
			}
			for _, r := range rows {
				at, ok := attemptDeadline(r)
				switch {
				case !ok:
				case !at.After(now):
					overdue = append(overdue, r.ID)
				case next.IsZero() || at.Before(next):
					next = at
				}
			}
			if len(rows) < timedBatch {
				return nil
			}
			after = rows[len(rows)-1].ID
		}
	})
	if err != nil {
		return 0, next, err
	}
	s.nextDeadline.Store(unixNanoOr0(next))
	if len(overdue) == 0 {
		return 0, next, nil
	}
	err = s.write(ctx, func(ctx context.Context, ex driver.Executor, _ time.Time) error {
		n = 0
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: overdue, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		var (
			moves  []move
			failed []int64
		)
		for _, r := range rows {
			at, ok := attemptDeadline(r)
			if !ok || at.After(now) {
				continue // ended, or claimed again, since the read
			}
			why := timedOutReason(attemptTimeout(r))
			if _, err := insertAbort(ctx, ex, now, r, ActorReaper, why, cks.DefaultAbortDeadline); err != nil {
				return err
			}
			if r.Attempts >= r.MaxAttempts {
				reason := why + " (max attempts)"
				moves = append(moves, move{row: r, to: cks.TaskFailed, actor: ActorReaper, reason: reason, end: OutcomeTimedOut,
					set: func(r *driver.TaskRow) { r.LastError = reason; revoke(r) }})
				failed = append(failed, r.ID)
				continue
			}
			moves = append(moves, move{row: r, to: cks.TaskOpen, actor: ActorReaper, reason: why, end: OutcomeTimedOut,
				set: func(r *driver.TaskRow) { r.LastError = why; revoke(r) }})
		}
		if _, err := transition(ctx, ex, now, moves); err != nil {
			return err
		}
		for _, id := range failed {
			if _, err := blockDependants(ctx, ex, now, "ledger", id, cks.TaskFailed, "max attempts"); err != nil {
				return err
			}
		}
		n = len(moves)
		return nil
	})
	if err != nil {
		return 0, next, err
	}
	return n, next, nil
}
