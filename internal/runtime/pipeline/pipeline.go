// Package pipeline runs the research pipeline of ADR-007: a question moves
// through Researcher → Critic → Synthesizer → Arbiter by its current_status
// in the knowledge store. Steps never call each other; each claims objects of
// its statuses before any model call, writes its outcome — new status,
// reasoning nodes, edges, a log entry — in one store transition, and is woken
// by the store's change notification with a slow fallback poll. The
// Orchestrator owns the step workers: it restarts one that crashed, with
// backoff, and publishes AgentStepStarted/AgentStepCompleted on the event bus.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/lease"
	"github.com/cks-dev/cks/internal/service/llm"
)

// Terminal reports whether no step claims status: resolved, or parked in
// needs_input.
func Terminal(status string) bool {
	return slices.Contains(cks.FinalStatuses, status)
}

// Actions of log entries that are not step completions.
const (
	ActionFailed   = "failed"
	ActionParked   = "parked"
	ActionReplayed = "replayed"
	ActionCreated  = "created"
)

// Store is what the pipeline's steps need of the knowledge store
// (knowledge.Service): find and claim objects by status, keep and give
// back a claim, and write a step's transition.
type Store interface {
	GetObject(ctx context.Context, id int64) (cks.Object, error)
	// GetObjects reads many objects at once, each once, ascending by id.
	GetObjects(ctx context.Context, ids []int64) ([]cks.Object, error)
	ListObjects(ctx context.Context, f cks.ObjectFilter) (cks.ObjectPage, error)
	ClaimObject(ctx context.Context, id int64, worker string, statuses []string) (cks.Object, error)
	ClaimObjects(ctx context.Context, status, worker string, n int) ([]cks.Object, error)
	TouchClaim(ctx context.Context, id int64, claimToken string) error
	ReleaseClaim(ctx context.Context, id int64, claimToken string) error
	TransitionObject(ctx context.Context, id int64, claimToken string, t knowledge.ObjectTransition) (cks.Object, []cks.Object, error)
}

// Watcher is what the pipeline needs of the change notifications: to
// wake on cks.TopicObjects (notifier.Notifier).
type Watcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// Defaults of Config (DefaultPoll and DefaultMaxRounds are those of the
// settings CKS_PIPELINE_OBJECT_POLL and CKS_PIPELINE_MAX_ROUNDS).
const (
	DefaultPoll        = config.DefaultPipelinePoll
	DefaultMaxRounds   = config.DefaultPipelineMaxRounds
	DefaultPassages    = 5
	DefaultMaxFailures = 3
	DefaultClaimTouch  = time.Minute
)

// Config configures an Orchestrator.
type Config struct {
	Store Store
	// Changes wakes the workers on cks.TopicObjects; nil (like NoNotify)
	// leaves them to their poll.
	Changes Watcher
	Model   llm.Model
	Corpus  *llm.Corpus
	// Steps are the steps to run; Steps() when nil.
	Steps []Step
	// Workers is the number of workers per step (default 1).
	Workers int
	// Poll is the fallback poll of every worker (default 30 s): it runs
	// however notifications fare (ADR-007 §3).
	Poll time.Duration
	// NoNotify turns the change notification off, leaving the poll (for
	// measurements and tests).
	NoNotify bool
	// MaxRounds bounds how often a question is sent back; the send-back
	// that would start round MaxRounds parks it in needs_input (default 3).
	MaxRounds int
	// Passages is how many corpus passages one research round reads
	// (default 5; round r reads the next ones).
	Passages int
	// MaxFailures is how many unusable model replies one step may get for
	// one question in one round before it parks it (default 3).
	MaxFailures int
	// ClaimTouch is how often a running step renews its claim (default 1 m;
	// the hub makes it a third of the default lease, CKS_STALE_WINDOW, when
	// that is shorter, since the lease reaper releases a claim not renewed
	// within it), with a lease.Keeper.
	ClaimTouch time.Duration
	// Clock times the poll, the claim renewals and the backoffs, and tells
	// the time and duration of the step events; the system clock when nil.
	Clock clock.Clock
	// Name prefixes the workers' names (default "pipeline").
	Name string
	// Bus, when set, receives AgentStepStarted/AgentStepCompleted.
	Bus *events.Bus
	// Logger receives the orchestrator's log; nil is slog.Default().
	Logger *slog.Logger
}

// Step is one stage of the pipeline.
type Step interface {
	// Name is the step's name, recorded as the agent of its log entries.
	Name() string
	// Claims lists the statuses the step claims objects in.
	Claims() []string
	// Run works on obj, already claimed (obj.ClaimToken) and read with its
	// log and edges, and ends with exactly one transition of it. An error
	// leaves the transition undone (the caller releases or records it).
	Run(ctx context.Context, env *Env, obj cks.Object) (Outcome, error)
}

