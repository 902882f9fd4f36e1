package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/store"
)

// maxFinishBatch is the most calls one flush carries.
const maxFinishBatch = 256

// maxFlushes is how many flushes a completer runs at once. One would be
// the classic group commit, but then the database sits idle while one
// flush's callers hand the next batch on, and calls that could run side by
// side on two connections wait for each other: with four workers on
// Postgres one flush at a time halved the completions (bench ledger). Two
// keep the database busy while the queue still gathers behind them.
const maxFlushes = 2

// finish is one Complete, Fail or Touch call waiting for the flush that
// carries it. Its arguments are validated before it is queued.
type finish struct {
	// ctx is the caller's: the flush carrying the call gives up only when
	// the contexts of all its callers have ended.
	ctx   context.Context
	id    int64
	token string
	fail  bool
	// touch renews the lease (Touch) instead of ending it.
	touch bool
	// needsReview (Complete) and retryable (Fail); text is Complete's
	// result or Fail's reason.
	needsReview, retryable bool
	text                   string
	// done receives the call's outcome, or the batch it is to flush
	// itself (lead): it is never sent to twice without a receive between.
	done chan finishOutcome
}

// finishOutcome is what a flush tells one caller.
type finishOutcome struct {
	task store.Task
	err  error
	// lead, when set, is the batch the receiver flushes (it is its first
	// member): the previous flush is over and these calls queued meanwhile.
	lead []*finish
}

// completer groups the Complete, Fail and Touch calls of one process
// (the calls that end or renew a lease): a call that finds fewer than
// maxFlushes flushes in flight flushes at once, alone (no added latency);
// calls made while the flushes are all in flight queue, and when one ends
// the first of them flushes all that queued, in one transaction — a group
// commit.
// Leadership passes from caller to caller, so no goroutine runs in the
// background and each caller returns once its own flush has committed.
type completer struct {
	mu    sync.Mutex
	queue []*finish
	// flushes is how many flushes are in flight (a successor being handed
	// the queue counts as its predecessor); at most max.
	flushes, max int
}

// queued reports how many calls wait for the next flush (for tests).
func (c *completer) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// submit runs f in a flush and returns its outcome. A caller whose ctx
// ends while f still waits in the queue withdraws it and returns ctx's
// error (nothing was written); once a flush carries f, the caller waits
// for its outcome — the flush is one transaction shared with other
// callers, abandoned only when all of their contexts have ended.
func (s *Service) submit(ctx context.Context, f *finish) (store.Task, error) {
	if err := ctx.Err(); err != nil {
		return store.Task{}, err
	}
	f.ctx, f.done = ctx, make(chan finishOutcome, 1)
	c := &s.completer
	c.mu.Lock()
	if c.flushes < c.max {
		c.flushes++
		c.mu.Unlock()
		s.lead([]*finish{f})
		o := <-f.done
		return o.task, o.err
	}
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	var o finishOutcome
	select {
	case o = <-f.done:
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.queue, f); i >= 0 {
			c.queue = slices.Delete(c.queue, i, i+1)
			c.mu.Unlock()
			return store.Task{}, ctx.Err()
		}
		c.mu.Unlock()
		o = <-f.done // taken by a flush: its outcome, or the lead
	}
	if o.lead != nil {
		s.lead(o.lead)
		o = <-f.done
	}
	return o.task, o.err
}

// lead flushes batch, then hands what queued meanwhile to the first of it,
// or gives its place up.
func (s *Service) lead(batch []*finish) {
	// The flush's context ends when the last of its callers' does.
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(batch)))
	for _, f := range batch {
		stop := context.AfterFunc(f.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	s.flush(ctx, batch)
	cancel()
	c := &s.completer
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.flushes--
		return
	}
	n := min(len(c.queue), maxFinishBatch)
	next := slices.Clone(c.queue[:n])
	c.queue = slices.Delete(c.queue, 0, n)
	next[0].done <- finishOutcome{lead: next}
}

