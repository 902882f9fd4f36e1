package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/runtime/worker"
)

// goWorker is the Go client's worker for the scenario table
// (sdk/scenarios.json): the loop the SDKs' workers run (sdk/python,
// sdk/typescript), over package client, with worker.Executor running each
// task and the client as its Store — the path a Go program takes to the hub
// over HTTP, as bench/peers' HTTP agents do. It long-polls claim_tasks
// straight into RUNNING for the process it reports (instance_id), one claim
// per free slot; the executor renews each lease every third of it, delivers
// an abort or a lost lease to the resolver through its context (learnt from
// touch_task's answer: the API has no change feed) and writes the outcome,
// fenced. Every liveness interval it calls report_process; a stop request
// (in that answer or a claim's), or stop, drains it: nothing more is claimed,
// the tasks in hand finish, a last report says exited.
type goWorker struct {
	c          *client.Client
	kind       string
	instanceID string
	opts       goWorkerOptions
	handlers   map[string]worker.Resolver

	drainOnce sync.Once
	drain     chan struct{} // closed by stop

	mu     sync.Mutex
	inHand []cks.Task // oldest first
	errs   []error    // the executor's failures to write an outcome
}

// goWorkerOptions are a goWorker's settings; zero values take the
// scenarios' (the SDK suites' FAST settings).
type goWorkerOptions struct {
	Concurrency int           // tasks worked at once: 1
	Lease       time.Duration // each claim's lease: 6 s
	Liveness    time.Duration // between liveness reports: 1 s
	ClaimWait   time.Duration // how long one claim waits for work: 2 s
}

func newGoWorker(c *client.Client, kind string, o goWorkerOptions) *goWorker {
	o.Concurrency = max(o.Concurrency, 1)
	if o.Lease == 0 {
		o.Lease = 6 * time.Second
	}
	if o.Liveness == 0 {
		o.Liveness = time.Second
	}
	if o.ClaimWait == 0 {
		o.ClaimWait = 2 * time.Second
	}
	return &goWorker{c: c, kind: kind, instanceID: uuid.NewString(), opts: o,
		handlers: map[string]worker.Resolver{}, drain: make(chan struct{})}
}

// task registers r as the resolver of typ.
func (w *goWorker) task(typ string, r worker.Resolver) *goWorker {
	w.handlers[typ] = r
	return w
}

// name is the executor name its claims record (claimed_by), as the SDKs': KIND:INSTANCE_ID.
func (w *goWorker) name() string { return w.kind + ":" + w.instanceID }

// stop starts the drain; safe from any goroutine, more than once.
func (w *goWorker) stop() { w.drainOnce.Do(func() { close(w.drain) }) }

func (w *goWorker) draining() bool {
	select {
	case <-w.drain:
		return true
	default:
		return false
	}
}

// run works until drained; it returns the executor's failures to write an
// outcome, joined, or the first report's error. ctx ending interrupts the
// tasks in hand (failed retryably: the HTTP API has no give-back).
func (w *goWorker) run(ctx context.Context) error {
	if len(w.handlers) == 0 {
		return errors.New("goWorker: no handlers")
	}
	if err := w.report(ctx, false); err != nil {
		return err
	}
	ex := worker.New(w.c, worker.Options{Logger: slog.Default().With("worker", w.name())})
	idle := make(chan struct{})
	var live, slots sync.WaitGroup
	live.Go(func() {
		tick := time.NewTicker(w.opts.Liveness)
		defer tick.Stop()
		for {
			select {
			case <-idle:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				w.report(ctx, false) //nolint:errcheck // logged; the next one may pass
			}
		}
	})
	for range w.opts.Concurrency {
		slots.Go(func() { w.slot(ctx, ex) })
	}
	slots.Wait()
	close(idle)
	live.Wait()
	err := w.report(context.WithoutCancel(ctx), true)
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(append(w.errs, err)...)
}

