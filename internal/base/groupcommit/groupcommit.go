// Package groupcommit is a group commit: calls that can share one write
// (one transaction, one statement, one commit) and that arrive while the
// writes before them run queue, and the next batch carries them together.
// A call that finds a batch's place free runs at once, alone (no added
// latency). Leadership passes from caller to caller — when a batch ends,
// the first call that queued meanwhile runs the next one — so no
// goroutine runs in the background, and each caller returns, with its own
// outcome, once the batch that carried its call has ended.
//
// The ledger's completer and claimer (one write transaction for the
// Complete, Fail and Heartbeat calls of a batch; one claim statement for its
// claims) and the SQLite driver's writer (one BEGIN IMMEDIATE … COMMIT for
// the write transactions of a batch) are groups.
package groupcommit

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Group runs the calls of one process in batches. Set its fields before
// the first Do; they are not to change while calls run.
type Group[In, Out any] struct {
	// Max is how many batches run at once (at least 1). With more than
	// one, a call runs at once while fewer are running, and the queue
	// gathers behind them only when all are.
	Max int
	// MaxBatch is the most calls one batch carries (at least 1).
	MaxBatch int
	// Run carries the batch b (in one transaction, say) and returns each
	// of its calls' outcome, in the order of b.Calls as it is when Run
	// returns (b.Join adds to them). Its ctx is the caller's for a batch
	// of one call; for a batch of several it ends when the contexts of all
	// the calls it began with have (a caller that gives up while its batch
	// runs does not end the others' write): Run decides from the calls' own
	// contexts, at its commit point, whether to go on (Abandoned). A panic
	// of Run is the panic of every caller of the batch, each in its own
	// goroutine, and the group goes on with the next batch.
	Run func(ctx context.Context, b *Batch[In, Out]) []Result[Out]
	// Withdrawn, when set, makes the error Do returns for a call that
	// never ran because its caller's context ended first (before Do, or
	// while the call waited in the queue) from that context's error;
	// unset, Do returns the context's error itself.
	Withdrawn func(err error) error

	mu    sync.Mutex
	queue []*Call[In, Out]
	// running is how many batches run (a successor being handed the queue
	// counts as its predecessor); at most Max.
	running int
}

// Call is one call waiting for, or carried by, a batch.
type Call[In, Out any] struct {
	ctx context.Context
	// In is the call's argument.
	In In
	// done receives the call's outcome, or the batch it is to run itself
	// (lead): it is never sent to twice without a receive between.
	done chan outcome[In, Out]
}

// Context returns the context of the call's caller. Run checks it before
// the call's turn and at its commit point; once a batch carries the call,
// its caller waits for the outcome whatever becomes of this context.
func (c *Call[In, Out]) Context() context.Context { return c.ctx }

// Result is a call's outcome: its value and error, or, when Panic is not
// nil, the panic Do raises again in the caller's goroutine (the value a
// recover in Run returned, so never nil).
type Result[Out any] struct {
	Val   Out
	Err   error
	Panic any
}

// outcome is what a batch tells one caller: its result, or, when lead is
// set, the batch the receiver runs (it is its first call) — the previous
// batch is over and these calls queued meanwhile.
type outcome[In, Out any] struct {
	Result[Out]
	lead []*Call[In, Out]
}

// Batch is the calls one Run carries, in queue order.
type Batch[In, Out any] struct {
	Calls []*Call[In, Out]
	g     *Group[In, Out]
}

// Join moves the calls that queued since the batch began into it, up to
// MaxBatch calls in all, appends them to b.Calls and returns them (none
// when nothing waits): rather than wait for the next batch, they share
// this one, when Run can still take them (the SQLite writer's savepoints
// can, up to the commit).
func (b *Batch[In, Out]) Join() []*Call[In, Out] {
	b.g.mu.Lock()
	more := b.g.take(b.g.maxBatch() - len(b.Calls))
	b.g.mu.Unlock()
	b.Calls = append(b.Calls, more...)
	return more
}

