package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// ExactlyOnceTasks is the number of tasks of the exactly-once test (a tenth
// under -short); CKS_TEST_EXACTLY_ONCE_TASKS sets another for a soak run.
// Sixteen claimers contend for the whole run at this size: at 10,000 the
// test was a third of CI's time under -race and proved nothing more.
const ExactlyOnceTasks = 3_000

// ExactlyOnceWorkers is the number of concurrent claimers, each on its own
// store handle.
const ExactlyOnceWorkers = 16

// exactlyOnce is the shared state of one run of testTaskExactlyOnce.
type exactlyOnce struct {
	ctx       context.Context
	clk       *clock.Fake
	remaining atomic.Int64
	progress  atomic.Int64 // completions since the last tick
	idle      atomic.Int64
	ticks     atomic.Int64
	lost      atomic.Int64 // ErrLeaseLost seen by executors
	reclaimed atomic.Int64
	kick      chan struct{}
	done      chan struct{}
	doneOnce  sync.Once

	mu        sync.Mutex
	tick      chan struct{} // closed at the next reaper tick
	completed map[int64][]string
	errs      []error
}

func (x *exactlyOnce) nextTick() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.tick
}

func (x *exactlyOnce) fail(err error) {
	x.mu.Lock()
	x.errs = append(x.errs, err)
	x.mu.Unlock()
	x.finish()
}

func (x *exactlyOnce) finish() { x.doneOnce.Do(func() { close(x.done) }) }