// slot claims one task at a time and runs it, until drained.
func (w *goWorker) slot(ctx context.Context, ex *worker.Executor) {
	types := slices.Sorted(maps.Keys(w.handlers))
	for !w.draining() && ctx.Err() == nil {
		out, err := w.c.ClaimWith(ctx, cks.ClaimTasksInput{Worker: w.name(), Types: types, N: 1,
			LeaseS: w.opts.Lease.Seconds(), Running: true, WaitS: w.opts.ClaimWait.Seconds(), InstanceID: w.instanceID})
		if err != nil {
			slog.Warn("goWorker: claim failed; again in a second", "worker", w.name(), "err", err)
			select {
			case <-w.drain:
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if out.StopRequested {
			w.stop() // the hub ended the claim: this process was asked to stop
		}
		for _, c := range out.Tasks {
			w.hold(c.Task, true)
			_, err := ex.Run(ctx, c, w.handlers[c.Type])
			w.hold(c.Task, false)
			if err != nil {
				w.mu.Lock()
				w.errs = append(w.errs, err)
				w.mu.Unlock()
			}
		}
	}
}

// hold records t in hand (or no longer, with in false) for the liveness reports.
func (w *goWorker) hold(t cks.Task, in bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inHand = slices.DeleteFunc(w.inHand, func(h cks.Task) bool { return h.ID == t.ID })
	if in {
		w.inHand = append(w.inHand, t)
	}
}

// report is one report_process with the oldest task in hand; an answer
// that says stop_requested starts the drain.
func (w *goWorker) report(ctx context.Context, exited bool) error {
	in := cks.ReportProcessInput{ProcessKind: w.kind, InstanceID: w.instanceID, PID: os.Getpid(),
		LivenessIntervalS: w.opts.Liveness.Seconds(), TaskTypes: slices.Sorted(maps.Keys(w.handlers)), Exited: exited}
	if host, err := os.Hostname(); err == nil {
		in.Hostname = host
	}
	w.mu.Lock()
	if len(w.inHand) > 0 && !exited {
		in.CurrentTaskID, in.CurrentTaskType = w.inHand[0].ID, w.inHand[0].Type
	}
	w.mu.Unlock()
	p, err := w.c.ReportProcess(ctx, in)
	if err != nil {
		slog.Warn("goWorker: report_process failed", "worker", w.name(), "err", err)
		return err
	}
	if p.DesiredState == cks.DesiredStopRequested {
		w.stop()
	}
	return nil
}

// runningGo is a goWorker running in a goroutine of the test.
type runningGo struct {
	w      *goWorker
	cancel context.CancelFunc
	done   chan struct{} // closed once run has returned, with err set
	err    error
}

// startGoWorker runs w in a goroutine; at t's end w is drained and run must
// have returned without an error.
func startGoWorker(t testing.TB, w *goWorker) *runningGo {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningGo{w: w, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = w.run(ctx)
	}()
	t.Cleanup(func() {
		w.stop()
		if err := r.wait(); err != nil {
			t.Errorf("worker %s: %v", w.name(), err)
		}
	})
	return r
}

// wait waits for run to return and returns its error; past 90 s it
// interrupts the tasks in hand (ctx), waits for good and says so.
func (r *runningGo) wait() error {
	defer r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(90 * time.Second):
		r.cancel()
		<-r.done
		return fmt.Errorf("run did not return within 90 s of being waited for (then %v)", r.err)
	}
}

// goWorkerEnv, set in a test binary's environment, makes it a goWorker
// process (TestMain: goWorkerMain) instead of running tests: its value is
// a goWorkerSpec in JSON.
const goWorkerEnv = "CKS_TEST_GO_WORKER"

// goWorkerSpec is what a goWorker process runs: a worker of kind on the
// hub at URL, for one task type whose resolver holds each task until its
// attempt is aborted (Hold) or returns at once.
type goWorkerSpec struct {
	URL   string        `json:"url"`
	Token string        `json:"token"`
	Kind  string        `json:"kind"`
	Type  string        `json:"type"`
	Lease time.Duration `json:"lease"`
	Hold  bool          `json:"hold"`
}

// goWorkerMain runs the goWorker of the spec in goWorkerEnv until it is
// drained — SIGTERM or SIGINT, or a stop request — prints "run returned"
// and returns the exit status.
func goWorkerMain() int {
	var spec goWorkerSpec
	if err := json.Unmarshal([]byte(os.Getenv(goWorkerEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "goworker:", err)
		return 2
	}
	w := newGoWorker(client.New(spec.URL, spec.Token), spec.Kind, goWorkerOptions{Lease: spec.Lease})
	w.task(spec.Type, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		if spec.Hold {
			<-ctx.Done()
			return worker.Result{}, ctx.Err()
		}
		return worker.Result{Output: "done"}, nil
	})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		w.stop()
	}()
	if err := w.run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "goworker:", err)
		return 1
	}
	fmt.Println("run returned")
	return 0
}

// startGoWorkerProc starts this test binary as a goWorker process (goWorkerMain).
func startGoWorkerProc(t testing.TB, spec goWorkerSpec) *agentProc {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startProc(t, []string{goWorkerEnv + "=" + string(raw)}, self)
}