// flush carries batch in one write transaction: the tasks are read and
// locked in one statement; each call is decided in Go by the rule of a
// single Complete, Fail or Touch — fenced by the hash of its own token, so
// a stale token is that caller's ErrLeaseLost and nobody else's, and a
// task met twice is decided the second time as the first left it — then
// the renewed leases are written (one TaskMoveMany), every move with its
// event (transition: one TaskMoveMany with the events), and
// dependants are released (or blocked) only for tasks something depends
// on. Each caller gets its own outcome after the
// commit; when the transaction fails, every caller gets its error and
// nothing of the batch is written.
func (s *Service) flush(ctx context.Context, batch []*finish) {
	out := make([]finishOutcome, len(batch))
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		clear(out)
		ids := make([]int64, 0, len(batch))
		for _, f := range batch {
			ids = append(ids, f.id)
		}
		slices.Sort(ids)
		locked, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: slices.Compact(ids), Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		rows := make(map[int64]driver.TaskRow, len(locked))
		for _, r := range locked {
			rows[r.ID] = r
		}
		var (
			moves []move
			who   []int // the batch index of each move
			// renewed are the rows Touch renews, by id, written before
			// the moves; a later move of the same task in the batch
			// writes its row (renewal included) instead.
			renewed = map[int64]driver.TaskRow{}
		)
		for i, f := range batch {
			cur, ok := rows[f.id]
			states := executing
			if f.touch {
				states = renewable
			}
			switch {
			case !ok:
				out[i].err = notFound(f.id)
				continue
			case !holds(cur, f.token) || !slices.Contains(states, State(cur.State)):
				out[i].err = fmt.Errorf("task %d (now %s): %w", f.id, cur.State, store.ErrLeaseLost)
				continue
			case f.touch:
				renew(&cur, now)
				rows[f.id], renewed[f.id] = cur, cur
				continue
			}
			delete(renewed, f.id)
			m := s.finishMove(cur, f, now)
			// The row as this move leaves it, for a later call on the
			// same task in this batch (whose lease is then gone).
			after := cur
			m.set(&after)
			after.State = string(m.to)
			rows[f.id] = after
			moves = append(moves, m)
			who = append(who, i)
		}
		if len(renewed) > 0 {
			ids := slices.Sorted(maps.Keys(renewed))
			renew := make([]driver.TaskRow, len(ids))
			for k, id := range ids {
				renew[k] = renewed[id]
			}
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
			if State(r.State) == Failed && waitedFor[r.ID] {
				if _, err := blockDependants(ctx, ex, now, "ledger", r.ID, Failed, moves[k].reason); err != nil {
					return err
				}
			}
			out[who[k]].task = tasks[k]
		}
		// Decided here, at the commit point, from the callers' own
		// contexts: the flush's context learns of their ends only
		// asynchronously, so a commit could otherwise outrun the last
		// caller's cancellation.
		if err := abandoned(batch); err != nil {
			return err
		}
		return nil
	})
	if gone := abandoned(batch); err != nil && gone != nil && !errors.Is(err, gone) {
		err = fmt.Errorf("%w: %w", gone, err)
	}
	for i, f := range batch {
		if err != nil {
			out[i] = finishOutcome{err: err}
		}
		f.done <- out[i]
	}
}

// abandoned returns the context error of the batch's callers when every
// one of them has given up, nil while one still waits.
func abandoned(batch []*finish) error {
	var err error
	for _, f := range batch {
		if err = f.ctx.Err(); err == nil {
			return nil
		}
	}
	return err
}

// renewable are the states whose lease a Touch renews.
var renewable = []State{Claimed, Running, Reviewing}

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
		runAfter := now.Add(Backoff(cur.Attempts, s.jitter()))
		return move{row: cur, to: Open, actor: cur.ClaimedBy, reason: "retry: " + reason,
			set: func(r *driver.TaskRow) { r.LastError, r.RunAfter = reason, runAfter; revoke(r) }}
	}
	why := reason
	if f.retryable {
		why = "max attempts: " + reason
	}
	return move{row: cur, to: Failed, actor: cur.ClaimedBy, reason: why,
		set: func(r *driver.TaskRow) { r.LastError = why; revoke(r) }}
}
