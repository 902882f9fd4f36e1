package sqlite

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cks-dev/cks/driver"
)

// maxGroup is the most write transactions one group commit carries.
const maxGroup = 128

// member is one write transaction (Driver.write) waiting for the group that
// carries it.
type member struct {
	// ctx is the caller's: it is checked before the member's turn and
	// before each of its statements, never handed to SQLite (see wtx).
	ctx context.Context
	fn  func(w *wtx) error
	// done receives the member's outcome, or the group it is to lead: it is
	// never sent to twice without a receive between.
	done chan outcome
}

// outcome is what a group tells one member.
type outcome struct {
	err error
	// panicked is set when the member's fn panicked; the member panics
	// again with value in its own goroutine.
	panicked bool
	value    any
	// lead, when set, is the group the receiver runs (it is its first
	// member): the previous group has committed and these queued meanwhile.
	lead []*member
}

// groups is the one writer's queue: while a group holds the writer, the
// writes that arrive queue, and when it ends the first of them runs all
// that queued as the next group.
type groups struct {
	mu sync.Mutex
	// busy is set while a group runs or is being handed on.
	busy  bool
	queue []*member
	// commits counts the transactions committed (for tests).
	commits atomic.Int64
}

// queued reports how many writes wait for the next group (for tests).
func (g *groups) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// write runs fn in a write transaction on the one writer and returns once
// that transaction has committed or rolled back, with fn's own outcome: fn's
// error as it is, or the commit's. It is a group commit: a write that finds
// the writer free runs at once, alone, in its own BEGIN IMMEDIATE
// transaction (no added latency); the writes that arrive while a
// transaction runs queue and join it before its commit, each in its own
// SAVEPOINT, in queue order, so each sees the writes of those before it
// (those that arrive during the COMMIT, or beyond maxGroup, are the next
// group, led by the first of them). A member whose fn fails is
// rolled back to its savepoint and gets its error while the others go on;
// a failed commit is every committed member's error. A caller whose ctx
// ends while it waits in the queue withdraws (nothing written). Every
// write of the driver passes here, so a storage fault it ends with is
// remembered for Health.
func (d *Driver) write(ctx context.Context, fn func(w *wtx) error) (err error) {
	defer func() {
		if err != nil {
			d.faults.Note(err, driver.Time(d.clock.Now()))
		}
	}()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	m := &member{ctx: ctx, fn: fn, done: make(chan outcome, 1)}
	g := &d.groups
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		d.lead([]*member{m})
		return m.result()
	}
	g.queue = append(g.queue, m)
	g.mu.Unlock()
	var o outcome
	select {
	case o = <-m.done:
	case <-ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, m); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			return fmt.Errorf("sqlite: begin: %w", ctx.Err())
		}
		g.mu.Unlock()
		o = <-m.done // taken by a group: its outcome, or the lead
	}
	if o.lead != nil {
		d.lead(o.lead)
		return m.result()
	}
	return o.result()
}

// result waits for m's outcome.
func (m *member) result() error { return (<-m.done).result() }

func (o outcome) result() error {
	if o.panicked {
		panic(o.value)
	}
	return o.err
}

// lead runs batch as one group, tells each member its outcome, then hands
// what queued meanwhile to the first of it, or frees the writer.
func (d *Driver) lead(batch []*member) {
	batch, out := d.group(batch)
	for i, m := range batch {
		m.done <- out[i]
	}
	g := &d.groups
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.busy = false
		g.mu.Unlock()
		return
	}
	next := g.take(maxGroup)
	g.mu.Unlock()
	// The first of the next group leads it in its own goroutine, so this
	// caller returns now with its outcome.
	next[0].done <- outcome{lead: next}
}

// take removes up to n members from the head of the queue and returns
// them; g.mu is held.
func (g *groups) take(n int) []*member {
	n = min(len(g.queue), n)
	if n == 0 {
		return nil
	}
	next := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	return next
}

// savepoint names the savepoint of each member of a group; members run one
// after another, so one name serves all.
const savepoint = "cks_member"