func (x *exactlyOnce) kickReaper() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// testTaskExactlyOnce: ExactlyOnceWorkers claimers, each on its own store
// handle (its own connections), work ExactlyOnceTasks tasks while a reaper
// moves a shared fake clock and reclaims expired leases. Some executors stall
// (zombies) and come back after their lease may have been reclaimed. Every
// task must end COMPLETED exactly once, by one executor, none lost.
func testTaskExactlyOnce(t *testing.T, open backendtest.Opener) {
	total := ExactlyOnceTasks
	if v, err := strconv.Atoi(os.Getenv("CKS_TEST_EXACTLY_ONCE_TASKS")); err == nil && v > 0 {
		total = v
	} else if testing.Short() {
		total /= 10
	}
	c, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	x := &exactlyOnce{ctx: c, clk: clock.NewFake(backendtest.T0), kick: make(chan struct{}, 1), done: make(chan struct{}),
		tick: make(chan struct{}), completed: map[int64][]string{}}
	x.remaining.Store(int64(total))
	seed := open(t, driver.WithClock(x.clk))
	enqueueMany(t, x.ctx, open, x.clk, total)

	handles := make([]*backend.Backend, ExactlyOnceWorkers)
	for w := range handles {
		handles[w] = open(t, driver.WithClock(x.clk))
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w, s := range handles {
		wg.Go(func() { x.work(s, w) })
	}
	wg.Go(func() { x.reap(seed) })
	wg.Wait()
	for _, err := range x.errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	// Every task COMPLETED, by exactly one successful Complete, whose result it holds.
	seen := 0
	for cursor := int64(0); ; {
		page, err := seed.Tasks.ListTasks(ctx(t), cks.TaskFilter{After: cursor, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range page.Tasks {
			seen++
			wins := x.completed[task.ID]
			if task.State != cks.TaskCompleted || len(wins) != 1 || task.Result != wins[0] {
				t.Errorf("task %d: %s, result %q, successful completions %v", task.ID, task.State, task.Result, wins)
			}
		}
		if page.Next == 0 {
			break
		}
		cursor = page.Next
	}
	if seen != total || len(x.completed) != total {
		t.Errorf("%d tasks listed, %d completed; want %d", seen, len(x.completed), total)
	}
	// And the event log agrees, on a sample.
	for id := int64(1); id <= int64(total); id += int64(total / 50) {
		n := 0
		for _, e := range backendtest.MustGet(t, seed, id).Events {
			if e.To == cks.TaskCompleted {
				n++
			}
		}
		if n != 1 {
			t.Errorf("task %d has %d COMPLETED events", id, n)
		}
	}
	t.Logf("%s: %d tasks, %d reaper ticks, %d reclaimed leases, %d ErrLeaseLost seen by executors",
		time.Since(start).Round(time.Millisecond), total, x.ticks.Load(), x.reclaimed.Load(), x.lost.Load())
	if total >= 1000 && (x.reclaimed.Load() == 0 || x.lost.Load() == 0) {
		t.Errorf("the run exercised no reclaim (%d) or no lost lease (%d)", x.reclaimed.Load(), x.lost.Load())
	}
}

// enqueueMany enqueues n tasks (max attempts at the maximum, so that no task
// is dead-lettered by the churn) from several handles at once.
func enqueueMany(t testing.TB, c context.Context, open backendtest.Opener, clk clock.Clock, n int) {
	t.Helper()
	const feeders = 4
	var wg sync.WaitGroup
	errs := make(chan error, feeders)
	handles := make([]*backend.Backend, feeders)
	for f := range feeders {
		handles[f] = open(t, driver.WithClock(clk))
	}
	for f, s := range handles {
		wg.Go(func() {
			for i := f; i < n; i += feeders {
				_, _, err := s.Tasks.Enqueue(c, cks.NewTask{Type: "work", Title: fmt.Sprint(i),
					Priority: i % 3, MaxAttempts: cks.MaxMaxAttempts})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("enqueue: %v", err)
	}
}

type zombie struct {
	task  cks.ClaimedTask
	until int64 // the tick after which it wakes up
}

func (x *exactlyOnce) work(s *backend.Backend, w int) {
	name := fmt.Sprintf("w%02d", w)
	rng := rand.New(rand.NewPCG(uint64(w), 42))
	var zombies []zombie
	complete := func(task cks.ClaimedTask) bool {
		result := name + "/" + task.LeaseToken
		_, err := s.Tasks.Complete(x.ctx, task.ID, task.LeaseToken, false, result)
		switch {
		case errors.Is(err, cks.ErrLeaseLost):
			x.lost.Add(1)
			return true
		case err != nil:
			x.fail(fmt.Errorf("%s: complete %d: %w", name, task.ID, err))
			return false
		}
		x.mu.Lock()
		x.completed[task.ID] = append(x.completed[task.ID], result)
		x.mu.Unlock()
		if x.progress.Add(1)%100 == 0 {
			x.kickReaper()
		}
		if x.remaining.Add(-1) == 0 {
			x.finish()
		}
		return true
	}
	wake := func(all bool) bool {
		kept := zombies[:0]
		for _, z := range zombies {
			if all || z.until <= x.ticks.Load() {
				if !complete(z.task) {
					return false
				}
				continue
			}
			kept = append(kept, z)
		}
		zombies = kept
		return true
	}
	for {
		select {
		case <-x.done:
			return
		default:
		}
		tick := x.nextTick()
		ts, err := s.Tasks.Claim(x.ctx, ledger.ClaimParams{Worker: name, Types: []string{"work"}, N: 1 + rng.IntN(8), Lease: backendtest.Lease})
		if err != nil {
			x.fail(fmt.Errorf("%s: claim: %w", name, err))
			return
		}
		for _, task := range ts {
			if rng.IntN(40) == 0 { // stall: come back after 1-3 reaper ticks
				zombies = append(zombies, zombie{task, x.ticks.Load() + 1 + int64(rng.IntN(3))})
				continue
			}
			if !complete(task) {
				return
			}
		}
		if !wake(false) {
			return
		}
		if len(ts) > 0 {
			continue
		}
		x.idle.Add(1)
		x.kickReaper()
		select {
		case <-tick:
		case <-x.done:
		}
		x.idle.Add(-1)
	}
}

// reap advances the clock by half a lease and reclaims expired leases when
// every worker is idle or enough work was completed since the last tick.
func (x *exactlyOnce) reap(s *backend.Backend) {
	for {
		select {
		case <-x.done:
			return
		case <-x.kick:
		}
		if x.idle.Load() < ExactlyOnceWorkers && x.progress.Load() < 200 {
			continue
		}
		x.progress.Store(0)
		x.clk.Advance(backendtest.Lease / 2)
		n, err := s.Tasks.ReclaimExpired(x.ctx, x.clk.Now())
		if err != nil {
			x.fail(fmt.Errorf("reclaim: %w", err))
			return
		}
		x.reclaimed.Add(int64(n))
		x.ticks.Add(1)
		x.mu.Lock()
		close(x.tick)
		x.tick = make(chan struct{})
		x.mu.Unlock()
	}
}
