package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTaskStats: task_stats' minutes count the completions and failures
// of each minute, the queue depth at each minute's end (walked back from
// today's counts, so a task enqueued before the window counts too) and
// the claims' latencies from OPEN to CLAIMED; a window out of range is a
// FieldError naming minutes. Both backends.
func TestTaskStats(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0.Add(-10 * time.Minute))
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		enqueue := func(typ string, maxAttempts int) {
			t.Helper()
			if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, MaxAttempts: maxAttempts}); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(typ string) cks.ClaimedTask {
			t.Helper()
			got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Hour})
			if err != nil || len(got) != 1 {
				t.Fatalf("claim %s: %+v, %v", typ, got, err)
			}
			return got[0]
		}
		enqueue("old", 0) // before the window, OPEN throughout
		c.Set(backendtest.T0.Add(10 * time.Second))
		enqueue("done", 0)
		enqueue("broken", 1)
		enqueue("late", 0)
		enqueue("ran", 0)
		c.Set(backendtest.T0.Add(70 * time.Second)) // minute 1: three claims after 60 s, two completions and a failure
		done, broken, ran := claim("done"), claim("broken"), claim("ran")
		if _, err := s.Tasks.Complete(ctx, done.ID, done.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		// A start the task row holds until its attempt ends (issue 27): the
		// move to RUNNING and out of it both count, so RUNNING stays 0.
		if _, err := s.Tasks.MarkRunning(ctx, ran.ID, ran.LeaseToken); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Tasks.Complete(ctx, ran.ID, ran.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Tasks.Fail(ctx, broken.ID, broken.LeaseToken, false, "no"); err != nil {
			t.Fatal(err)
		}
		c.Set(backendtest.T0.Add(130 * time.Second)) // minute 2: a claim after 120 s, still held
		claim("late")

		st, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !st.Since.Equal(backendtest.T0) || !st.Until.Equal(backendtest.T0.Add(130*time.Second)) || len(st.Minutes) != 3 {
			t.Fatalf("window %v to %v, %d minutes; want T0 to T0+130s, 3", st.Since, st.Until, len(st.Minutes))
		}
		type minute struct {
			completed, failed, open, claimed, running, claims int
			p50, p95                                          float64 // -1: none
		}
		want := []minute{
			{open: 5, p50: -1, p95: -1},
			{completed: 2, failed: 1, open: 2, claims: 3, p50: 60000, p95: 60000},
			{open: 1, claimed: 1, claims: 1, p50: 120000, p95: 120000},
		}
		ms := func(p *float64) float64 {
			if p == nil {
				return -1
			}
			return *p
		}
		for i, w := range want {
			m := st.Minutes[i]
			got := minute{m.Completed, m.Failed, m.Depth[cks.TaskOpen], m.Depth[cks.TaskClaimed], m.Depth[cks.TaskRunning], m.Claims,
				ms(m.ClaimLatencyP50MS), ms(m.ClaimLatencyP95MS)}
			if got != w || !m.At.Equal(backendtest.T0.Add(time.Duration(i)*time.Minute)) {
				t.Errorf("minute %d at %v: %+v, want %+v", i, m.At, got, w)
			}
			if len(m.Depth) != 9 {
				t.Errorf("minute %d's depth has %d states, want the 9 unfinished ones: %v", i, len(m.Depth), m.Depth)
			}
			if _, ok := m.Depth[cks.TaskCompleted]; ok {
				t.Errorf("minute %d's depth counts COMPLETED", i)
			}
		}
		if st, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{}); err != nil || len(st.Minutes) != cks.DefaultStatsMinutes {
			t.Fatalf("default window: %d minutes, %v", len(st.Minutes), err)
		}
		for _, bad := range []int{-1, cks.MaxStatsMinutes + 1} {
			var fe *cks.FieldError
			if _, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: bad}); !errors.As(err, &fe) || fe.Field != "minutes" {
				t.Errorf("minutes %d: %v, want a FieldError of minutes", bad, err)
			}
		}
	})
}

// TestTaskStatsSteps: a window of three hours by the hour sums each hour's
// completions, failures and claims (the latencies of the hour's claims)
// and gives the depth at each hour's end, the steps starting on the hour;
// a step finer than the window's 1,440 steps allow, or longer than the
// window, is a FieldError naming step_minutes. Both backends.
func TestTaskStatsSteps(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0.Add(-2*time.Hour + 10*time.Second))
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		for _, typ := range []string{"x", "x", "y"} {
			if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, MaxAttempts: 1}); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(typ string) cks.ClaimedTask {
			t.Helper()
			got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: 3 * time.Hour})
			if err != nil || len(got) != 1 {
				t.Fatalf("claim %s: %+v, %v", typ, got, err)
			}
			return got[0]
		}
		c.Set(backendtest.T0.Add(-2*time.Hour + 70*time.Second)) // hour 0: a claim after 60 s, completed
		x1 := claim("x")
		if _, err := s.Tasks.Complete(ctx, x1.ID, x1.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		c.Set(backendtest.T0.Add(-time.Hour + 10*time.Second)) // hour 1: a claim after an hour, failed
		x2 := claim("x")
		if _, err := s.Tasks.Fail(ctx, x2.ID, x2.LeaseToken, false, "no"); err != nil {
			t.Fatal(err)
		}
		c.Set(backendtest.T0.Add(130 * time.Second)) // hour 2: a claim after 2 h 2 min, still held
		claim("y")

		st, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: 180, StepMinutes: 60})
		if err != nil {
			t.Fatal(err)
		}
		if !st.Since.Equal(backendtest.T0.Add(-2*time.Hour)) || st.StepMinutes != 60 || len(st.Minutes) != 3 {
			t.Fatalf("window from %v by %d minutes, %d steps; want T0-2h by 60, 3", st.Since, st.StepMinutes, len(st.Minutes))
		}
		type hour struct{ completed, failed, open, claimed, claims, p50 int }
		want := []hour{
			{completed: 1, open: 2, claims: 1, p50: 60_000},
			{failed: 1, open: 1, claims: 1, p50: 3_600_000},
			{claimed: 1, claims: 1, p50: 7_320_000},
		}
		for i, w := range want {
			m := st.Minutes[i]
			got := hour{m.Completed, m.Failed, m.Depth[cks.TaskOpen], m.Depth[cks.TaskClaimed], m.Claims, -1}
			if m.ClaimLatencyP50MS != nil {
				got.p50 = int(*m.ClaimLatencyP50MS)
			}
			if got != w || !m.At.Equal(backendtest.T0.Add(time.Duration(i-2)*time.Hour)) {
				t.Errorf("step %d at %v: %+v, want %+v", i, m.At, got, w)
			}
		}
		if st, err := s.Tasks.TaskStats(ctx, cks.TaskStatsInput{Minutes: cks.MaxStatsMinutes, StepMinutes: 7}); err != nil ||
			len(st.Minutes) != cks.MaxStatsSteps {
			t.Errorf("a week by 7 minutes: %d steps, %v; want %d", len(st.Minutes), err, cks.MaxStatsSteps)
		}
		for _, bad := range []cks.TaskStatsInput{{Minutes: cks.MaxStatsMinutes}, {Minutes: 60, StepMinutes: 61}, {StepMinutes: -1}} {
			var fe *cks.FieldError
			if _, err := s.Tasks.TaskStats(ctx, bad); !errors.As(err, &fe) || fe.Field != "step_minutes" {
				t.Errorf("%+v: %v, want a FieldError of step_minutes", bad, err)
			}
		}
	})
}
