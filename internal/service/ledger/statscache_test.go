package ledger_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTaskStatsCache (both backends): task_stats answers every caller of a
// window from one read for ledger.StatsTTL of the service's clock —
// concurrent callers share the read in flight, later ones get its answer
// (a task enqueued meanwhile shows only once the answer has expired; a
// window by 15 minutes is kept 15 times as long) — each window has its
// own, and a failed read is not kept.
func TestTaskStatsCache(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		var (
			reads   atomic.Int64
			started = make(chan struct{}, 100)
			waiters = make(chan struct{}, 100)
			gate    chan struct{} // when set, each read waits for it to close
			fail    error
			mu      sync.Mutex
		)
		ledger.WrapStatsRead(s.Tasks, func(read func(context.Context, ledger.StatsWindow) (cks.TaskStats, error)) func(context.Context, ledger.StatsWindow) (cks.TaskStats, error) {
			return func(ctx context.Context, w ledger.StatsWindow) (cks.TaskStats, error) {
				reads.Add(1)
				started <- struct{}{}
				mu.Lock()
				g, err := gate, fail
				mu.Unlock()
				if g != nil {
					<-g
				}
				if err != nil {
					return cks.TaskStats{}, err
				}
				return read(ctx, w)
			}
		}, func() { waiters <- struct{}{} })
		openOf := func(st cks.TaskStats) int { return st.Minutes[len(st.Minutes)-1].Depth[cks.TaskOpen] }
		stats := func(minutes int) cks.TaskStats {
			t.Helper()
			st, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: minutes})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		enqueue := func() {
			t.Helper()
			if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "a"}); err != nil {
				t.Fatal(err)
			}
		}

		// Eight callers at once: one read, every one the same answer.
		enqueue()
		mu.Lock()
		gate = make(chan struct{})
		mu.Unlock()
		const callers = 8
		answers := make(chan cks.TaskStats, callers)
		go func() { answers <- stats(5) }()
		deadline := time.After(10 * time.Second)
		select {
		case <-started:
		case <-deadline:
			t.Fatal("the first caller's read did not start")
		}
		for range callers - 1 {
			go func() { answers <- stats(5) }()
		}
		for range callers - 1 {
			select {
			case <-waiters:
			case <-deadline:
				t.Fatal("the other callers did not wait for the read in flight")
			}
		}
		mu.Lock()
		close(gate)
		gate = nil
		mu.Unlock()
		for range callers {
			if st := <-answers; openOf(st) != 1 {
				t.Errorf("OPEN depth %d, want 1", openOf(st))
			}
		}
		if n := reads.Load(); n != 1 {
			t.Fatalf("%d reads for %d concurrent callers, want 1", n, callers)
		}

		// Within StatsTTL the kept answer, though a task was enqueued;
		// a caller may change its copy without changing the next one's.
		enqueue()
		c.Advance(ledger.StatsTTL - time.Millisecond)
		st := stats(5)
		if openOf(st) != 1 || reads.Load() != 1 {
			t.Fatalf("within the TTL: OPEN depth %d after %d reads, want the kept 1 after 1", openOf(st), reads.Load())
		}
		st.Minutes[len(st.Minutes)-1].Depth[cks.TaskOpen] = 99
		if openOf(stats(5)) != 1 {
			t.Fatal("a caller's change of its answer reached the kept one")
		}
		// Another window has its own read.
		if openOf(stats(6)) != 2 || reads.Load() != 2 {
			t.Fatalf("window 6: OPEN depth %d after %d reads, want 2 after 2", openOf(stats(6)), reads.Load())
		}
		// Expired: read again.
		c.Advance(time.Millisecond)
		if st := stats(5); openOf(st) != 2 || reads.Load() != 3 {
			t.Fatalf("after the TTL: OPEN depth %d after %d reads, want 2 after 3", openOf(st), reads.Load())
		}

		// A failed read is shared by its callers but not kept.
		c.Advance(ledger.StatsTTL)
		boom := errors.New("boom")
		mu.Lock()
		fail = boom
		mu.Unlock()
		if _, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: 5}); !errors.Is(err, boom) {
			t.Fatalf("failed read: %v, want %v", err, boom)
		}
		mu.Lock()
		fail = nil
		mu.Unlock()
		if st := stats(5); openOf(st) != 2 || reads.Load() != 5 {
			t.Fatalf("after a failed read: OPEN depth %d after %d reads, want 2 after 5", openOf(st), reads.Load())
		}
		// A window by 15 minutes is kept 15 times as long.
		c.Advance(ledger.StatsTTL)
		wide := func() cks.TaskStats {
			t.Helper()
			st, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: 60, StepMinutes: 15})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		reads.Store(0)
		wide()
		enqueue()
		c.Advance(15*ledger.StatsTTL - time.Millisecond)
		if st := wide(); openOf(st) != 2 || reads.Load() != 1 {
			t.Fatalf("by 15 minutes within 15 TTLs: OPEN depth %d after %d reads, want the kept 2 after 1", openOf(st), reads.Load())
		}
		c.Advance(time.Millisecond)
		if st := wide(); openOf(st) != 3 || reads.Load() != 2 {
			t.Fatalf("by 15 minutes after 15 TTLs: OPEN depth %d after %d reads, want 3 after 2", openOf(st), reads.Load())
		}

		// Bad input is refused before the cache, naming the field.
		var fe *cks.FieldError
		if _, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: -1}); !errors.As(err, &fe) || fe.Field != "minutes" {
			t.Fatalf("minutes -1: %v", err)
		}
	})
}
