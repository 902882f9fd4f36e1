package groupcommit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/groupcommit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// outcome is what one call's Do came back with.
type outcome struct {
	val   int
	err   string // the error's message; "" for none
	panic any
}

// ran is what Run of one batch saw.
type ran struct {
	ins []int // the calls' In, as Run returned
	gid int64 // the goroutine Run ran in
}

// TestGroup: the calls made while a batch runs queue and the next batch
// carries them, led by the first of them in its own goroutine; each caller
// gets its own outcome (a value, an error, a panic), a caller that gives
// up while queued withdraws, and nothing runs in the background.
//
// Each row starts its first Max calls one after another (0, 1, …): each
// finds a place free and runs alone in a batch that Run holds; then it
// makes the queued calls in order, each waiting until it is queued (or,
// made with an ended context, until it returned), cancels the callers of
// cancel, and releases the held batches. Run's outcome of call i is
// i*10, unless the row's result says otherwise.
func TestGroup(t *testing.T) {
	errFailed := errors.New("failed")
	for _, tc := range []struct {
		name          string
		max, maxBatch int
		queued        int   // calls made behind the held ones
		endedFirst    []int // calls made with a context that has ended
		cancel        []int // queued calls whose callers give up while they wait
		withdrawn     func(error) error
		join          bool // the held batches' Run takes in what queued (Join)
		// result is the outcome Run gives call in (nil: in*10).
		result func(in int) groupcommit.Result[int]
		// panicking and miscount name calls whose batch's Run panics, or
		// returns one result too few.
		panicking, miscount []int
		batches             [][]int // the batches Run saw, by their first call
		want                map[int]outcome
	}{
		{name: "alone", max: 1, maxBatch: 8, batches: [][]int{{0}}},
		{name: "the queued calls share the next batch", max: 1, maxBatch: 8, queued: 3,
			batches: [][]int{{0}, {1, 2, 3}}},
		{name: "MaxBatch cuts the queue into batches, in order", max: 1, maxBatch: 2, queued: 5,
			batches: [][]int{{0}, {1, 2}, {3, 4}, {5}}},
		{name: "Max batches run at once", max: 2, maxBatch: 2, queued: 3,
			batches: [][]int{{0}, {1}, {2, 3}, {4}}},
		{name: "one call's error fails no other", max: 1, maxBatch: 8, queued: 3,
			result: func(in int) groupcommit.Result[int] {
				if in == 2 {
					return groupcommit.Result[int]{Err: errFailed}
				}
				return groupcommit.Result[int]{Val: in * 10}
			},
			batches: [][]int{{0}, {1, 2, 3}}, want: map[int]outcome{2: {err: "failed"}}},
		{name: "a caller that gives up while queued withdraws", max: 1, maxBatch: 8, queued: 3, cancel: []int{2},
			batches: [][]int{{0}, {1, 3}}, want: map[int]outcome{2: {err: "context canceled"}}},
		{name: "a caller that gave up before Do never queues", max: 1, maxBatch: 8, queued: 3, endedFirst: []int{2},
			batches: [][]int{{0}, {1, 3}}, want: map[int]outcome{2: {err: "context canceled"}}},
		{name: "Withdrawn words a withdrawal", max: 1, maxBatch: 8, queued: 3, endedFirst: []int{1}, cancel: []int{3},
			withdrawn: func(err error) error { return fmt.Errorf("begin: %w", err) },
			batches:   [][]int{{0}, {2}}, want: map[int]outcome{1: {err: "begin: context canceled"}, 3: {err: "begin: context canceled"}}},
		{name: "Join takes what queued into the running batch", max: 1, maxBatch: 3, queued: 4, join: true,
			batches: [][]int{{0, 1, 2}, {3, 4}}},
		{name: "a call's own panic is its caller's alone", max: 1, maxBatch: 8, queued: 3,
			result: func(in int) groupcommit.Result[int] {
				if in == 2 {
					return groupcommit.Result[int]{Panic: "call 2"}
				}
				return groupcommit.Result[int]{Val: in * 10}
			},
			batches: [][]int{{0}, {1, 2, 3}}, want: map[int]outcome{2: {panic: "call 2"}}},
		{name: "a panic of Run is its batch's callers', and the next batch runs", max: 1, maxBatch: 2, queued: 4,
			panicking: []int{1}, batches: [][]int{{0}, {1, 2}, {3, 4}},
			want: map[int]outcome{1: {panic: "run 1"}, 2: {panic: "run 1"}}},
		{name: "a panic of a lone leader's Run hands the queue on", max: 1, maxBatch: 8, queued: 2,
			panicking: []int{0}, batches: [][]int{{0}, {1, 2}}, want: map[int]outcome{0: {panic: "run 0"}}},
		{name: "Run that miscounts its results panics its batch's callers", max: 1, maxBatch: 8, queued: 2,
			miscount: []int{1}, batches: [][]int{{0}, {1, 2}},
			want: map[int]outcome{1: {panic: "groupcommit: Run returned 1 results for 2 calls"},
				2: {panic: "groupcommit: Run returned 1 results for 2 calls"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			var (
				mu      sync.Mutex
				runs    []ran
				arrived = make(chan struct{}, tc.max)
				release = make(chan struct{})
			)
			g := &groupcommit.Group[int, int]{Max: tc.max, MaxBatch: tc.maxBatch, Withdrawn: tc.withdrawn}
			g.Run = func(ctx context.Context, b *groupcommit.Batch[int, int]) []groupcommit.Result[int] {
				if first := b.Calls[0].In; first < tc.max {
					arrived <- struct{}{}
					<-release
					if tc.join {
						b.Join()
					}
				}
				ins := make([]int, len(b.Calls))
				for i, c := range b.Calls {
					ins[i] = c.In
				}
				mu.Lock()
				runs = append(runs, ran{ins: ins, gid: goid()})
				mu.Unlock()
				out := make([]groupcommit.Result[int], len(b.Calls))
				for i, in := range ins {
					if slices.Contains(tc.panicking, in) {
						panic(fmt.Sprint("run ", ins[0]))
					}
					out[i] = groupcommit.Result[int]{Val: in * 10}
					if tc.result != nil {
						out[i] = tc.result(in)
					}
				}
				if slices.ContainsFunc(ins, func(in int) bool { return slices.Contains(tc.miscount, in) }) {
					out = out[1:]
				}
				return out
			}
			n := tc.max + tc.queued
			gids := make([]int64, n)
			results := make([]chan outcome, n)
			cancels := make([]context.CancelFunc, n)
			call := func(i int) {
				ctx, cancel := context.WithCancel(context.Background())
				cancels[i] = cancel
				if slices.Contains(tc.endedFirst, i) {
					cancel()
				}
				results[i] = make(chan outcome, 1)
				started := make(chan struct{})
				go func() {
					gids[i] = goid()
					close(started)
					var o outcome
					defer func() {
						o.panic = recover()
						results[i] <- o
					}()
					v, err := g.Do(ctx, i)
					o.val = v
					if err != nil {
						o.err = err.Error()
					}
				}()
				<-started
			}
			defer func() {
				for _, cancel := range cancels {
					if cancel != nil {
						cancel()
					}
				}
			}()
			for i := range tc.max {
				call(i)
				<-arrived // it runs, alone, held
			}
			got := make([]outcome, n)
			queued := 0
			for i := tc.max; i < n; i++ {
				call(i)
				if slices.Contains(tc.endedFirst, i) {
					got[i] = <-results[i] // at once, never queued
					continue
				}
				queued++
				waitQueued(t, g, queued)
			}
			for _, i := range tc.cancel {
				cancels[i]()
				got[i] = <-results[i] // while the held batches still run
			}
			waitQueued(t, g, queued-len(tc.cancel))
			close(release)
			for i := range n {
				if !slices.Contains(tc.endedFirst, i) && !slices.Contains(tc.cancel, i) {
					got[i] = <-results[i]
				}
			}
			for i := range n {
				want, ok := tc.want[i]
				if !ok {
					want = outcome{val: i * 10}
				}
				if got[i] != want {
					t.Errorf("call %d: %+v, want %+v", i, got[i], want)
				}
			}
			slices.SortFunc(runs, func(a, b ran) int { return a.ins[0] - b.ins[0] })
			var batches [][]int
			for _, r := range runs {
				batches = append(batches, r.ins)
				// The first call of a batch runs it, in its own goroutine.
				if r.gid != gids[r.ins[0]] {
					t.Errorf("batch %v ran in goroutine %d, not in its first caller's (%d)", r.ins, r.gid, gids[r.ins[0]])
				}
			}
			if !slices.EqualFunc(batches, tc.batches, slices.Equal) {
				t.Errorf("batches %v, want %v", batches, tc.batches)
			}
			if q := g.Queued(); q != 0 {
				t.Errorf("%d calls still queued", q)
			}
		})
	}
}

// TestGroupContexts: Run's context ends only when every caller of its
// batch has given up — one that gives up while its batch runs still gets
// the batch's outcome — and a batch of one runs under its caller's own
// context.
func TestGroupContexts(t *testing.T) {
	defer goleak.VerifyNone(t)
	type seen struct {
		ctx      context.Context
		calls    []*groupcommit.Call[int, int]
		proceed  chan struct{}
		finished chan struct{}
	}
	batches := make(chan *seen)
	g := &groupcommit.Group[int, int]{Max: 1, MaxBatch: 8}
	g.Run = func(ctx context.Context, b *groupcommit.Batch[int, int]) []groupcommit.Result[int] {
		s := &seen{ctx: ctx, calls: b.Calls, proceed: make(chan struct{})}
		batches <- s
		<-s.proceed
		out := make([]groupcommit.Result[int], len(b.Calls))
		for i, c := range b.Calls {
			out[i].Val = c.In
			out[i].Err = ctx.Err()
		}
		return out
	}
	type res struct {
		val int
		err error
	}
	do := func(ctx context.Context, in int) <-chan res {
		ch := make(chan res, 1)
		go func() { v, err := g.Do(ctx, in); ch <- res{v, err} }()
		return ch
	}
	ctx0, cancel0 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel0()
	r0 := do(ctx0, 0)
	first := <-batches
	if first.ctx != ctx0 {
		t.Error("a batch of one call does not run under its caller's context")
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel1()
	defer cancel2()
	r1 := do(ctx1, 1)
	waitQueued(t, g, 1)
	r2 := do(ctx2, 2)
	waitQueued(t, g, 2)
	close(first.proceed)
	if r := <-r0; r.val != 0 || r.err != nil {
		t.Errorf("call 0: %+v", r)
	}
	second := <-batches
	if len(second.calls) != 2 {
		t.Fatalf("second batch of %d calls, want 2", len(second.calls))
	}
	cancel1()
	<-second.calls[0].Context().Done()
	if err := second.ctx.Err(); err != nil {
		t.Errorf("Run's context ended (%v) with one of its two callers still waiting", err)
	}
	cancel2()
	select {
	case <-second.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Run's context did not end when the last of its callers gave up")
	}
	close(second.proceed)
	// Both callers gave up after their batch had taken them: each gets
	// the batch's outcome, not a withdrawal.
	for i, r := range []res{<-r1, <-r2} {
		if r.val != i+1 || !errors.Is(r.err, context.Canceled) {
			t.Errorf("call %d: %+v, want its value and Run's context's error", i+1, r)
		}
	}
}

// TestGroupLeaderReturns: a batch's callers return once it has ended, not
// once the batch its leader handed the queue on to has.
func TestGroupLeaderReturns(t *testing.T) {
	defer goleak.VerifyNone(t)
	holds := make(chan chan struct{})
	g := &groupcommit.Group[int, int]{Max: 1, MaxBatch: 8}
	g.Run = func(ctx context.Context, b *groupcommit.Batch[int, int]) []groupcommit.Result[int] {
		hold := make(chan struct{})
		holds <- hold
		<-hold
		return make([]groupcommit.Result[int], len(b.Calls))
	}
	do := func(in int) <-chan error {
		done := make(chan error, 1)
		go func() { _, err := g.Do(context.Background(), in); done <- err }()
		return done
	}
	done0 := do(0)
	hold0 := <-holds
	done1 := do(1)
	waitQueued(t, g, 1)
	close(hold0)
	hold1 := <-holds // call 1 leads the next batch, held
	select {
	case err := <-done0:
		if err != nil {
			t.Errorf("call 0: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("call 0 waits for the batch it handed on")
	}
	close(hold1)
	if err := <-done1; err != nil {
		t.Errorf("call 1: %v", err)
	}
}

// waitQueued waits until n calls of g are queued.
func waitQueued[In, Out any](t testing.TB, g *groupcommit.Group[In, Out], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.Queued() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", g.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// goid returns the id of the calling goroutine.
func goid() int64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(bytes.TrimPrefix(buf, []byte("goroutine ")))
	id, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		panic("goid: " + err.Error())
	}
	return id
}

// TestGroupSharedContexts: Run's context for a batch whose callers share
// contexts ends when the last distinct one has ended, and never while a
// caller's context cannot end (context.Background) — and the watch over
// them ends with the batch (goleak).
func TestGroupSharedContexts(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		name string
		// ctxs are the contexts of the batch's calls, by name: "-" is
		// context.Background, any other one cancellable, cancelled in
		// the order of cancel.
		ctxs   []string
		cancel []string
		ends   bool
	}{
		{name: "one context shared", ctxs: []string{"a", "a", "a"}, cancel: []string{"a"}, ends: true},
		{name: "shared, then another", ctxs: []string{"a", "a", "b"}, cancel: []string{"a", "b"}, ends: true},
		{name: "the last cancelled first", ctxs: []string{"a", "b", "a"}, cancel: []string{"b", "a"}, ends: true},
		{name: "not all cancelled", ctxs: []string{"a", "a", "b"}, cancel: []string{"a"}},
		{name: "one cannot end", ctxs: []string{"a", "-", "b"}, cancel: []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				ctx     context.Context
				proceed chan struct{}
			}
			batches := make(chan seen)
			g := &groupcommit.Group[int, int]{Max: 1, MaxBatch: 8}
			g.Run = func(ctx context.Context, b *groupcommit.Batch[int, int]) []groupcommit.Result[int] {
				s := seen{ctx: ctx, proceed: make(chan struct{})}
				batches <- s
				<-s.proceed
				return make([]groupcommit.Result[int], len(b.Calls))
			}
			var wg sync.WaitGroup
			wg.Go(func() { g.Do(context.Background(), 0) }) //nolint:errcheck
			first := <-batches
			ctxs, cancels := map[string]context.Context{"-": context.Background()}, map[string]context.CancelFunc{}
			for i, name := range tc.ctxs {
				if _, ok := ctxs[name]; !ok {
					ctxs[name], cancels[name] = context.WithCancel(context.Background())
					defer cancels[name]()
				}
				wg.Go(func() { g.Do(ctxs[name], i+1) }) //nolint:errcheck
				waitQueued(t, g, i+1)
			}
			close(first.proceed)
			second := <-batches
			for _, name := range tc.cancel {
				cancels[name]()
			}
			if tc.ends {
				select {
				case <-second.ctx.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("Run's context did not end when the last of its callers' contexts did")
				}
			} else if err := second.ctx.Err(); err != nil {
				t.Errorf("Run's context ended (%v) with a caller's context still live", err)
			}
			close(second.proceed)
			wg.Wait()
		})
	}
}
