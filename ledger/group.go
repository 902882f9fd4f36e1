package ledger

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// group runs the calls of one process that can share a transaction in
// batches (a group commit): a call that finds fewer than max batches in
// flight runs at once, alone (no added latency); calls made while they
// are all in flight queue, and when one ends the first of them runs all
// that queued (up to maxBatch) as one batch. Leadership passes from caller
// to caller, so no goroutine runs in the background and each caller
// returns once its own batch has committed. The completer (Complete, Fail,
// Touch) and the claimer (ClaimWith) are groups.
type group[In, Out any] struct {
	mu    sync.Mutex
	queue []*call[In, Out]
	// flushes is how many batches are in flight (a successor being handed
	// the queue counts as its predecessor); at most max.
	flushes, max int
	// maxBatch is the most calls one batch carries.
	maxBatch int
	// run carries batch in one transaction and returns each call's
	// outcome, in batch order. Its ctx ends when the contexts of all the
	// batch's callers have; it decides at its commit point whether they all
	// gave up (abandoned).
	run func(ctx context.Context, batch []*call[In, Out]) []result[Out]
}

// call is one call waiting for the batch that carries it. Its arguments
// are validated before it is queued.
type call[In, Out any] struct {
	// ctx is the caller's.
	ctx context.Context
	in  In
	// done receives the call's outcome, or the batch it is to run itself
	// (lead): it is never sent to twice without a receive between.
	done chan outcome[In, Out]
}

// result is a call's outcome.
type result[Out any] struct {
	val Out
	err error
}

// outcome is what a batch tells one caller: its result, or, when lead is
// set, the batch the receiver runs (it is its first member) — the previous
// batch is over and these calls queued meanwhile.
type outcome[In, Out any] struct {
	result[Out]
	lead []*call[In, Out]
}

// queued reports how many calls wait for the next batch (for tests).
func (g *group[In, Out]) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// do runs in in a batch and returns its result. A caller whose ctx ends
// while its call still waits in the queue withdraws it and returns ctx's
// error (nothing was written); once a batch carries the call, the caller
// waits for its outcome — the batch is one transaction shared with other
// callers, abandoned only when all of their contexts have ended.
func (g *group[In, Out]) do(ctx context.Context, in In) (Out, error) {
	if err := ctx.Err(); err != nil {
		var zero Out
		return zero, err
	}
	c := &call[In, Out]{ctx: ctx, in: in, done: make(chan outcome[In, Out], 1)}
	g.mu.Lock()
	if g.flushes < g.max {
		g.flushes++
		g.mu.Unlock()
		g.lead([]*call[In, Out]{c})
		o := <-c.done
		return o.val, o.err
	}
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	var o outcome[In, Out]
	select {
	case o = <-c.done:
	case <-ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, c); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			var zero Out
			return zero, ctx.Err()
		}
		g.mu.Unlock()
		o = <-c.done // taken by a batch: its outcome, or the lead
	}
	if o.lead != nil {
		g.lead(o.lead)
		o = <-c.done
	}
	return o.val, o.err
}

// lead runs batch, sends each caller its result, then hands what queued
// meanwhile to the first of it, or gives its place up.
func (g *group[In, Out]) lead(batch []*call[In, Out]) {
	// The batch's context ends when the last of its callers' does.
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(batch)))
	for _, c := range batch {
		stop := context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	out := g.run(ctx, batch)
	cancel()
	for i, c := range batch {
		c.done <- outcome[In, Out]{result: out[i]}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.flushes--
		return
	}
	n := min(len(g.queue), g.maxBatch)
	next := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	next[0].done <- outcome[In, Out]{lead: next}
}

// abandoned returns the context error of the batch's callers when every
// one of them has given up, nil while one still waits.
func abandoned[In, Out any](batch []*call[In, Out]) error {
	var err error
	for _, c := range batch {
		if err = c.ctx.Err(); err == nil {
			return nil
		}
	}
	return err
}
