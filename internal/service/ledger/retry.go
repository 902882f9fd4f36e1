package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Retry opens a FAILED or CANCELLED task again (ADR 0020's attempts and
// restarts, issue 24): OPEN, or WAITING when a dependency is not COMPLETED
// now, or BLOCKED when one FAILED or was CANCELLED, as Start evaluates it;
// with a fresh attempt budget (attempts 0, max_attempts as it was),
// restarts+1 (so the next attempt is (restart+1, 1) and every earlier one,
// with its evidence, decisions and aborts, stays in the task's history),
// run_after cleared, and an event of its own. last_error and result stay
// until the next attempt writes its own. The BLOCKED tasks that were
// blocked because this one failed are re-evaluated down the dependency
// graph (unblockDependants): each whose dependencies are no longer FAILED,
// CANCELLED or BLOCKED waits again (WAITING). Its children are left as they
// are: a child is a task of its own, retried (or not) on its own. A task in
// any other state is ErrConflict; so is one whose dedupe_key a live task
// holds now (two live tasks would share it): nothing changes then.
func (s *Service) Retry(ctx context.Context, id int64, actor, reason string) (cks.Task, error) {
	if err := cmp.Or(cks.ValidateText("actor", actor), cks.ValidateText("reason", reason)); err != nil {
		return cks.Task{}, err
	}
	return s.onTask(ctx, id, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		return retryTx(ctx, ex, now, cur, actor, reason)
	})
}

// retryTx is Retry's work on cur (read and locked).
func retryTx(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, actor, reason string) (driver.TaskRow, error) {
	if !admits(cks.TaskState(cur.State), cks.ActionRetry) {
		return cur, fmt.Errorf("task %d is %s, retry needs %s or %s: %w", cur.ID, cur.State, cks.TaskFailed, cks.TaskCancelled,
			cks.ErrConflict)
	}
	if cur.DedupeKey != "" {
		hits, err := ex.TaskDedupeFindMany(ctx, driver.TaskDedupeFindManyParams{Keys: []string{cur.DedupeKey}, Terminal: strs(Terminal[:])})
		if err != nil {
			return cur, fmt.Errorf("retry task %d: dedupe: %w", cur.ID, err)
		}
		if slices.ContainsFunc(hits, func(h driver.TaskDedupeHit) bool { return !h.Terminal }) {
			return cur, fmt.Errorf("task %d: a live task holds its dedupe_key now, and a retry would make two: %w", cur.ID,
				cks.ErrConflict)
		}
	}
	to, why, err := stateNow(ctx, ex, cur.ID, "depends_on")
	if err != nil {
		return cur, err
	}
	if reason == "" {
		reason = "retried"
	}
	out, err := moveOne(ctx, ex, now, move{row: cur, to: to, actor: actor, attempt: cur.Attempts,
		reason: fmt.Sprintf("%s (from %s, %d of %d attempts spent; %s)", reason, cur.State, cur.Attempts, cur.MaxAttempts, why),
		set:    func(r *driver.TaskRow) { r.Attempts, r.RunAfter = 0, time.Time{}; r.Restarts++ }})
	if err != nil {
		return out, err
	}
	return out, unblockDependants(ctx, ex, now, actor, cur.ID)
}

// unblockDependants re-evaluates the BLOCKED dependants of the tasks ids,
// which a retry just opened again, and so on down the dependency graph: a
// dependant none of whose dependencies is FAILED, CANCELLED or BLOCKED now
// moves to WAITING (none of them is COMPLETED: one of them was just
// retried), with an event by actor; one that is still blocked by another
// stays. It undoes blockDependants' cascade of the failure.
func unblockDependants(ctx context.Context, ex driver.Executor, now time.Time, actor string, ids ...int64) error {
	for len(ids) > 0 {
		blocked, err := ex.TaskDependants(ctx, driver.TaskDependantsParams{DependsOn: ids, State: string(cks.TaskBlocked),
			Lock: driver.LockUpdate})
		if err != nil || len(blocked) == 0 {
			return err
		}
		deps, states, err := dependenciesOf(ctx, ex, blocked, driver.LockShare)
		if err != nil {
			return err
		}
		var moves []move
		for _, r := range blocked {
			still := slices.ContainsFunc(deps[r.ID], func(d int64) bool {
				st := cks.TaskState(states[d].State)
				return st == cks.TaskFailed || st == cks.TaskCancelled || st == cks.TaskBlocked
			})
			if !still {
				moves = append(moves, move{row: r, to: cks.TaskWaiting, actor: actor,
					reason: "unblocked: no dependency is FAILED, CANCELLED or BLOCKED any more (a retry)",
					set:    func(r *driver.TaskRow) { r.LastError = "" }})
			}
		}
		rows, err := transition(ctx, ex, now, moves)
		if err != nil {
			return err
		}
		ids = nil
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
	}
	return nil
}
