// Package agents is the runtime of the standalone agent processes (`cks agent
// KIND`, ADR-014/016): one Run shared by every kind, which reports liveness,
// claims tasks of the kind's types, works each with the lease heartbeat and
// abort delivery of package worker, waits between claims until new work or a
// stop arrives, and drains on stop — nothing more is claimed, the current
// task may finish within the drain timeout (else it is interrupted and given
// back, its attempt not counted), and Run returns nil. A stop is the
// cancellation of Run's context (SIGTERM/SIGINT in a process) or a stop
// request read from the store (`cks process stop`); both take the same path.
package agents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// Options are the optional parts of Run.
type Options struct {
	// Logger receives the agent's log; nil is slog.Default().
	Logger *slog.Logger
	// Clock tells liveness times and times the agent's waits (the idle
	// poll, the liveness interval, the task-lease heartbeat); the system
	// clock when nil. `cks agent` passes its backend's, the database's
	// clock on Postgres (backend.Backend.Clock).
	Clock clock.Clock
	// NoFastStop leaves the liveness tick as the only path of a stop
	// request (for measurements; see liveness.ReporterConfig.NoFastPath).
	NoFastStop bool
	// Started, when set, is called with the reporter once the first
	// heartbeat is written (tests and `cks dev` learn the instance id).
	Started func(*liveness.Reporter)
	// Interrupt, when set, ends a drain at once: the task in hand is
	// interrupted and given back as when Settings.DrainTimeout has
	// passed (`cks agent` closes it on a second SIGTERM or SIGINT).
	Interrupt <-chan struct{}
	// Background, when set, runs for the agent's lifetime alongside the
	// claim loop: a kind whose work is not tasks of the ledger (the
	// pipeline agent's orchestrator) does it here. It starts after the
	// first heartbeat, and its context is cancelled on stop (signal or stop
	// request) once the claim loop has drained; Run waits for it to return
	// before the final heartbeat. When it returns before the stop, the agent
	// stops too: a non-nil error is then Run's error (the process exits
	// non-zero); nil ends the agent normally.
	Background func(ctx context.Context) error
}

// Services are what an agent process acts through: the ledger (its
// claims and the executor's fenced calls), its liveness row, and the change
// notifications that wake it (tasks ready, a stop request, an abort).
// ServicesOf gives them of a backend; a test may wrap any of them.
type Services struct {
	Tasks    Tasks
	Liveness liveness.ReporterStore
	Changes  worker.Watcher
}

// Tasks is what an agent needs of the ledger: the executor's calls and the
// claim that starts them.
type Tasks interface {
	worker.Store
	Claim(ctx context.Context, p ledger.ClaimParams) ([]cks.ClaimedTask, error)
}

// ServicesOf returns an agent's services on b.
func ServicesOf(b *backend.Backend) Services {
	return Services{Tasks: b.Tasks, Liveness: b.Liveness, Changes: b.Changes}
}

