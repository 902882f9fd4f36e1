package lifecycle_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/lifecycle"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every wait; reaching it means the awaited thing will
// never happen.
const waitLimit = 10 * time.Second

func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// probe records what a Base reports through its hooks.
type probe struct {
	mu      sync.Mutex
	ops     []string // Locked calls
	changes []string // Changed calls, "op:running"
	live    atomic.Int64
	maxLive atomic.Int64
}

func (p *probe) config(run func(ctx context.Context)) lifecycle.Config {
	return lifecycle.Config{
		Run: func(ctx context.Context) {
			n := p.live.Add(1)
			defer p.live.Add(-1)
			for m := p.maxLive.Load(); n > m && !p.maxLive.CompareAndSwap(m, n); m = p.maxLive.Load() {
			}
			run(ctx)
		},
		Locked: func(op lifecycle.Op) {
			p.mu.Lock()
			p.ops = append(p.ops, string(op))
			p.mu.Unlock()
		},
		Changed: func(op lifecycle.Op, running bool) {
			p.mu.Lock()
			s := string(op) + ":stopped"
			if running {
				s = string(op) + ":running"
			}
			p.changes = append(p.changes, s)
			p.mu.Unlock()
		},
	}
}

func (p *probe) snapshot() (ops, changes []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ops), slices.Clone(p.changes)
}

// untilDone is a loop that waits for its context and reports its cause.
func untilDone(causes chan<- error) func(ctx context.Context) {
	return func(ctx context.Context) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
	}
}

type ctxKey struct{}

// TestStartStop: Start runs the loop with Start's values but not its
// cancellation, Started and Stopped tell the phases, a second Start is a
// no-op, Stop cancels with ErrStopped and returns once the loop exited, and
// a second Stop is a no-op.
func TestStartStop(t *testing.T) {
	p := &probe{}
	causes := make(chan error, 1)
	values := make(chan any, 1)
	b := lifecycle.New(p.config(func(ctx context.Context) {
		values <- ctx.Value(ctxKey{})
		untilDone(causes)(ctx)
	}))
	started, stopped := b.Started(), b.Stopped() // taken before Start
	if err := b.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "Started")
	if got := recv(t, values, "the loop"); got != "v" {
		t.Fatalf("loop context value %v, want v", got)
	}
	if err := b.Start(ctx); err != nil || !b.Running() {
		t.Fatalf("second Start = %v, running %v", err, b.Running())
	}
	cancel() // Start's context ending does not stop the loop
	select {
	case <-stopped:
		t.Fatal("the loop ended with Start's context")
	default:
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Stop returned before the loop exited")
	}
	if cause := recv(t, causes, "the cause"); !errors.Is(cause, lifecycle.ErrStopped) {
		t.Fatalf("cause %v, want ErrStopped", cause)
	}
	if err := b.Stop(context.Background()); err != nil || b.Running() || p.live.Load() != 0 {
		t.Fatalf("second Stop = %v, running %v, live %d", err, b.Running(), p.live.Load())
	}
	ops, changes := p.snapshot()
	if want := []string{"stop", "start", "start", "stop", "stop"}; !slices.Equal(ops, want) {
		t.Errorf("ops %v, want %v", ops, want)
	}
	if want := []string{"start:running", "stop:stopped"}; !slices.Equal(changes, want) {
		t.Errorf("changes %v, want %v", changes, want)
	}
	select {
	case <-b.Started():
		t.Fatal("Started is closed after the run ended")
	default:
	}
}

// TestInitFailure: an Init error is Start's, and nothing starts.
func TestInitFailure(t *testing.T) {
	p := &probe{}
	boom := errors.New("store unreachable")
	cfg := p.config(func(context.Context) { t.Error("the loop ran") })
	cfg.Init = func(context.Context) error { return boom }
	b := lifecycle.New(cfg)
	if err := b.Start(context.Background()); !errors.Is(err, boom) || b.Running() {
		t.Fatalf("Start = %v, running %v", err, b.Running())
	}
	if _, changes := p.snapshot(); len(changes) != 0 {
		t.Fatalf("changes %v after a failed Init", changes)
	}
}

// TestLoopThatEnds: a loop that returns by itself (or panics) ends the run
// as a stop would: it reads stopped, the panic goes to OnPanic, and the
// next Start starts a new run.
func TestLoopThatEnds(t *testing.T) {
	p := &probe{}
	var calls atomic.Int32
	panics := make(chan any, 1)
	cfg := p.config(func(context.Context) {
		if calls.Add(1) == 2 {
			panic("kaboom")
		}
	})
	cfg.OnPanic = func(v any, stack []byte) {
		if len(stack) == 0 {
			t.Error("no stack")
		}
		panics <- v
	}
	b := lifecycle.New(cfg)
	for i := range 3 {
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		recv(t, b.Stopped(), "the loop to end by itself") // this run's: Start made it
		if i == 1 {
			if v := recv(t, panics, "OnPanic"); v != "kaboom" {
				t.Fatalf("OnPanic(%v)", v)
			}
		}
	}
	if err := b.Stop(context.Background()); err != nil || b.Running() {
		t.Fatalf("Stop = %v, running %v", err, b.Running())
	}
	if _, changes := p.snapshot(); !slices.Equal(changes, []string{"start:running", "exit:stopped", "start:running",
		"exit:stopped", "start:running", "exit:stopped"}) {
		t.Fatalf("changes %v", changes)
	}
}

