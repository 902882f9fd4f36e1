// Package worker runs one claimed task the way every cks executor must: the
// resolver works under a context that is cancelled the moment the task's
// lease is lost, a lease heartbeat runs alongside it, and the outcome is
// written back fenced by the lease token. It is the Go form of the seeds'
// run_resolver_with_heartbeat, with abort delivery (ADR 0020 §5) built in:
// an Executor watches cks.TopicTaskAborts (LISTEN/NOTIFY on Postgres, the
// change counter poll on SQLite), so a stop, update or cancel reaches a
// running resolver well before its next heartbeat, and the executor
// confirms the abort once the resolver has returned.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/service/lease"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// Store is the part of the ledger an executor uses: the ledger itself, or
// package client's Client for an executor over HTTP.
type Store interface {
	MarkRunning(ctx context.Context, id int64, leaseToken string) (cks.Task, error)
	Heartbeat(ctx context.Context, id int64, leaseToken string) (cks.TouchResult, error)
	Complete(ctx context.Context, id int64, leaseToken string, needsReview bool, result string) (cks.Task, error)
	Fail(ctx context.Context, id int64, leaseToken string, retryable bool, reason string) (cks.Task, error)
	AddEvidence(ctx context.Context, id int64, leaseToken, kind, body string) (cks.Evidence, error)
	RecordDecision(ctx context.Context, id int64, leaseToken, kind, text string, derivedFromRevision int) (cks.Decision, error)
	ReuseWorkspace(ctx context.Context, id int64, leaseToken, path string, derivedFromRevision int) (cks.Decision, error)
	ReportUsage(ctx context.Context, id int64, leaseToken string, u cks.UsageInput) (cks.UsageReport, error)
	ConfirmAbort(ctx context.Context, id int64, leaseToken string) (cks.Abort, error)
	LeaseHeld(ctx context.Context, id int64, leaseToken string) (bool, error)
	GetTask(ctx context.Context, id int64) (cks.Task, error)
}

// GiveBacker is a Store that can give an attempt back without counting it
// (ledger.Service.GiveBack): an executor that shuts down before its task
// is done gives the task back with it. A store without it (the HTTP API
// has no such call) fails the attempt retryably instead.
type GiveBacker interface {
	GiveBack(ctx context.Context, id int64, leaseToken, reason string) (cks.Task, error)
}

// OutputAppender is a Store that keeps an attempt's live output
// (append_output): the ledger, and package client's Client.
type OutputAppender interface {
	AppendOutput(ctx context.Context, id int64, leaseToken, stream, text string) (cks.OutputAppended, error)
}

// ErrNoOutput is Attempt.Output's error over a Store that keeps no live
// output (not an OutputAppender).
var ErrNoOutput = errors.New("worker: the store keeps no live output")

// ReasonShutdown begins the history reason of a task an executor gave back
// because it was shutting down (Interrupted).
const ReasonShutdown = "released by shutdown"

// Watcher is what an executor needs of the change notifications: to learn
// of an abort (cks.TopicTaskAborts) without waiting for its next lease
// heartbeat (notifier.Notifier).
type Watcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// Resolver does the work of one attempt. It must return promptly once ctx
// is done (an abort, or the executor shutting down). A nil error completes
// the task with the Result; an error fails the attempt, retryably unless it
// wraps ErrPermanent.
type Resolver func(ctx context.Context, a *Attempt) (Result, error)

// Result is what a successful attempt produced.
type Result struct {
	// Output becomes the task's result.
	Output string
	// NeedsReview sends the task to NEEDS_REVIEW instead of COMPLETED.
	NeedsReview bool
}

// ErrPermanent marks a resolver error that retrying cannot fix: the task
// goes to FAILED at once instead of back to OPEN.
var ErrPermanent = errors.New("permanent failure")

// Permanent wraps err so that it fails the task without retry.
func Permanent(err error) error { return fmt.Errorf("%w: %w", ErrPermanent, err) }

// errLeaseLost is the cancel cause of a resolver context whose lease is gone.
var errLeaseLost = fmt.Errorf("worker: %w", cks.ErrLeaseLost)

// Outcome says how Run ended.
type Outcome string