// Run runs the agent until ctx ends or a stop is requested, then drains and
// returns nil: it claims nothing more, lets the task in hand finish for up
// to set.DrainTimeout (or until Options.Interrupt), then interrupts it and
// gives it back (worker.Interrupted: OPEN again, its attempt not counted).
// resolve works one claimed task; with no resolver, or no task types, the
// agent claims nothing and only reports liveness and obeys stop. An error is
// returned only when the agent cannot start (its first heartbeat cannot be
// written, and ctx had not ended: a stop before the start returns nil) or
// its Options.Background failed; store failures later are logged and
// retried.
func Run(ctx context.Context, st Services, set Settings, resolve worker.Resolver, opts Options) (err error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	// run ends on SIGTERM (ctx) and on a stop request alike.
	run, stop := context.WithCancel(ctx)
	defer stop()
	var claims []string // what the claim loop below claims: nothing without a resolver
	if resolve != nil {
		claims = set.Types
	}
	rep := liveness.NewReporter(st.Liveness, liveness.ReporterConfig{Kind: set.Kind, TaskTypes: claims, Interval: set.LivenessInterval,
		OnStopRequested: stop, NoFastPath: opts.NoFastStop, Changes: st.Changes, Clock: opts.Clock, Logger: log})
	if err := rep.Start(ctx); err != nil {
		if ctx.Err() != nil {
			// Stopped before it started: nothing claimed, nothing to drain.
			log.Info(MsgStoppedBeforeStart, "process_kind", set.Kind, "err", err)
			return nil
		}
		return err
	}
	log = log.With("process_kind", set.Kind, "instance_id", rep.InstanceID())
	log.Info("agent started", "types", set.Types, "poll_interval", set.PollInterval.String(),
		"liveness_interval", set.LivenessInterval.String(), "heartbeat_interval", set.HeartbeatInterval.String(),
		"lease", set.Lease.String(), "drain_timeout", set.DrainTimeout.String(), "concurrency", max(set.Concurrency, 1))
	if msg := set.MaxRetriesDeprecation(); msg != "" && resolve != nil {
		log.Warn(msg)
	}
	if opts.Started != nil {
		opts.Started(rep)
	}
	defer func() {
		// The final, backdated heartbeat is written even though ctx ended.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := rep.Stop(wctx); err != nil {
			log.Warn("final heartbeat failed", "err", err)
		}
		log.Info("agent stopped")
	}()
	if opts.Background != nil {
		// Deferred after the final heartbeat's defer, so it runs first: the
		// background function has returned before the agent reads stopped.
		bg := background(opts.Background, stop, log)
		if err := bg.base.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("start the background work: %w", err)
		}
		defer func() {
			if serr := bg.base.Stop(context.WithoutCancel(ctx)); serr != nil && err == nil {
				err = fmt.Errorf("stop the background work: %w", serr)
			}
			if bg.early && bg.err != nil && err == nil { // read after Stop waited for it
				err = bg.err
			}
		}()
	}

	if resolve == nil || len(set.Types) == 0 {
		<-run.Done()
		log.Info(MsgDraining)
		return nil
	}
	// The claim loop is a lifecycle.Base: started now, stopped once run
	// ends (signal or stop request), its Stop waiting for the task in hand
	// and for the watch that wakes it.
	var panicked atomic.Value // what the claim loop panicked with
	// hurry is the context of the task in hand: it outlives the stop (the
	// drain finishes the task) and ends when the drain may not wait any
	// longer, with the reason as its cause: the executor then gives the
	// task back (worker.Interrupted).
	hurry, interrupt := context.WithCancelCause(context.WithoutCancel(ctx))
	defer interrupt(nil)
	loop := lifecycle.New(lifecycle.Config{
		Run: func(lctx context.Context) {
			// The watch that wakes an idle claim loop lives as long as the
			// loop: ended and waited for when it returns (or panics).
			wake := make(chan struct{}, 1)
			wctx, endWatch := context.WithCancel(lctx)
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				watchReady(wctx, st, wake)
			}()
			defer func() { endWatch(); <-watched }()
			claimLoop(lctx, run, hurry, st, set, resolve, wake, rep,
				worker.New(st.Tasks, worker.Options{Heartbeat: set.HeartbeatInterval, Clock: opts.Clock, Logger: log, Changes: st.Changes}),
				opts.Clock, log)
		},
		OnPanic: func(v any, stack []byte) {
			log.Error("claim loop panicked; stopping the agent", "panic", v, "stack", string(stack))
			panicked.Store(fmt.Sprint(v))
			stop()
		},
	})
	if err := loop.Start(context.WithoutCancel(run)); err != nil {
		return fmt.Errorf("start the claim loop: %w", err)
	}
	<-run.Done()
	log.Info(MsgDraining, "drain_timeout", set.DrainTimeout.String())
	if err := drain(ctx, loop, set.DrainTimeout, opts, interrupt, log); err != nil {
		return fmt.Errorf("stop the claim loop: %w", err)
	}
	if v := panicked.Load(); v != nil {
		return fmt.Errorf("agents: the claim loop panicked: %v", v)
	}
	return nil
}

