package ledger

import (
	"context"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// reclaim ends the leases of rows (read and locked in ex's transaction, in
// a leased state), whose executor is gone — its lease expired unrenewed,
// or its process is known to have exited (ReleaseExecutor): a REVIEWING
// task goes back to NEEDS_REVIEW ("review " + why); a task whose attempts
// reached max_attempts to FAILED ("max attempts", a dead letter, its
// WAITING dependants blocked); any other back to OPEN with the attempt
// counted and why as its last error. Every lease is revoked, so its token
// — which a zombie executor may still hold — is refused from then on. It
// returns the rows as written.
func reclaim(ctx context.Context, ex driver.Executor, now time.Time, rows []driver.TaskRow, actor, why string) ([]driver.TaskRow, error) {
	moves := make([]move, len(rows))
	var failed []int64
	for i, r := range rows {
		switch {
		case cks.TaskState(r.State) == cks.TaskReviewing:
			// An abandoned review goes back to the review queue.
			moves[i] = move{row: r, to: cks.TaskNeedsReview, actor: actor, reason: "review " + why, set: revoke}
		case r.Attempts >= r.MaxAttempts:
			moves[i] = move{row: r, to: cks.TaskFailed, actor: actor, reason: "max attempts", end: OutcomeReclaimed,
				set: func(r *driver.TaskRow) { r.LastError = "max attempts"; revoke(r) }}
			failed = append(failed, r.ID)
		default:
			moves[i] = move{row: r, to: cks.TaskOpen, actor: actor, reason: why, end: OutcomeReclaimed,
				set: func(r *driver.TaskRow) { r.LastError = why; revoke(r) }}
		}
	}
	out, err := transition(ctx, ex, now, moves)
	if err != nil {
		return nil, err
	}
	for _, id := range failed {
		if _, err := blockDependants(ctx, ex, now, "ledger", id, cks.TaskFailed, "max attempts"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReleaseExecutor ends, at once, every lease executor (a claim's worker
// name, the tasks' claimed_by) holds, for an executor known to be gone —
// `cks dev` reaped its process — instead of leaving its tasks until their
// leases run out: each is reclaimed as an
// expired lease is (reclaim, with why as the reason: OPEN again, FAILED
// at max attempts, a review back to NEEDS_REVIEW), its lease revoked, so
// a zombie still holding the token cannot complete it or report on it.
// actor is who says the executor is gone. It returns the tasks released,
// as they now stand; none when the executor held no lease.
func (s *Service) ReleaseExecutor(ctx context.Context, executor, actor, why string) ([]cks.Task, error) {
	for field, v := range map[string]string{"executor": executor, "actor": actor, "reason": why} {
		if err := cks.ValidateText(field, v); err != nil {
			return nil, err
		}
		if v == "" {
			return nil, &cks.FieldError{Field: field, Expected: "a non-empty " + field}
		}
	}
	var out []cks.Task
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		out = nil
		// The leases are few (an executor holds one per task in hand),
		// and claimed_by has no index: they are found among the leased
		// tasks, then locked and read again.
		var ids []int64
		for after := int64(0); ; {
			rows, err := ex.TaskList(ctx, driver.TaskListParams{States: strs(leasedStates[:]), After: after, Limit: reclaimBatch})
			if err != nil {
				return err
			}
			for _, r := range rows {
				if r.ClaimedBy == executor {
					ids = append(ids, r.ID)
				}
			}
			if len(rows) < reclaimBatch {
				break
			}
			after = rows[len(rows)-1].ID
		}
		if len(ids) == 0 {
			return nil
		}
		locked, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		held := slices.DeleteFunc(locked, func(r driver.TaskRow) bool {
			return r.ClaimedBy != executor || !slices.Contains(leasedStates[:], cks.TaskState(r.State))
		})
		rows, err := reclaim(ctx, ex, now, held, actor, why)
		if err != nil {
			return err
		}
		for _, r := range rows {
			t, err := taskOf(ctx, ex, r)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