// TestAbandonedStop: a Stop whose context ends while the loop ignores
// cancellation returns the context's error with the loop marked stopped;
// a Start waits for that loop to exit (bounded by its own context), so
// there is never more than one.
func TestAbandonedStop(t *testing.T) {
	p := &probe{}
	release := make(chan struct{})
	inLoop := make(chan struct{}, 2)
	b := lifecycle.New(p.config(func(ctx context.Context) {
		inLoop <- struct{}{}
		<-ctx.Done()
		<-release // ignores cancellation for a while
	}))
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	recv(t, inLoop, "the loop")
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := b.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) || b.Running() {
		t.Fatalf("Stop = %v, running %v", err, b.Running())
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	if err := b.Start(ctx2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start while the old loop exits = %v, want DeadlineExceeded", err)
	}
	close(release)
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	recv(t, inLoop, "the second loop")
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := p.maxLive.Load(); m != 1 {
		t.Fatalf("%d loops alive at once", m)
	}
}

// TestStopSelf: the loop stops itself unless a Start took the lock after it
// read Starts; a self-stop racing a Stop that holds the lock does not
// deadlock.
func TestStopSelf(t *testing.T) {
	t.Run("stops", func(t *testing.T) {
		p := &probe{}
		var b *lifecycle.Base
		result := make(chan bool, 1)
		b = lifecycle.New(p.config(func(ctx context.Context) {
			result <- b.StopSelf(ctx, b.Starts())
			<-ctx.Done()
		}))
		stopped := b.Stopped()
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !recv(t, result, "StopSelf") {
			t.Fatal("StopSelf = false")
		}
		recv(t, stopped, "the self-stopped loop to exit")
		if b.Running() {
			t.Fatal("running after a self-stop")
		}
		if err := b.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ops, changes := p.snapshot(); !slices.Equal(ops, []string{"start", "selfstop", "stop"}) ||
			!slices.Equal(changes, []string{"start:running", "selfstop:stopped"}) {
			t.Fatalf("ops %v, changes %v", ops, changes)
		}
	})
	t.Run("a later start wins", func(t *testing.T) {
		p := &probe{}
		var b *lifecycle.Base
		read, decide := make(chan struct{}), make(chan struct{})
		result := make(chan bool, 1)
		b = lifecycle.New(p.config(func(ctx context.Context) {
			since := b.Starts()
			close(read)
			<-decide
			result <- b.StopSelf(ctx, since)
			<-ctx.Done()
		}))
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		recv(t, read, "the loop's read")
		if err := b.Start(context.Background()); err != nil { // no-op, but it took the lock
			t.Fatal(err)
		}
		close(decide)
		if recv(t, result, "StopSelf") || !b.Running() {
			t.Fatal("a stale self-stop won over a later Start")
		}
		if err := b.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("racing stop", func(t *testing.T) {
		p := &probe{}
		var b *lifecycle.Base
		inLoop, release := make(chan struct{}), make(chan struct{})
		stopLocked := make(chan struct{})
		var once sync.Once
		result := make(chan bool, 1)
		cfg := p.config(func(ctx context.Context) {
			since := b.Starts()
			close(inLoop)
			<-release // Stop holds the lock now, waiting for this goroutine
			result <- b.StopSelf(ctx, since)
		})
		record := cfg.Locked
		cfg.Locked = func(op lifecycle.Op) {
			record(op)
			if op == lifecycle.OpStop {
				once.Do(func() { close(stopLocked) })
			}
		}
		b = lifecycle.New(cfg)
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		recv(t, inLoop, "the loop")
		stopErr := make(chan error, 1)
		go func() { stopErr <- b.Stop(context.Background()) }()
		recv(t, stopLocked, "Stop to take the lock")
		close(release)
		if err := recv(t, stopErr, "Stop"); err != nil {
			t.Fatal(err)
		}
		if !recv(t, result, "StopSelf") {
			t.Fatal("StopSelf under a Stop = false")
		}
		if ops, _ := p.snapshot(); !slices.Equal(ops, []string{"start", "stop"}) {
			t.Fatalf("ops %v: the loop must not have taken the lock", ops)
		}
	})
}

// TestConcurrentStartStop: concurrent random Starts and Stops never have
// two loops alive, and the state afterwards is that of the last operation
// to take the lock.
func TestConcurrentStartStop(t *testing.T) {
	p := &probe{}
	b := lifecycle.New(p.config(func(ctx context.Context) { <-ctx.Done() }))
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for range 500 {
		start := rand.IntN(2) == 0
		wg.Go(func() {
			<-begin
			var err error
			if start {
				err = b.Start(context.Background())
			} else {
				err = b.Stop(context.Background())
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	close(begin)
	wg.Wait()
	ops, changes := p.snapshot()
	last := ops[len(ops)-1]
	if b.Running() != (last == "start") {
		t.Fatalf("running %v after a last %q", b.Running(), last)
	}
	if len(changes) > 0 && changes[len(changes)-1] != map[bool]string{true: "start:running", false: "stop:stopped"}[last == "start"] {
		t.Fatalf("last change %q after a last %q", changes[len(changes)-1], last)
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := p.maxLive.Load(); m > 1 {
		t.Fatalf("%d loops alive at once", m)
	}
}