// The outcomes of Run.
const (
	// Completed: the task is COMPLETED.
	Completed Outcome = "completed"
	// NeedsReview: the task is NEEDS_REVIEW.
	NeedsReview Outcome = "needs_review"
	// Failed: the attempt failed; the task is OPEN again (retry) or FAILED.
	Failed Outcome = "failed"
	// Aborted: a stop, update or cancel revoked the lease; the resolver was
	// cancelled and the abort confirmed.
	Aborted Outcome = "aborted"
	// LeaseLost: the lease ended without an abort request (reclaimed after
	// it expired); the resolver was cancelled and nothing was written.
	LeaseLost Outcome = "lease_lost"
	// Interrupted: ctx ended (the executor is shutting down) before the
	// resolver was done; the task was given back — OPEN again, its attempt
	// not counted, "released by shutdown" in its history — so another
	// executor takes it (a Store that cannot give back fails it
	// retryably).
	Interrupted Outcome = "interrupted"
)

// Report is the result of Run.
type Report struct {
	Outcome Outcome `json:"outcome"`
	// Task is the task as the final write left it (zero when none succeeded).
	Task cks.Task `json:"task"`
	// Abort is the confirmed abort request when Outcome is Aborted.
	Abort *cks.Abort `json:"abort,omitempty"`
	// Err is the resolver's error when Outcome is Failed.
	Err error `json:"-"`
}

// Options configure an Executor.
type Options struct {
	// Heartbeat is the lease heartbeat period; 0 means a third of the
	// task's lease (at least 10ms). A lease that runs out unrenewed is
	// lost, so a period set here must be at most a third of the leases
	// the tasks are claimed with (cks agent claims three of its own).
	Heartbeat time.Duration
	// Logger receives warnings (a failed heartbeat); nil is slog.Default().
	Logger *slog.Logger
	// RetryWait is the first wait before a write of the attempt that failed
	// on the connection is tried again (see write); 0 means 100ms.
	RetryWait time.Duration
	// Clock times the heartbeat and the retry waits; nil means
	// clock.System.
	Clock clock.Clock
	// Changes wakes the executor on cks.TopicTaskAborts, so a running
	// task learns of its abort at once; nil leaves the lease heartbeat the
	// only way an abort arrives.
	Changes Watcher
}

// Executor runs claimed tasks (Run) and delivers aborts to them. One
// Executor serves any number of concurrent Runs with a single watch of
// cks.TopicTaskAborts, started by the first Run and ended with the last
// — or kept between runs for as long as an owner holds it (Watch), so that
// a claim loop's runs can skip their own lease check (Mark, RunWith).
type Executor struct {
	st   Store
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	running map[*running]struct{}
	holds   int // Watch holds not yet released
	watch   *watch
}

type running struct {
	id    int64
	token string
	abort context.CancelCauseFunc
}

// watch is one WatchChanges of the executor's, run by a lifecycle.Base of
// its own: an executor's watch is started when a run or a hold needs one
// and stopped when none does, and a watch being stopped must not stop the
// one started after it. calls (under Executor.mu) counts the calls of its
// callback, the establishing one included; each call adds one and takes
// the runs it checks in the same critical section.
type watch struct {
	base  *lifecycle.Base
	calls uint64
}

// Mark is a point in the life of an Executor's abort watch, taken (Mark)
// before a claim and handed to RunWith with the claimed task. The zero Mark
// is no mark.
type Mark struct {
	w     *watch
	calls uint64
}

// RunParams are the optional parts of RunWith.
type RunParams struct {
	// Mark, taken with Executor.Mark before the task was claimed, lets Run
	// skip its own read of the lease when the executor's watch was
	// established before the mark and has not been called since: an abort
	// of this lease is requested after the claim committed, so after the
	// mark, and its notification is then still to come to a watch that
	// will see this run registered. Otherwise Run reads the lease (or the
	// watch it starts does).
	Mark Mark
}

// New returns an Executor over st.
func New(st Store, opts Options) *Executor {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	return &Executor{st: st, opts: opts, log: log, running: map[*running]struct{}{}}
}

// Run executes the claimed task c with resolve: it marks it RUNNING, runs
// resolve under a context cancelled when the lease is lost (abort request
// seen through the watch, or a heartbeat that finds the lease gone) or ctx
// ends, renews the lease every heartbeat meanwhile, and writes the outcome:
// Complete, Fail, or — after a lost lease — ConfirmAbort, each fenced by c's
// lease token (which the resolver never sees: Attempt.Task is the task
// without it). The error is non-nil only when the ledger could not be
// written (the resolver's own error is in Report.Err).
//
// An abort requested between the claim and Run is delivered too: Run's
// watch, or Run itself, reads the lease once the run is registered. A
// caller that claims in a loop avoids that read with Watch, Mark and
// RunWith.
func (e *Executor) Run(ctx context.Context, c cks.ClaimedTask, resolve Resolver) (Report, error) {
	return e.RunWith(ctx, c, resolve, RunParams{})
}