// Outcome is what a step did to an object.
type Outcome struct {
	// To is the status the object moved to.
	To string
	// Action is the log entry's action.
	Action string
}

// Steps returns the four steps in pipeline order.
func Steps() []Step { return []Step{Researcher{}, Critic{}, Synthesizer{}, Arbiter{}} }

// Env is what a step works with.
type Env struct {
	Store       Store
	Model       llm.Model
	Corpus      *llm.Corpus
	MaxRounds   int
	Passages    int
	MaxFailures int
	Log         *slog.Logger

	mu      sync.Mutex
	corpora map[string]*llm.Corpus // per-question corpora by directory
}

// CorpusFor returns the corpus a question reads: Corpus for dir "", else
// the directory dir, loaded on first use and cached for the Env's lifetime
// (a directory that fails to load is not cached, so it is tried again for
// the next question that names it). The error names the directory.
func (e *Env) CorpusFor(dir string) (*llm.Corpus, error) {
	if dir == "" {
		return e.Corpus, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.corpora[dir]; ok {
		return c, nil
	}
	c, err := llm.LoadCorpus(dir)
	if err != nil {
		return nil, fmt.Errorf("the question's corpus cannot be loaded: %w", err)
	}
	if e.corpora == nil {
		e.corpora = map[string]*llm.Corpus{}
	}
	e.corpora[dir] = c
	return c, nil
}

// Orchestrator owns the step workers (ADR-007 §5). Its workers run as one
// lifecycle.Base: Start starts them, Stop cancels them and waits for every
// one to exit (a step in flight is cancelled and its claim given back).
type Orchestrator struct {
	cfg  Config
	env  *Env
	log  *slog.Logger
	base *lifecycle.Base

	mu    sync.Mutex
	wakes map[chan struct{}]struct{}
}

// New returns an Orchestrator for cfg, or an error naming what is missing.
func New(cfg Config) (*Orchestrator, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("pipeline: no store")
	case cfg.Model == nil:
		return nil, errors.New("pipeline: no model")
	case cfg.Corpus == nil:
		return nil, errors.New("pipeline: no corpus")
	}
	if cfg.Steps == nil {
		cfg.Steps = Steps()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.MaxRounds <= 0 {
		cfg.MaxRounds = DefaultMaxRounds
	}
	if cfg.Passages <= 0 {
		cfg.Passages = DefaultPassages
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = DefaultMaxFailures
	}
	if cfg.ClaimTouch <= 0 {
		cfg.ClaimTouch = DefaultClaimTouch
	}
	if cfg.Name == "" {
		cfg.Name = "pipeline"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	env := &Env{Store: cfg.Store, Model: cfg.Model, Corpus: cfg.Corpus, MaxRounds: cfg.MaxRounds,
		Passages: cfg.Passages, MaxFailures: cfg.MaxFailures, Log: log}
	o := &Orchestrator{cfg: cfg, env: env, log: log, wakes: map[chan struct{}]struct{}{}}
	o.base = lifecycle.New(lifecycle.Config{Run: o.run, OnPanic: func(v any, stack []byte) {
		log.Error("pipeline orchestrator panicked; its workers stopped", "panic", v, "stack", string(stack))
	}})
	return o, nil
}

// Run is the concurrent mode: Workers workers per step, all under the one
// claim discipline, until ctx ends; it is Start, then Stop once ctx ends.
// It returns nil then.
func (o *Orchestrator) Run(ctx context.Context) error {
	if err := o.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // ended before it started
		}
		return err
	}
	<-ctx.Done()
	return o.Stop(context.WithoutCancel(ctx))
}

// Start starts the concurrent mode's workers unless they are running; they
// run until Stop (they keep ctx's values, not its cancellation).
func (o *Orchestrator) Start(ctx context.Context) error { return o.base.Start(ctx) }

// Stop cancels the workers and waits for them to exit, unless ctx ends
// first (then it returns ctx's error and they finish exiting on their own).
func (o *Orchestrator) Stop(ctx context.Context) error { return o.base.Stop(ctx) }