// drain stops the claim loop, which waits for the task in hand, and
// interrupts that task (interrupt: the executor gives it back) once
// timeout of opts.Clock has passed (0: never) or opts.Interrupt closes.
func drain(ctx context.Context, loop *lifecycle.Base, timeout time.Duration, opts Options, interrupt context.CancelCauseFunc, log *slog.Logger) error {
	stopped := make(chan error, 1)
	go func() { stopped <- loop.Stop(context.WithoutCancel(ctx)) }()
	var expired <-chan time.Time
	if timeout > 0 {
		t := opts.Clock.NewTimer(timeout)
		defer t.Stop()
		expired = t.C()
	}
	select {
	case err := <-stopped:
		return err
	case <-expired:
		log.Warn(MsgDrainTimeout, "drain_timeout", timeout.String())
		interrupt(fmt.Errorf("the drain timeout (%s) passed", timeout))
	case <-opts.Interrupt:
		log.Warn(MsgInterrupted)
		interrupt(errors.New("interrupted during the drain"))
	}
	return <-stopped
}

// The log messages of a drain that could not wait for the task in hand.
const (
	MsgDrainTimeout = "the task in hand did not finish within the drain timeout: interrupting it and giving it back"
	MsgInterrupted  = "interrupted during the drain: interrupting the task in hand and giving it back"
)

// backgroundWork is Options.Background on a lifecycle.Base: its context
// ends at Stop, and when it returns before that it stops the agent (stop).
// early and err are its outcome, read once Stop has waited for it.
type backgroundWork struct {
	base  *lifecycle.Base
	early bool  // it returned (or panicked) before the stop
	err   error // what it returned, or its panic
}

func background(f func(context.Context) error, stop context.CancelFunc, log *slog.Logger) *backgroundWork {
	w := &backgroundWork{}
	w.base = lifecycle.New(lifecycle.Config{
		Run: func(ctx context.Context) {
			err := f(ctx)
			w.early, w.err = ctx.Err() == nil, err
			switch {
			case w.early && err != nil:
				log.Error("background work failed; stopping the agent", "err", err)
			case w.early:
				log.Info("background work ended; stopping the agent")
			}
			stop() // when it ended by itself, so does the agent
		},
		OnPanic: func(v any, stack []byte) {
			log.Error("background work panicked; stopping the agent", "panic", v, "stack", string(stack))
			w.early, w.err = true, fmt.Errorf("agents: the background work panicked: %v", v)
			stop()
		},
	})
	return w
}

// watchReady sends on wake (without blocking) whenever tasks become ready,
// until ctx ends.
func watchReady(ctx context.Context, st Services, wake chan<- struct{}) {
	st.Changes.WatchChanges(ctx, []string{cks.TopicTasksReady}, func(string) { //nolint:errcheck // returns nil when ctx ends
		select {
		case wake <- struct{}{}:
		default:
		}
	})
}

