package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/groupcommit"
	"github.com/cks-dev/cks/internal/driver"
)

// maxFinishBatch is the most calls one flush carries.
const maxFinishBatch = 256

// maxFlushes is how many flushes a completer runs at once. One would be
// the classic group commit, but then the database sits idle while one
// flush's callers hand the next batch on, and calls that could run side by
// side on two connections wait for each other: with four workers on
// Postgres one flush at a time halved the completions (bench ledger). Two
// keep the database busy while the queue still gathers behind them. A
// driver whose writes run one at a time (driver.SerialWriter: SQLite) gets
// one: there the second flush could only wait for the first's commit or
// join its transaction as a savepoint of its own, and most flushes carried
// one call (bench ledger --workers 4 --concurrent, 20,000 completions:
// 6,739 flushes, 5,835 of one call; one at a time, 4,655 and 3,794).
const maxFlushes = 2

// finish is one Complete, Fail or Heartbeat call of the completer: the group
// of the calls that end or renew a lease. Its arguments are validated
// before it is queued.
type finish struct {
	id    int64
	token string
	fail  bool
	// touch renews the lease (Heartbeat) instead of ending it.
	touch bool
	// needsReview (Complete) and retryable (Fail); text is Complete's
	// result or Fail's reason.
	needsReview, retryable bool
	text                   string
}

// completer is the group of the Complete, Fail and Heartbeat calls of one
// process; each batch is one flush. On SQLite the flush is itself a write
// that the writer's group commit may share with other writes (one commit,
// a savepoint each), and the completer is still needed there: the writer
// shares a commit, the completer a statement set (one locking read, one
// TaskMoveMany for the batch), and without it claim→complete did 0.69–0.81
// of the completions at 4–64 workers for 1.14–1.30× the CPU per task
// (docs/benchmarks.md, issue 23).
type completer = groupcommit.Group[*finish, cks.Task]