// run is the Base's loop: the change watch and every step's workers, until
// ctx ends.
func (o *Orchestrator) run(ctx context.Context) {
	var wg sync.WaitGroup
	if !o.cfg.NoNotify && o.cfg.Changes != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One watch per process, fanned out to every worker.
			if err := o.cfg.Changes.WatchChanges(ctx, []string{cks.TopicObjects}, func(string) { o.wakeAll() }); err != nil {
				o.log.Error("object change watch ended", "err", err)
			}
		}()
	}
	for _, s := range o.cfg.Steps {
		for i := range o.cfg.Workers {
			name := fmt.Sprintf("%s/%s/%d", o.cfg.Name, s.Name(), i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				o.supervise(ctx, s, name)
			}()
		}
	}
	o.log.Info("pipeline running", "steps", len(o.cfg.Steps), "workers_per_step", o.cfg.Workers,
		"model", o.cfg.Model.Name(), "poll", o.cfg.Poll.String(), "notify", !o.cfg.NoNotify)
	wg.Wait()
}

// supervise runs one worker and restarts it, with backoff, when it crashes.
func (o *Orchestrator) supervise(ctx context.Context, s Step, name string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := o.worker(ctx, s, name)
		if ctx.Err() != nil {
			return
		}
		o.log.Error("pipeline worker crashed; restarting", "worker", name, "err", err, "backoff", backoff.String())
		if clock.Sleep(ctx, o.cfg.Clock, backoff+rand.N(backoff/2+1), nil) != nil {
			return
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// errPanic wraps a step's panic.
type errPanic struct {
	val   any
	stack []byte
}

func (e *errPanic) Error() string { return fmt.Sprintf("panic: %v\n%s", e.val, e.stack) }

// worker claims and runs objects of s's statuses until ctx ends (nil) or a
// step panics (the panic as an error).
func (o *Orchestrator) worker(ctx context.Context, s Step, name string) (err error) {
	wake := o.subscribe()
	defer o.unsubscribe(wake)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		worked := false
		for _, status := range s.Claims() {
			// A read first: most wake-ups are for other steps' statuses, and
			// a claim is a write (the one writer, on SQLite).
			page, err := o.cfg.Store.ListObjects(ctx, cks.ObjectFilter{Statuses: []string{status}, Unclaimed: true, Limit: 1})
			if err != nil {
				if ctx.Err() == nil {
					o.log.Warn("listing claimable objects failed", "worker", name, "status", status, "err", err)
				}
				break
			}
			if len(page.Objects) == 0 {
				continue
			}
			objs, err := o.cfg.Store.ClaimObjects(ctx, status, name, 1)
			if err != nil {
				if ctx.Err() == nil {
					o.log.Warn("claim failed", "worker", name, "status", status, "err", err)
				}
				break
			}
			if len(objs) == 0 {
				continue
			}
			worked = true
			if err := o.runOne(ctx, s, name, objs[0]); err != nil {
				var p *errPanic
				if errors.As(err, &p) {
					return err
				}
				// Transient (model down, store error): the claim was given
				// back; wait before trying again, growing the wait.
				backoff = min(max(2*backoff, 200*time.Millisecond), 30*time.Second)
				o.log.Warn("step failed; object released", "worker", name, "object_id", objs[0].ID, "err", err,
					"retry_in", backoff.String())
				if clock.Sleep(ctx, o.cfg.Clock, backoff, nil) != nil {
					return nil
				}
			} else {
				backoff = 0
			}
		}
		if worked {
			continue // drain what is there before waiting
		}
		clock.Sleep(ctx, o.cfg.Clock, o.cfg.Poll, wake) //nolint:errcheck // woken, polled or done: the loop reads ctx
	}
	return nil
}

// runOne runs s on the claimed object obj: the idempotency check, the
// failure bound, the step itself with its claim renewed alongside, and the
// handling of its error. It returns an error only when the claim was given
// back without a transition (transient failure) or the step panicked.
func (o *Orchestrator) runOne(ctx context.Context, s Step, name string, claimed cks.Object) (err error) {
	begin := o.cfg.Clock.Monotonic()
	o.publish(events.AgentStepStarted, events.StepEvent{Step: s.Name(), Worker: name, ObjectID: claimed.ID, From: claimed.Status})
	out := Outcome{}
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if rerr := o.cfg.Store.ReleaseClaim(rctx, claimed.ID, claimed.ClaimToken); rerr != nil && !errors.Is(rerr, cks.ErrLeaseLost) {
			o.log.Warn("releasing a claim failed", "object_id", claimed.ID, "err", rerr)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			release()
			err = &errPanic{val: p, stack: debug.Stack()}
			out = Outcome{To: claimed.Status, Action: "panicked"}
		}
		outcome := out.Action
		if err != nil && outcome == "" {
			outcome = "released"
		}
		o.publish(events.AgentStepCompleted, events.StepEvent{Step: s.Name(), Worker: name, ObjectID: claimed.ID,
			From: claimed.Status, To: out.To, Outcome: outcome, DurationMS: float64(clock.Since(o.cfg.Clock, begin).Microseconds()) / 1000})
	}()

	obj, gerr := o.cfg.Store.GetObject(ctx, claimed.ID)
	if gerr != nil {
		release()
		return gerr
	}
	obj.ClaimToken = claimed.ClaimToken
	if done, ok := completion(obj, s.Name()); ok {
		// Re-delivered after the step already did its work for this content
		// and round: replay the recorded move, call no model.
		out, err = o.env.move(ctx, obj, s.Name(), done.TransitionedTo, ActionReplayed, nil)
		return err
	}
	if n := failures(obj, s.Name()); n >= o.cfg.MaxFailures {
		out, err = o.env.park(ctx, obj, s.Name(), fmt.Sprintf("%s got %d unusable model replies in round %d", s.Name(), n, obj.Round))
		return err
	}

	// The claim is renewed while the step runs; a lost claim cancels it.
	keeper, sctx, err := lease.Keep(ctx, lease.Config{Every: o.cfg.ClaimTouch, Clock: o.cfg.Clock,
		Logger: o.log.With("object_id", obj.ID, "worker", name),
		Renew:  func(ctx context.Context) error { return o.cfg.Store.TouchClaim(ctx, obj.ID, obj.ClaimToken) }})
	if err != nil {
		release()
		return err
	}
	defer keeper.Stop() // also when the step panics
	out, err = s.Run(sctx, o.env, obj)
	keeper.Stop()
	var reply *llm.ReplyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &reply):
		// An unusable reply is recorded, with the reply kept, and the
		// object is tried again (and parked after MaxFailures).
		out, err = o.env.recordFailure(ctx, obj, s.Name(), o.cfg.Model.Name(), reply)
		return err
	default:
		release()
		return err
	}
}

