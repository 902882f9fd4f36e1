package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// expiresAt is the expires_at a new task n gets when enqueued at now,
// held back until runAfter (zero: not held back): n.ExpiresAt, or zero for
// a task that never expires. One not after now or runAfter, or more than
// cks.MaxDelay ahead, is a FieldError naming field.
func expiresAt(n cks.NewTask, now, runAfter time.Time, field string) (time.Time, error) {
	switch at := n.ExpiresAt; {
	case at.IsZero():
		return time.Time{}, nil
	case !at.After(now):
		return time.Time{}, &cks.FieldError{Field: field, Expected: "a time in the future (RFC 3339)"}
	case !runAfter.IsZero() && !at.After(runAfter):
		return time.Time{}, &cks.FieldError{Field: field, Expected: "a time after the task's run_after " + runAfter.Format(time.RFC3339)}
	case at.Sub(now) > cks.MaxDelay:
		return time.Time{}, &cks.FieldError{Field: field,
			Expected: fmt.Sprintf("a time at most %.0fh ahead (%s at the latest)", cks.MaxDelay.Hours(), now.Add(cks.MaxDelay).Format(time.RFC3339))}
	}
	return driver.Time(n.ExpiresAt), nil
}

// expiredReason is the reason of the cancel of a task that expired at at.
func expiredReason(at time.Time) string {
	return "expired: not completed by " + at.UTC().Format(time.RFC3339)
}

// expiryBatch is how many tasks that expire one read of ExpireTasks takes.
const expiryBatch = 500

// ExpireTasks is the lease reaper's pass over expiries: every task with an
// expires_at not after now that is not COMPLETED, FAILED or CANCELLED is
// cancelled as Cancel does (a running attempt's lease revoked and its
// abort requested, WAITING dependants BLOCKED), by actor "reaper" with
// the reason "expired: not completed by TIME". It returns how many it
// cancelled and the next expiry still to come (zero when none), for the
// reaper to wake then.
//
// The tasks that expire are read unlocked in expiry order, up to the
// first not yet due; the due ones are then locked and checked again.
func (s *Service) ExpireTasks(ctx context.Context, now time.Time) (n int, next time.Time, err error) {
	now = driver.Time(now)
	var due []int64
	err = s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		due, next = nil, time.Time{}
		rows, err := ex.TaskExpiring(ctx, expiryBatch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.ExpiresAt.After(now) {
				next = r.ExpiresAt
				break
			}
			due = append(due, r.ID)
		}
		if next.IsZero() && len(rows) == expiryBatch {
			next = now // a full batch due: pass again at once
		}
		return nil
	})
	if err != nil {
		return 0, next, err
	}
	s.nextExpiry.Store(unixNanoOr0(next))
	if len(due) == 0 {
		return 0, next, nil
	}
	err = s.write(ctx, func(ctx context.Context, ex driver.Executor, _ time.Time) error {
		n = 0
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: due, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.ExpiresAt.IsZero() || r.ExpiresAt.After(now) || !admits(cks.TaskState(r.State), cks.ActionCancel) {
				continue // ended, or its expiry moved, since the read
			}
			if _, _, err := cancelTx(ctx, ex, now, r, ActorReaper, expiredReason(r.ExpiresAt)); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, next, err
	}
	return n, next, nil
}

// NextExpiry is the earliest expiry still to come that the last
// ExpireTasks of this service found (zero when it found none, or never
// ran): when the lease reaper's next pass has a task to cancel. A task
// created since that pass is not in it.
func (s *Service) NextExpiry() time.Time {
	ns := s.nextExpiry.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}