// Queued reports how many calls wait for the next batch.
func (g *Group[In, Out]) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// Do runs in in a batch and returns its result. A caller whose ctx ends
// while its call still waits in the queue withdraws it and returns ctx's
// error (through Withdrawn): nothing of it ran. Once a batch carries the
// call, the caller waits for its outcome: the batch is shared with other
// callers, and Run decides what an ended context means for it.
func (g *Group[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	if err := ctx.Err(); err != nil {
		return g.withdrawn(err)
	}
	c := &Call[In, Out]{ctx: ctx, In: in, done: make(chan outcome[In, Out], 1)}
	g.mu.Lock()
	if g.running < max(g.Max, 1) {
		g.running++
		g.mu.Unlock()
		g.lead([]*Call[In, Out]{c})
		return (<-c.done).result()
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
			return g.withdrawn(ctx.Err())
		}
		g.mu.Unlock()
		o = <-c.done // taken by a batch: its outcome, or the lead
	}
	if o.lead != nil {
		g.lead(o.lead)
		o = <-c.done
	}
	return o.result()
}

func (g *Group[In, Out]) withdrawn(err error) (Out, error) {
	var zero Out
	if g.Withdrawn != nil {
		err = g.Withdrawn(err)
	}
	return zero, err
}

// result is o's value and error, or o's panic raised again.
func (o outcome[In, Out]) result() (Out, error) {
	if o.Panic != nil {
		panic(o.Panic)
	}
	return o.Val, o.Err
}

// lead runs calls as one batch, sends each caller its outcome, then hands
// what queued meanwhile to the first of it, or gives its place up.
func (g *Group[In, Out]) lead(calls []*Call[In, Out]) {
	b := &Batch[In, Out]{Calls: calls, g: g}
	out := g.run(b)
	for i, c := range b.Calls {
		c.done <- outcome[In, Out]{Result: out[i]}
	}
	g.mu.Lock()
	next := g.take(g.maxBatch())
	if len(next) == 0 {
		g.running--
	}
	g.mu.Unlock()
	if len(next) > 0 {
		// The first of the next batch leads it in its own goroutine, so
		// this caller returns now with its outcome.
		next[0].done <- outcome[In, Out]{lead: next}
	}
}

// run calls Run on b and returns one result per call of b: when Run
// panics, or returns a result count that is not its calls', every call's
// result is that panic.
func (g *Group[In, Out]) run(b *Batch[In, Out]) (out []Result[Out]) {
	defer func() {
		v := recover()
		if v == nil && len(out) != len(b.Calls) {
			v = fmt.Sprintf("groupcommit: Run returned %d results for %d calls", len(out), len(b.Calls))
		}
		if v != nil {
			out = make([]Result[Out], len(b.Calls))
			for i := range out {
				out[i].Panic = v
			}
		}
	}()
	ctx := b.Calls[0].ctx
	if len(b.Calls) > 1 {
		var stop func()
		ctx, stop = allEnded(b.Calls)
		defer stop()
	}
	return g.Run(ctx, b)
}

// take removes up to n calls from the head of the queue and returns them;
// g.mu is held.
func (g *Group[In, Out]) take(n int) []*Call[In, Out] {
	n = min(len(g.queue), n)
	if n <= 0 {
		return nil
	}
	next := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	return next
}

func (g *Group[In, Out]) maxBatch() int { return max(g.MaxBatch, 1) }

// allEnded returns a context that ends when the contexts of all of calls
// have ended, with the values of the first one's; stop releases it. One
// goroutine waits for the calls' contexts in turn — all must end, so the
// order does not matter, and a context shared by the calls next to each
// other (the workers of one process) is waited for once — rather than an
// AfterFunc per call, which cost each call allocations and a turn on its
// parent context's lock (issue 27). A call whose context can never end
// (Done is nil) keeps the batch's from ending: then nothing waits at all.
func allEnded[In, Out any](calls []*Call[In, Out]) (ctx context.Context, stop func()) {
	base := context.WithoutCancel(calls[0].ctx)
	for _, c := range calls {
		if c.ctx.Done() == nil {
			return base, func() {}
		}
	}
	ctx, cancel := context.WithCancel(base)
	quit := make(chan struct{})
	go func() {
		var last <-chan struct{}
		for _, c := range calls {
			if d := c.ctx.Done(); d != last {
				select {
				case <-d:
				case <-quit:
					return
				}
				last = d
			}
		}
		cancel()
	}()
	return ctx, func() {
		close(quit)
		cancel()
	}
}

// Abandoned returns the context error of the callers of calls when every
// one of them has given up, nil while one still waits: a batch that all
// its callers abandoned need not commit.
func Abandoned[In, Out any](calls []*Call[In, Out]) error {
	var err error
	for _, c := range calls {
		if err = c.ctx.Err(); err == nil {
			return nil
		}
	}
	return err
}
