package sqlite

import (
	"context"
	"fmt"

	"github.com/cks-dev/cks/internal/base/groupcommit"
	"github.com/cks-dev/cks/internal/driver"
)

// maxGroup is the most write transactions one group commit carries.
const maxGroup = 128

// writes is the one writer's group commit (see Driver.write): one group
// at a time, each member a write transaction's fn.
type writes = groupcommit.Group[func(w *wtx) error, struct{}]

// member is one write transaction of a group.
type member = groupcommit.Call[func(w *wtx) error, struct{}]

// outcome is a member's outcome.
type outcome = groupcommit.Result[struct{}]

// newWrites returns d's group commit.
func (d *Driver) newWrites() writes {
	return writes{Max: 1, MaxBatch: maxGroup, Run: d.group,
		Withdrawn: func(err error) error { return fmt.Errorf("sqlite: begin: %w", err) }}
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
// a failed commit is every committed member's error; a member whose fn
// panics is rolled back and panics again in its own caller's goroutine. A
// caller whose ctx ends while it waits in the queue withdraws (nothing
// written). Every write of the driver passes here, so a storage fault it
// ends with is remembered for Health.
//
// The ledger batches its completions and its claims above this, each
// batch one write here (docs/benchmarks.md, issue 23: neither layer does
// the other's work). This one shares commits among the writes that no
// layer above batches — a single Enqueue, the knowledge store's, liveness,
// sweeper control — and among writes of different kinds: with four
// writers enqueueing one task per call, 0.61–0.70 of the enqueues went
// through without it.
func (d *Driver) write(ctx context.Context, fn func(w *wtx) error) (err error) {
	defer func() {
		if err != nil {
			d.faults.Note(err, driver.Time(d.clock.Now()))
		}
	}()
	_, err = d.writes.Do(ctx, fn)
	return err
}

// savepoint names the savepoint of each member of a group; members run one
// after another, so one name serves all.
const savepoint = "cks_member"

// group runs the members of b in one write transaction and returns each
// one's outcome, in order. The writes that queue while the group runs
// join it before its commit (b.Join, up to maxGroup members): rather than
// wait for the next commit, they share this one. The wait for the write
// lock ends when every member has given up (ctx).
func (d *Driver) group(ctx context.Context, b *groupcommit.Batch[func(w *wtx) error, struct{}]) []outcome {
	out := make([]outcome, len(b.Calls))
	fail := func(err error) []outcome {
		for i := range out {
			if out[i].Err == nil && out[i].Panic == nil {
				out[i].Err = err
			}
		}
		return out
	}
	growStack(0)
	leave, err := d.enter(ctx)
	if err != nil {
		return fail(fmt.Errorf("sqlite: begin: %w", err))
	}
	defer leave() // after the rollback below
	tx, err := beginImmediate(ctx, d.writer)
	if err != nil {
		return fail(mapErr("begin", err))
	}
	w := &wtx{Tx: tx, cache: &d.cache, ctx: context.WithoutCancel(b.Calls[0].Context())}
	defer func() {
		tx.Rollback() //nolint:errcheck // no-op after commit
		d.cache.prepare(w.ctx, d.writer, w.missed)
	}()
	var committed, notified bool
	for i := 0; ; i++ {
		if i == len(b.Calls) {
			more := b.Join()
			if len(more) == 0 {
				break
			}
			out = append(out, make([]outcome, len(more))...)
		}
		m := b.Calls[i]
		// The first member, when it is all there is, needs no savepoint:
		// its error rolls the transaction back.
		alone := i == 0 && len(b.Calls) == 1
		// A member whose caller gave up before its turn writes nothing.
		if err := m.Context().Err(); err != nil {
			out[i].Err = fmt.Errorf("sqlite: begin: %w", err)
			continue
		}
		if !alone {
			if _, err := w.ExecContext(w.ctx, "SAVEPOINT "+savepoint); err != nil {
				return fail(mapErr("savepoint", err))
			}
		}
		w.notified = false
		out[i] = run(m, w)
		if out[i].Err == nil && out[i].Panic == nil && m.Context().Err() != nil {
			// Its caller gave up while it ran: as if the transaction
			// had been rolled back for the ended context.
			out[i].Err = fmt.Errorf("sqlite: commit: %w", m.Context().Err())
		}
		if out[i].Err != nil || out[i].Panic != nil {
			if alone {
				return out
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
		return out
	}
	if err := tx.Commit(); err != nil {
		for i, m := range b.Calls {
			if out[i].Err == nil && out[i].Panic == nil {
				out[i].Err = ended(m.Context(), mapErr("commit", err))
			}
		}
		return out
	}
	d.commits.Add(1)
	if d.ckpt != nil {
		d.ckpt.poke()
	}
	if notified {
		d.local.wake()
	}
	return out
}

// run runs m's fn in w and returns its outcome; a panic is caught, to be
// raised again in m's own goroutine.
func run(m *member, w *wtx) (o outcome) {
	defer func() {
		if v := recover(); v != nil {
			o = outcome{Panic: v}
		}
	}()
	return outcome{Err: ended(m.Context(), m.In(w))}
}

// stackReserve is the stack a write transaction's statements use at most,
// measured (SQLite's VDBE and B-tree code, transpiled to Go by modernc,
// runs deep in large frames).
const stackReserve = 64 << 10

// growStack makes the goroutine's stack big enough for the statements
// before they run. The goroutine that leads a group is any caller's — often
// a new one (a request's, a completion's), whose stack starts at a few
// KiB — and without this its stack grew inside SQLite, doubling frame by
// frame, each time copying and adjusting every deep frame below (5 % of the
// CPU of bench ledger --workers 4 --concurrent). Grown here, at a shallow
// point, it is one copy of a few frames. depth is never set: it keeps the
// frame from being optimised away.
//
//go:noinline
func growStack(depth int) byte {
	var reserve [stackReserve]byte
	return reserve[depth]
}