// RunSequential is the sequential mode: it drives object id end to end,
// running whichever step claims its status until it is resolved or parked
// in needs_input, and returns it as it ends (with log and edges).
func (o *Orchestrator) RunSequential(ctx context.Context, id int64) (cks.Object, error) {
	for {
		obj, err := o.cfg.Store.GetObject(ctx, id)
		if err != nil || Terminal(obj.Status) {
			return obj, err
		}
		i := slices.IndexFunc(o.cfg.Steps, func(s Step) bool { return slices.Contains(s.Claims(), obj.Status) })
		if i < 0 {
			return obj, fmt.Errorf("pipeline: object %d is %q, which no step claims", id, obj.Status)
		}
		s := o.cfg.Steps[i]
		name := o.cfg.Name + "/" + s.Name() + "/sequential"
		claimed, err := o.cfg.Store.ClaimObject(ctx, id, name, s.Claims())
		if err != nil {
			return obj, err
		}
		if err := o.runOne(ctx, s, name, claimed); err != nil {
			return obj, err
		}
	}
}

func (o *Orchestrator) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	o.mu.Lock()
	o.wakes[ch] = struct{}{}
	o.mu.Unlock()
	return ch
}

func (o *Orchestrator) unsubscribe(ch chan struct{}) {
	o.mu.Lock()
	delete(o.wakes, ch)
	o.mu.Unlock()
}

// wakeAll wakes every worker; each re-queries its statuses (the
// notification carries nothing, so duplicates cost one empty claim).
func (o *Orchestrator) wakeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for ch := range o.wakes {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (o *Orchestrator) publish(typ string, e events.StepEvent) {
	if o.cfg.Bus != nil {
		o.cfg.Bus.Publish(events.Event{Type: typ, At: o.cfg.Clock.Now(), Data: e})
	}
}

// completion returns step's completion entry for obj's current content and
// round, if the log holds one (ADR-007's idempotency check). An entry
// records the object as it was after it; what the step worked on is the
// object as the entry before it left it, so that is what is compared (a
// send-back's entry has the next round, but the step worked in this one).
func completion(obj cks.Object, step string) (cks.TransitionEntry, bool) {
	var found cks.TransitionEntry
	ok := false
	for i, e := range obj.Log {
		if i == 0 || e.Agent != step || e.Action == ActionFailed || e.Action == ActionCreated {
			continue
		}
		before := obj.Log[i-1]
		if before.ContentHash == obj.ContentHash && before.Round == obj.Round && e.TransitionedTo != obj.Status {
			found, ok = e, true
		}
	}
	return found, ok
}

// failures counts step's failed entries for obj in its current round.
func failures(obj cks.Object, step string) int {
	n := 0
	for _, e := range obj.Log {
		if e.Agent == step && e.Action == ActionFailed && e.Round == obj.Round {
			n++
		}
	}
	return n
}