// group runs batch in one write transaction and returns its members with
// each one's outcome, in order. The writes that queue while the group runs
// join it before its commit (up to maxGroup members): rather than wait for
// the next commit, they share this one.
func (d *Driver) group(batch []*member) ([]*member, []outcome) {
	out := make([]outcome, len(batch))
	fail := func(err error) ([]*member, []outcome) {
		for i := range out {
			if out[i].err == nil && !out[i].panicked {
				out[i].err = err
			}
		}
		return batch, out
	}
	// The wait for the write lock ends when every member has given up.
	lockCtx := batch[0].ctx
	if len(batch) > 1 {
		var stop func()
		lockCtx, stop = allEnded(batch)
		defer stop()
	}
	tx, err := beginImmediate(lockCtx, d.writer)
	if err != nil {
		return fail(mapErr("begin", err))
	}
	w := &wtx{Tx: tx, cache: &d.cache, ctx: context.WithoutCancel(batch[0].ctx)}
	defer func() {
		tx.Rollback() //nolint:errcheck // no-op after commit
		d.cache.prepare(w.ctx, d.writer, w.missed)
	}()
	var committed, notified bool
	for i := 0; ; i++ {
		if i == len(batch) {
			d.groups.mu.Lock()
			more := d.groups.take(maxGroup - len(batch))
			d.groups.mu.Unlock()
			if len(more) == 0 {
				break
			}
			batch = append(batch, more...)
			out = append(out, make([]outcome, len(more))...)
		}
		m := batch[i]
		// The first member, when it is all there is, needs no savepoint:
		// its error rolls the transaction back.
		alone := i == 0 && len(batch) == 1
		// A member whose caller gave up before its turn writes nothing.
		if err := m.ctx.Err(); err != nil {
			out[i].err = fmt.Errorf("sqlite: begin: %w", err)
			continue
		}
		if !alone {
			if _, err := w.ExecContext(w.ctx, "SAVEPOINT "+savepoint); err != nil {
				return fail(mapErr("savepoint", err))
			}
		}
		w.notified = false
		out[i] = run(m, w)
		if out[i].err == nil && !out[i].panicked && m.ctx.Err() != nil {
			// Its caller gave up while it ran: as if the transaction
			// had been rolled back for the ended context.
			out[i].err = fmt.Errorf("sqlite: commit: %w", m.ctx.Err())
		}
		if out[i].err != nil || out[i].panicked {
			if alone {
				return batch, out
			}
			// A failed ROLLBACK TO means the transaction is gone
			// (SQLite rolls back the whole of it on some errors): then
			// nothing of the group is written.
			if _, err := w.ExecContext(w.ctx, "ROLLBACK TO "+savepoint); err != nil {
				return fail(mapErr("rollback to savepoint", err))
			}
			if _, err := w.ExecContext(w.ctx, "RELEASE "+savepoint); err != nil {
				return fail(mapErr("release savepoint", err))
			}
			continue
		}
		if !alone {
			if _, err := w.ExecContext(w.ctx, "RELEASE "+savepoint); err != nil {
				return fail(mapErr("release savepoint", err))
			}
		}
		committed = true
		notified = notified || w.notified
	}
	if !committed {
		return batch, out
	}
	if err := tx.Commit(); err != nil {
		for i, m := range batch {
			if out[i].err == nil && !out[i].panicked {
				out[i].err = ended(m.ctx, mapErr("commit", err))
			}
		}
		return batch, out
	}
	d.groups.commits.Add(1)
	if d.ckpt != nil {
		d.ckpt.poke()
	}
	if notified {
		d.local.wake()
	}
	return batch, out
}

// run runs m's fn in w and returns its outcome; a panic is caught, to be
// raised again in m's own goroutine.
func run(m *member, w *wtx) (o outcome) {
	defer func() {
		if v := recover(); v != nil {
			o = outcome{panicked: true, value: v}
		}
	}()
	return outcome{err: ended(m.ctx, m.fn(w))}
}

// allEnded returns a context that ends when the contexts of every member
// of batch have ended; stop releases it.
func allEnded(batch []*member) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, m := range batch {
		stops[i] = context.AfterFunc(m.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