// RunWith is Run with p: with p.Mark taken before c was claimed, and the
// executor's watch held meanwhile (Watch), it makes no read of c's lease
// beyond those of the watch's checks.
func (e *Executor) RunWith(ctx context.Context, c cks.ClaimedTask, resolve Resolver, p RunParams) (Report, error) {
	t, token := c.Task, c.LeaseToken
	if t.ID == 0 || token == "" {
		return Report{}, &cks.FieldError{Field: "task", Expected: "a claimed task with its lease token"}
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &running{id: t.ID, token: token, abort: cancel}
	checked := e.register(r, p.Mark)
	defer e.unregister(r)
	if !checked {
		// No watch call is sure to come after this run's registration and
		// an abort requested since the claim: read the lease now.
		e.checkRun(rctx, r)
	}

	// The move to RUNNING, unless the claim made it (ledger.ClaimParams.Running):
	// the table has no RUNNING → RUNNING.
	if ledger.Allowed(t.State, cks.TaskRunning) {
		var cur cks.Task
		err := e.write(rctx, t, "mark running", func() (err error) {
			cur, err = e.st.MarkRunning(rctx, t.ID, token)
			return err
		})
		// An abort seen meanwhile cancels rctx, and with it the write.
		if errors.Is(err, cks.ErrLeaseLost) || errors.Is(context.Cause(rctx), errLeaseLost) {
			return e.lost(ctx, t, token)
		}
		if err != nil {
			return Report{}, fmt.Errorf("worker: task %d: mark running: %w", t.ID, err)
		}
		t = cur
	}

	// The lease heartbeat: a lost lease cancels the resolver's context
	// (kctx) with a cause matching cks.ErrLeaseLost, as an abort seen
	// through the watch cancels rctx, its parent, with errLeaseLost.
	hb, kctx, err := lease.Keep(rctx, lease.Config{Every: e.heartbeatEvery(t), Clock: e.opts.Clock,
		Logger: e.log.With("task_id", t.ID), Renew: func(ctx context.Context) error {
			r, err := e.st.Heartbeat(ctx, t.ID, token)
			switch {
			case errors.Is(err, cks.ErrNotFound):
				return fmt.Errorf("%w: %w", errLeaseLost, err)
			case err != nil:
				return err
			case !r.Held:
				return fmt.Errorf("task %d: the heartbeat found the lease gone: %w", t.ID, cks.ErrLeaseLost)
			}
			return nil
		}})
	if err != nil {
		return Report{}, fmt.Errorf("worker: task %d: %w", t.ID, err)
	}
	res, rerr := func() (Result, error) {
		defer hb.Stop() // also when resolve panics: nothing of the run is left running
		return resolve(traced(kctx, c.Traceparent), &Attempt{e: e, task: t, token: token, traceparent: c.Traceparent,
			over: func(string) { r.abort(errLeaseLost) }})
	}()

	// The outcome is written even when ctx has ended: it must not be lost.
	wctx := context.WithoutCancel(ctx)
	if errors.Is(context.Cause(kctx), cks.ErrLeaseLost) {
		return e.lost(wctx, t, token)
	}
	if ctx.Err() != nil {
		return e.interrupted(wctx, t, token, context.Cause(ctx), rerr)
	}
	if rerr != nil {
		// The error may quote anything, of any length (a command's output): store what the
		// store takes rather than have the failure itself refused.
		var cur cks.Task
		err := e.write(wctx, t, "fail", func() (err error) {
			cur, err = e.st.Fail(wctx, t.ID, token, !errors.Is(rerr, ErrPermanent), cks.TextFor("reason", rerr.Error()))
			return err
		})
		if errors.Is(err, cks.ErrLeaseLost) {
			return e.lost(wctx, t, token)
		}
		return Report{Outcome: Failed, Task: cur, Err: rerr}, wrap(t, "fail", err)
	}
	var cur cks.Task
	err = e.write(wctx, t, "complete", func() (err error) {
		cur, err = e.st.Complete(wctx, t.ID, token, res.NeedsReview, cks.TextFor("result", res.Output))
		return err
	})
	if errors.Is(err, cks.ErrLeaseLost) {
		return e.lost(wctx, t, token)
	}
	out := Completed
	if res.NeedsReview {
		out = NeedsReview
	}
	return Report{Outcome: out, Task: cur}, wrap(t, "complete", err)
}

// interrupted ends a run whose ctx ended before the resolver was done
// (the executor is shutting down, cause says why): the task is given back
// without counting the attempt (GiveBacker), or failed retryably by a
// store that cannot give back.
func (e *Executor) interrupted(ctx context.Context, t cks.Task, token string, cause, rerr error) (Report, error) {
	why := "the executor is shutting down"
	if cause != nil && !errors.Is(cause, context.Canceled) {
		why = cause.Error()
	}
	var cur cks.Task
	op := "give back"
	err := e.write(ctx, t, op, func() (err error) {
		if gb, ok := e.st.(GiveBacker); ok {
			cur, err = gb.GiveBack(ctx, t.ID, token, ReasonShutdown+": "+why)
			return err
		}
		op = "fail"
		cur, err = e.st.Fail(ctx, t.ID, token, true, "interrupted: "+why)
		return err
	})
	if errors.Is(err, cks.ErrLeaseLost) {
		return e.lost(ctx, t, token)
	}
	return Report{Outcome: Interrupted, Task: cur, Err: rerr}, wrap(t, op, err)
}

// write runs one write of t's attempt (mark running, the resolver's
// evidence and decisions, its outcome, the give-back, the abort
// confirmation), and again, waiting RetryWait doubling to 5 s, while it
// fails on the connection (a database restart, a dropped connection)
// rather than with an answer of the ledger, for at most one lease of t:
// giving up at once would fail the attempt, or leave the task RUNNING
// until its lease ran out, and the work would be done twice; past a lease
// the ledger's answer could only be lease_lost. An answer (the lease is
// lost, invalid input, a conflict) or ctx's end is returned as it is.
func (e *Executor) write(ctx context.Context, t cks.Task, op string, f func() error) error {
	wait := e.opts.RetryWait
	if wait <= 0 {
		wait = 100 * time.Millisecond
	}
	c := e.opts.Clock
	begin, held := c.Monotonic(), t.LeaseExpiresAt.Sub(t.LeaseRenewedAt)
	for {
		err := f()
		if !retryable(err) || ctx.Err() != nil || clock.Since(c, begin) > held {
			return err
		}
		e.log.Warn("writing the attempt failed; retrying", "task_id", t.ID, "op", op, "err", err, "in", wait)
		if clock.Sleep(ctx, c, wait, nil) != nil {
			return err
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// retryable reports whether err is a failure to reach the ledger rather than
// its answer (store's sentinel errors; storage faults are answers too: a
// read-only or full database stays so for longer than a lease).
func retryable(err error) bool {
	for _, answer := range []error{cks.ErrLeaseLost, cks.ErrNotFound, cks.ErrConflict, cks.ErrInvalid,
		cks.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, answer) {
			return false
		}
	}
	return err != nil
}

func wrap(t cks.Task, op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("worker: task %d: %s: %w", t.ID, op, err)
}

// lost ends a run whose lease (token) is gone: the resolver has returned,
// so the abort (if one was requested) is confirmed.
func (e *Executor) lost(ctx context.Context, t cks.Task, token string) (Report, error) {
	var ab cks.Abort
	err := e.write(ctx, t, "confirm abort", func() (err error) {
		ab, err = e.st.ConfirmAbort(ctx, t.ID, token)
		return err
	})
	if errors.Is(err, cks.ErrNotFound) {
		return Report{Outcome: LeaseLost}, nil
	}
	if err != nil {
		return Report{Outcome: Aborted}, wrap(t, "confirm abort", err)
	}
	return Report{Outcome: Aborted, Abort: &ab}, nil
}

// heartbeatEvery is the lease heartbeat period for t: Options.Heartbeat,
// or a third of t's lease (at least 10ms).
func (e *Executor) heartbeatEvery(t cks.Task) time.Duration {
	if e.opts.Heartbeat > 0 {
		return e.opts.Heartbeat
	}
	return max(t.LeaseExpiresAt.Sub(t.LeaseRenewedAt)/3, 10*time.Millisecond)
}

// Watch keeps the executor's abort watch running, across runs and between
// them, until ctx ends or release is called (release waits for the watch to
// end unless a run or another hold still needs it; call it before the
// executor is dropped, so no goroutine is left behind). A claim loop holds
// it for its lifetime so that its runs, handed a Mark taken before each
// claim, skip their own lease read (RunWith).
func (e *Executor) Watch(ctx context.Context) (release func()) {
	e.mu.Lock()
	e.holds++
	e.startLocked()
	e.mu.Unlock()
	var once sync.Once
	drop := func() {
		once.Do(func() {
			e.mu.Lock()
			e.holds--
			w := e.idleLocked()
			e.mu.Unlock()
			w.stop()
		})
	}
	stop := context.AfterFunc(ctx, drop)
	return func() {
		stop()
		drop()
	}
}

// Mark returns the point a claim is made after; see RunParams.Mark.
func (e *Executor) Mark() Mark {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watch == nil {
		return Mark{}
	}
	return Mark{w: e.watch, calls: e.watch.calls}
}

// register adds r to the runs the watch checks, starting the watch when
// none runs, and reports whether a call of the watch's callback is sure to
// check r after any abort requested since m (or since the claim, without a
// mark): when it starts the watch (its establishing call will), or when m
// is of the current watch, taken once it was established, and no call has
// come since. Registration and the read of the count are one critical
// section, as a call's count and its snapshot of the runs are: a call
// counted after m either precedes the registration (the count moved: Run
// reads the lease itself) or sees r.
func (e *Executor) register(r *running, m Mark) (checked bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running[r] = struct{}{}
	if e.watch == nil {
		e.startLocked()
		return true
	}
	return m.w == e.watch && m.calls > 0 && e.watch.calls == m.calls
}

// startLocked starts the watch when none runs; e.mu is held.
func (e *Executor) startLocked() {
	if e.watch != nil || e.opts.Changes == nil {
		return
	}
	w := &watch{}
	w.base = lifecycle.New(lifecycle.Config{
		Run: func(ctx context.Context) {
			// A watch that ended by itself (the store closed, or a panic)
			// is no longer the executor's: a Mark of it is void, and the
			// next run starts another.
			defer func() {
				e.mu.Lock()
				if e.watch == w {
					e.watch = nil
				}
				e.mu.Unlock()
			}()
			err := e.opts.Changes.WatchChanges(ctx, []string{cks.TopicTaskAborts}, func(string) { e.check(ctx, w) })
			if err != nil {
				e.log.Warn("abort watch ended", "err", err)
			}
		},
		OnPanic: func(v any, stack []byte) {
			e.log.Error("abort watch panicked", "panic", v, "stack", string(stack))
		},
	})
	e.watch = w
	// A Base of its own never waits for a lock or an earlier run.
	w.base.Start(context.Background()) //nolint:errcheck // nil without an Init or a deadline
}

// idleLocked detaches and returns the watch when neither a run nor a hold
// needs it any more (nil otherwise); e.mu is held. The caller stops it
// after unlocking.
func (e *Executor) idleLocked() *watch {
	if len(e.running) > 0 || e.holds > 0 {
		return nil
	}
	w := e.watch
	e.watch = nil
	return w
}

// stop ends w and waits for its goroutine; a nil w is nothing to stop.
func (w *watch) stop() {
	if w != nil {
		w.base.Stop(context.Background()) //nolint:errcheck // nil without a deadline
	}
}

func (e *Executor) unregister(r *running) {
	e.mu.Lock()
	delete(e.running, r)
	w := e.idleLocked()
	e.mu.Unlock()
	w.stop()
}

// check is w's callback: it counts the call and cancels every run whose
// lease is no longer held.
func (e *Executor) check(ctx context.Context, w *watch) {
	e.mu.Lock()
	w.calls++
	runs := make([]*running, 0, len(e.running))
	for r := range e.running {
		runs = append(runs, r)
	}
	e.mu.Unlock()
	for _, r := range runs {
		e.checkRun(ctx, r)
	}
}

// checkRun cancels r when its lease is no longer held.
func (e *Executor) checkRun(ctx context.Context, r *running) {
	held, err := e.st.LeaseHeld(ctx, r.id, r.token)
	if err != nil && !errors.Is(err, cks.ErrNotFound) {
		if ctx.Err() == nil {
			e.log.Warn("abort check failed", "task_id", r.id, "err", err)
		}
		return
	}
	if !held {
		r.abort(errLeaseLost)
	}
}

// Attempt is the resolver's handle on its attempt: the task as claimed
// (re-entered from the top: its current text and revision) and the fenced
// writes an executor may make while it holds the lease.
type Attempt struct {
	e     *Executor
	task  cks.Task
	token string // the lease's; the resolver's writes go through Attempt
	// over ends the attempt as an abort does: a report used its budget up.
	over func(why string)
	// traceparent is the claim's (cks.ClaimedTask.Traceparent).
	traceparent string
}

// Task returns the task as it stood when claimed (a read view: without the
// lease token, which stays with the Executor).
func (a *Attempt) Task() cks.Task { return a.task }

// Traceparent is the W3C trace context the claim handed this attempt
// (cks.ClaimedTask.Traceparent: the attempt's span when the hub exports
// traces, else the task's traceparent; "" for none). The resolver's
// context carries it too, as OpenTelemetry's propagation reads it, so
// spans the resolver starts with an OpenTelemetry tracer nest under the
// attempt (docs/tracing.md).
func (a *Attempt) Traceparent() string { return a.traceparent }

// traced is ctx carrying the remote span context of traceparent tp (W3C
// Trace Context propagation), or ctx itself when tp is empty or bad.
func traced(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// Evidence records evidence for this attempt. Like every write of the
// attempt it is made again while it fails on the connection, for up to a
// lease (Executor.write): evidence written after the work — a command's
// output — must not cost the work a second run because the database
// restarted in between. (A write whose commit was not acknowledged may
// then be recorded twice.)
func (a *Attempt) Evidence(ctx context.Context, kind, body string) (cks.Evidence, error) {
	var out cks.Evidence
	err := a.e.write(ctx, a.task, "evidence", func() (err error) {
		out, err = a.e.st.AddEvidence(ctx, a.task.ID, a.token, kind, body)
		return err
	})
	return out, err
}

// Output appends a chunk of live output (append_output: at most
// cks.MaxOutputChunk bytes of UTF-8; stream a label such as stdout) to
// this attempt. Unlike the attempt's other writes it is tried once: live
// output is for watching, and a chunk lost on the connection is the
// caller's to note (an exec agent drops it with a note).
func (a *Attempt) Output(ctx context.Context, stream, text string) (cks.OutputAppended, error) {
	o, ok := a.e.st.(OutputAppender)
	if !ok {
		return cks.OutputAppended{}, ErrNoOutput
	}
	return o.AppendOutput(ctx, a.task.ID, a.token, stream, text)
}

// Decide records a decision derived from the revision this attempt
// claimed, retried as Evidence is.
func (a *Attempt) Decide(ctx context.Context, kind, text string) (cks.Decision, error) {
	var out cks.Decision
	err := a.e.write(ctx, a.task, "decision", func() (err error) {
		out, err = a.e.st.RecordDecision(ctx, a.task.ID, a.token, kind, text, a.task.Revision)
		return err
	})
	return out, err
}

// ReportUsage records what one call of this attempt spent (report_usage;
// docs/spend.md), retried as Evidence is. When the report uses the task's
// budget up (BudgetExceeded), the ledger has moved the task to NEEDS_INPUT
// and aborted this attempt: the attempt's context is cancelled (as by a
// stop) and the abort confirmed once the resolver returns.
func (a *Attempt) ReportUsage(ctx context.Context, u cks.UsageInput) (cks.UsageReport, error) {
	var out cks.UsageReport
	err := a.e.write(ctx, a.task, "usage", func() (err error) {
		out, err = a.e.st.ReportUsage(ctx, a.task.ID, a.token, u)
		return err
	})
	if err == nil && out.BudgetExceeded != "" {
		a.over(out.BudgetExceeded)
	}
	return out, err
}

// SetWorkspace records path as this attempt's workspace.
func (a *Attempt) SetWorkspace(ctx context.Context, path string) error {
	_, err := a.Evidence(ctx, cks.EvidenceWorkspace, path)
	return err
}

// PreviousWorkspaces lists the workspaces earlier attempts left. They are
// not this attempt's unless it calls ReuseWorkspace.
func (a *Attempt) PreviousWorkspaces(ctx context.Context) ([]string, error) {
	t, err := a.e.st.GetTask(ctx, a.task.ID)
	if err != nil {
		return nil, err
	}
	return t.Workspaces(), nil
}

// ReuseWorkspace records the explicit decision to continue in path, a
// workspace of an earlier attempt, and makes it this attempt's workspace;
// retried as Evidence is.
func (a *Attempt) ReuseWorkspace(ctx context.Context, path string) (cks.Decision, error) {
	var out cks.Decision
	err := a.e.write(ctx, a.task, "reuse workspace", func() (err error) {
		out, err = a.e.st.ReuseWorkspace(ctx, a.task.ID, a.token, path, a.task.Revision)
		return err
	})
	return out, err
}