// claimLoop claims tasks of set.Types and works each with ex, up to
// set.Concurrency at once, until ctx or run ends. A claim that finds
// nothing waits in the ledger for work (ledger.ClaimParams.Wait, the
// long poll): the ledger's waiting room answers it the moment a task of
// its types is made OPEN or becomes due — a delayed task at its
// run_after, which no notification announces — with no poll, and the
// wait ends after set.PollInterval (at most ledger.MaxClaimWait) to claim
// again; a wake ends it too. After a failed claim the loop waits
// set.PollInterval of c. One claim takes as many tasks as there are free
// slots.
// Tasks in hand are finished even when ctx or run end meanwhile (drain):
// claimLoop returns once they are; only an abort of a task itself cancels
// its resolver. run is read as well as ctx because the loop's own context
// ends only when its Stop is called, a moment after run ends: a slot freed
// in that moment must not be followed by another claim. A resolver that
// panics panics the loop (the agent stops), as if it ran in the loop.
func claimLoop(ctx, run, hurry context.Context, st Services, set Settings, resolve worker.Resolver, wake <-chan struct{},
	rep *liveness.Reporter, ex *worker.Executor, c clock.Clock, log *slog.Logger) {
	name := ExecutorName(set.Kind, rep.InstanceID())
	// The executor's abort watch lives as long as the loop, and a mark taken
	// before each claim spares each run its own lease read (worker.RunParams).
	release := ex.Watch(ctx)
	defer release()
	resolve = capRetries(resolve, set.MaxRetries)
	slots := max(set.Concurrency, 1)
	free := make(chan struct{}, slots) // a token per free slot
	for range slots {
		free <- struct{}{}
	}
	// A task's panic, with its stack, for the loop to raise; sent before
	// the task's slot is freed, so the loop sees it before it claims again,
	// and ending the loop's waits (lctx).
	panics := make(chan string, slots)
	lctx, endWaits := context.WithCancel(ctx)
	defer endWaits()
	// A claim's wait for work ends with the loop's waits and with run: no
	// claim is made once run ended (the drain).
	claimWaits, endClaimWaits := context.WithCancel(lctx)
	defer endClaimWaits()
	defer context.AfterFunc(run, endClaimWaits)()
	wait := min(set.PollInterval, ledger.MaxClaimWait)
	raise := func() {
		select {
		case p := <-panics:
			panic(p)
		default:
		}
	}
	var tasks sync.WaitGroup
	defer func() {
		tasks.Wait() // the drain: every task in hand finishes (or is given back) first
		raise()
	}()
	for {
		select {
		case <-free:
		case <-lctx.Done():
			return
		case <-run.Done():
			return
		}
		raise()
		if ctx.Err() != nil || run.Err() != nil {
			return
		}
		n := 1
		for more := true; more; {
			select {
			case <-free:
				n++
			default:
				more = false
			}
		}
		mark := ex.Mark()
		// Claimed straight to RUNNING (the executor then skips
		// MarkRunning): claim and start are one commit.
		woken, stopWake := wakeOrDone(claimWaits, wake)
		claimed, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: name, Types: set.Types, N: n, Lease: set.Lease, Running: true,
			Wait: wait, Interrupt: woken})
		stopWake()
		for range n - len(claimed) {
			free <- struct{}{}
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("claim failed; retrying after the poll interval", "err", err)
			}
			clock.Sleep(lctx, c, set.PollInterval, nil) //nolint:errcheck // the loop reads lctx
			continue
		}
		if len(claimed) == 0 {
			continue // the claim waited its time, or was woken or ended
		}
		for _, t := range claimed {
			rep.HoldTask(t.ID, t.Type)
			tasks.Go(func() {
				defer func() { free <- struct{}{} }()
				defer func() {
					if v := recover(); v != nil {
						panics <- fmt.Sprintf("%v (task %d)\n%s", v, t.ID, debug.Stack())
						endWaits()
					}
				}()
				r, err := ex.RunWith(hurry, t, resolve, worker.RunParams{Mark: mark})
				rep.ReleaseTask(t.ID)
				if err != nil {
					log.Error("writing a task outcome failed", "task_id", t.ID, "err", err)
					return
				}
				log.Info("task done", "task_id", t.ID, "type", t.Type, "attempt", t.Attempts, "outcome", r.Outcome)
			})
		}
	}
}

// wakeOrDone is a channel that closes when done ends or a wake arrives:
// the Interrupt of one claim's wait (the wake, TopicTasksReady heard by
// the agent's own watch, ends the wait of a claim on a ledger that has no
// waiting room, which waits out its time otherwise). stop ends its
// goroutine once the claim returned; a wake it took meanwhile is spent.
func wakeOrDone(done context.Context, wake <-chan struct{}) (_ <-chan struct{}, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(done)
	out := make(chan struct{})
	go func() {
		defer close(out)
		select {
		case <-wake:
		case <-ctx.Done():
		}
	}()
	return out, cancel
}

// MsgDraining is the log message of an agent that was told to stop: it
// finishes the task in hand (within its drain timeout), claims nothing
// more, and exits.
const MsgDraining = "stopping: finishing the current task, claiming nothing more"

// MsgStoppedBeforeStart is the log message of an agent stopped before it
// had started (its database opened and its first heartbeat written): it
// claimed nothing and ends cleanly.
const MsgStoppedBeforeStart = "stopped before the agent had started: exiting, nothing claimed"

// capRetries makes a failure permanent once the task has had maxRetries
// retries (attempt maxRetries+1 or later): the deprecated
// Settings.MaxRetries; below 0 resolve is returned as it is.
func capRetries(resolve worker.Resolver, maxRetries int) worker.Resolver {
	if maxRetries < 0 {
		return resolve
	}
	return func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		res, err := resolve(ctx, a)
		if err != nil && a.Task().Attempts > maxRetries && !errors.Is(err, worker.ErrPermanent) {
			err = worker.Permanent(fmt.Errorf("after %d retries: %w", maxRetries, err))
		}
		return res, err
	}
}