// flush carries batch in one write transaction: the tasks are read and
// locked in one statement; each call is decided in Go by the rule of a
// single Complete, Fail or Heartbeat — fenced by its own token and the lease's
// life (fence: a token that is not the current one, or whose lease
// expired unrenewed, is that caller's ErrLeaseLost and nobody else's), and a
// task met twice is decided the second time as the first left it — then
// the renewed leases are written (one TaskMoveMany), every move with its
// event — the one history row that holds the attempt it ends —
// (transition: one TaskMoveMany with the events), and
// dependants are released (or blocked) only for tasks something depends
// on. Each caller gets its own outcome after the
// commit; when the transaction fails, every caller gets its error and
// nothing of the batch is written. On a driver whose writes run one at a
// time the calls that queued while the flush waited for the writer join
// its batch first.
func (s *Service) flush(ctx context.Context, b *groupcommit.Batch[*finish, cks.Task]) []groupcommit.Result[cks.Task] {
	batch := b.Calls
	out := make([]groupcommit.Result[cks.Task], len(batch))
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		if s.serial {
			// The calls that queued while this flush waited for the one
			// writer join it, rather than wait for its commit and then
			// take a flush and a commit of their own.
			b.Join()
			batch = b.Calls
			out = make([]groupcommit.Result[cks.Task], len(batch))
		}
		clear(out)
		ids := make([]int64, 0, len(batch))
		for _, c := range batch {
			ids = append(ids, c.In.id)
		}
		slices.Sort(ids)
		locked, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: slices.Compact(ids), Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		// The locked rows come in id order; a call finds its task's row
		// by binary search and decides on it in place, so that a later
		// call on the same task in this batch sees the row as this one
		// left it (rows are large: no map of copies).
		find := func(id int64) (int, bool) {
			return slices.BinarySearchFunc(locked, id, func(r driver.TaskRow, id int64) int { return cmp.Compare(r.ID, id) })
		}
		var (
			moves = make([]move, 0, len(batch))
			who   = make([]int, 0, len(batch)) // the batch index of each move
			// renewed marks the rows Heartbeat renews (by index in locked),
			// written before the moves; a later move of the same task in
			// the batch writes its row (renewal included) instead.
			renewed []bool
		)
		for i, c := range batch {
			f := c.In
			k, ok := find(f.id)
			if !ok {
				out[i].Err = notFound(f.id)
				continue
			}
			cur := &locked[k]
			states := executing
			if f.touch {
				states = leasedStates[:]
			}
			if err := fence(*cur, f.token, now, states); err != nil {
				out[i].Err = err
				continue
			}
			if f.touch {
				renew(cur, now)
				if renewed == nil {
					renewed = make([]bool, len(locked))
				}
				renewed[k] = true
				continue
			}
			if renewed != nil {
				renewed[k] = false
			}
			m := s.finishMove(*cur, f, now)
			// The row as this move leaves it, for a later call on the
			// same task in this batch (whose lease is then gone).
			m.set(cur)
			cur.State = string(m.to)
			moves = append(moves, m)
			who = append(who, i)
		}
		if renew := renewedRows(locked, renewed); len(renew) > 0 {
			// A renewal changes only lease columns: written narrowly.
			if _, err := ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{Rows: renew}); err != nil {
				return err
			}
		}
		written, err := transition(ctx, ex, now, moves)
		if err != nil {
			return err
		}
		tasks, waitedFor, err := finished(ctx, ex, now, written)
		if err != nil {
			return err
		}
		for k, r := range written {
			if cks.TaskState(r.State) == cks.TaskFailed && waitedFor[r.ID] {
				if _, err := blockDependants(ctx, ex, now, "ledger", r.ID, cks.TaskFailed, moves[k].reason); err != nil {
					return err
				}
			}
			out[who[k]].Val = tasks[k]
		}
		// Decided here, at the commit point, from the callers' own
		// contexts: the flush's context learns of their ends only
		// asynchronously, so a commit could otherwise outrun the last
		// caller's cancellation.
		if err := groupcommit.Abandoned(batch); err != nil {
			return err
		}
		return nil
	})
	if gone := groupcommit.Abandoned(batch); err != nil && gone != nil && !errors.Is(err, gone) {
		err = fmt.Errorf("%w: %w", gone, err)
	}
	if err != nil {
		for i := range out {
			out[i] = groupcommit.Result[cks.Task]{Err: err}
		}
	}
	return out
}

// renewedRows are the rows of locked that renewed marks, in id order.
func renewedRows(locked []driver.TaskRow, renewed []bool) []driver.TaskRow {
	var out []driver.TaskRow
	for k, r := range renewed {
		if r {
			out = append(out, locked[k])
		}
	}
	return out
}

// renew extends the lease of r (read, locked, fenced) by its own length
// from now.
func renew(r *driver.TaskRow, now time.Time) {
	r.LeaseRenewedAt, r.UpdatedAt = now, now
	r.LeaseExpiresAt = now.Add(time.Duration(r.LeaseMs) * time.Millisecond)
}

// finishMove is the move of call f on cur (read, locked, fenced): the rule
// of Complete (completion) or of Fail — a retryable failure with attempts
// left goes back to OPEN after a backoff, any other to FAILED; the lease is
// revoked either way.
func (s *Service) finishMove(cur driver.TaskRow, f *finish, now time.Time) move {
	if !f.fail {
		return completion(cur, f.needsReview, f.text)
	}
	reason := f.text
	if f.retryable && cur.Attempts < cur.MaxAttempts {
		runAfter := now.Add(backoff(s.settings.RetryBackoff, cur.Attempts, s.jitter()))
		return move{row: cur, to: cks.TaskOpen, actor: cur.ClaimedBy, reason: "retry: " + reason, end: OutcomeRetried,
			set: func(r *driver.TaskRow) { r.LastError, r.RunAfter = reason, runAfter; revoke(r) }}
	}
	why := reason
	if f.retryable {
		why = "max attempts: " + reason
	}
	return move{row: cur, to: cks.TaskFailed, actor: cur.ClaimedBy, reason: why,
		set: func(r *driver.TaskRow) { r.LastError = why; revoke(r) }}
}
