package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// issue gives every task of the claim ts its credential (ClaimParams.Issue)
// or fails the claim: issue runs for each claimed task, in order, and when
// it fails for one, every task of the claim is given back (GiveBack: OPEN
// again, its attempt returned, its lease revoked) and the error returned —
// a claimer never holds a lease it cannot act on, and no task waits for its
// lease to expire because a credential was not issued.
func (s *Service) issue(ctx context.Context, ts []cks.ClaimedTask, issue func(context.Context, cks.ClaimedTask) error) ([]cks.ClaimedTask, error) {
	for _, t := range ts {
		err := issue(ctx, t)
		if err == nil {
			continue
		}
		err = fmt.Errorf("claim: credential of task %d: %w", t.ID, err)
		// Given back even when ctx has ended: the leases must not linger.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, b := range ts {
			if _, gerr := s.GiveBack(gctx, b.ID, b.LeaseToken, "claim given back"); gerr != nil {
				err = errors.Join(err, fmt.Errorf("give back task %d: %w", b.ID, gerr))
			}
		}
		return nil, err
	}
	return ts, nil
}

// GiveBack returns a task its claimer cannot work, fenced by its live
// lease: CLAIMED or RUNNING → OPEN with the claim's attempt given back
// (attempts-1), the lease revoked, and reason in its history, so the next
// claim carries the same attempt number and the attempt counts against no
// max_attempts — as an operator's stop gives it back. A claim whose
// credential could not be issued is given back so ("claim given back"),
// and so is the task of an executor that shuts down before the task is
// done (worker: "released by shutdown: …"). A lease already lost (or
// expired) is ErrLeaseLost: that attempt is the ledger's to count.
func (s *Service) GiveBack(ctx context.Context, id int64, token, reason string) (cks.Task, error) {
	if err := nonBlank("reason", reason, "a non-empty reason (why the attempt is given back)"); err != nil {
		return cks.Task{}, err
	}
	return s.onLease(ctx, id, token, executing, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		return moveOne(ctx, ex, now, move{row: cur, to: cks.TaskOpen, actor: cur.ClaimedBy, reason: reason,
			attempt: cur.Attempts, set: func(r *driver.TaskRow) {
				r.Attempts--
				revoke(r)
			}})
	})
}
