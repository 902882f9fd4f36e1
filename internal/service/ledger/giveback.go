package ledger

import (
	"context"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// GiveBack returns a task its claimer cannot work, fenced by its live
// lease: CLAIMED or RUNNING → OPEN with the claim's attempt given back
// (attempts-1), the lease revoked, and reason in its history, so the next
// claim carries the same attempt number and the attempt counts against no
// max_attempts — as an operator's stop gives it back. The task of an
// executor that shuts down before the task is done is given back so
// (worker: "released by shutdown: …"). A lease already lost (or
// expired) is ErrLeaseLost: that attempt is the ledger's to count.
func (s *Service) GiveBack(ctx context.Context, id int64, token, reason string) (cks.Task, error) {
	if err := nonBlank("reason", reason, "a non-empty reason (why the attempt is given back)"); err != nil {
		return cks.Task{}, err
	}
	return s.onLease(ctx, id, token, executing, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		return moveOne(ctx, ex, now, move{row: cur, to: cks.TaskOpen, actor: cur.ClaimedBy, reason: reason,
			attempt: cur.Attempts, end: OutcomeGivenBack, set: func(r *driver.TaskRow) {
				r.Attempts--
				revoke(r)
			}})
	})
}
