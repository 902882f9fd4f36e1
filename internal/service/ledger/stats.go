package ledger

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Unfinished lists the states whose tasks task_stats counts as the queue
// (every state but the terminal ones), in lifecycle order.
var Unfinished = func() []cks.TaskState {
	var out []cks.TaskState
	for _, st := range All {
		if !slices.Contains(Terminal[:], st) {
			out = append(out, st)
		}
	}
	return out
}()

// StatsWindow is a window of TaskStats: the last Minutes minutes, in
// steps of Step minutes.
type StatsWindow struct{ Minutes, Step int }

// steps is how many steps w has: its minutes rounded up to whole steps.
func (w StatsWindow) steps() int { return (w.Minutes + w.Step - 1) / w.Step }

// TaskStats reads the ledger's last in.Minutes (cks.DefaultStatsMinutes
// when 0) per step of in.StepMinutes (1 when 0), up to the clock's now:
// the tasks completed and failed, the queue depth by unfinished state at
// each step's end, and the claims' latencies (from the task last becoming
// OPEN to its claim). Steps start at whole multiples of the step (an hour
// on the hour), so the window is its minutes rounded up to whole steps;
// there are at most cks.MaxStatsSteps. It reads from the events alone,
// bounded to the window: the depth is today's count of each state, walked
// back through the window's transitions, so it needs no history of counts.
// An answer is kept for StatsTTL per minute of its step and shared by the
// callers of the same window meanwhile (readCache): its Until, the time of
// its read, may be up to that long before the call.
func (s *Service) TaskStats(ctx context.Context, in cks.TaskStatsInput) (cks.TaskStats, error) {
	w := StatsWindow{Minutes: cmp.Or(in.Minutes, cks.DefaultStatsMinutes), Step: cmp.Or(in.StepMinutes, 1)}
	if w.Minutes < 1 || w.Minutes > cks.MaxStatsMinutes {
		return cks.TaskStats{}, &cks.FieldError{Field: "minutes",
			Expected: fmt.Sprintf("a number of minutes from 1 to %d (0 for %d)", cks.MaxStatsMinutes, cks.DefaultStatsMinutes)}
	}
	if w.Step < 1 || w.Step > w.Minutes || w.steps() > cks.MaxStatsSteps {
		return cks.TaskStats{}, &cks.FieldError{Field: "step_minutes",
			Expected: fmt.Sprintf("a number of minutes from %d to %d for a window of %d minutes (at most %d steps; 0 for 1)",
				(w.Minutes+cks.MaxStatsSteps-1)/cks.MaxStatsSteps, w.Minutes, w.Minutes, cks.MaxStatsSteps)}
	}
	return s.stats.get(ctx, w, s.clock.Now())
}

// readStats is TaskStats' read of the store, behind its cache.
func (s *Service) readStats(ctx context.Context, win StatsWindow) (cks.TaskStats, error) {
	now := driver.Time(s.clock.Now())
	step := time.Duration(win.Step) * time.Minute
	since := now.Truncate(step).Add(-time.Duration(win.steps()-1) * step)
	// Until is just after now: an event written at now is in the window.
	w := driver.TaskEventWindowParams{Since: since, Until: now.Add(time.Microsecond), Limit: cks.MaxStatsClaims}
	var (
		counts []driver.TaskStateCount
		moves  []driver.TaskEventMinute
		waits  []driver.TaskClaimWait
	)
	// One read transaction, so the counts and the events agree.
	err := s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		if counts, err = ex.TaskCountByState(ctx, driver.TaskCountParams{}); err != nil {
			return err
		}
		if moves, err = ex.TaskEventMinutes(ctx, w); err != nil {
			return err
		}
		waits, err = ex.TaskClaimWaits(ctx, w)
		return err
	})
	if err != nil {
		return cks.TaskStats{}, fmt.Errorf("task stats: %w", err)
	}
	return statsOf(since, now, win.steps(), step, counts, moves, waits), nil
}

// statsOf assembles TaskStats of n steps of step from the reads
// (TaskStats' rule, apart from the store).
func statsOf(since, now time.Time, n int, step time.Duration, counts []driver.TaskStateCount, moves []driver.TaskEventMinute,
	waits []driver.TaskClaimWait) cks.TaskStats {
	out := cks.TaskStats{Since: since, Until: now, StepMinutes: int(step / time.Minute), Minutes: make([]cks.TaskStatsMinute, n),
		ClaimsSampled: len(waits) >= cks.MaxStatsClaims}
	index := func(t time.Time) int { return int(t.Sub(since) / step) }
	// net[i][st] is how much step i's transitions changed st's count.
	net := make([]map[cks.TaskState]int, n)
	for i := range out.Minutes {
		out.Minutes[i].At = since.Add(time.Duration(i) * step)
		net[i] = map[cks.TaskState]int{}
	}
	for _, m := range moves {
		i := index(m.Minute)
		if i < 0 || i >= n {
			continue
		}
		if m.From == m.To { // an edit in place: no move
			continue
		}
		net[i][cks.TaskState(m.To)] += m.Count
		if m.From != "" {
			net[i][cks.TaskState(m.From)] -= m.Count
		}
		switch cks.TaskState(m.To) {
		case cks.TaskCompleted:
			out.Minutes[i].Completed += m.Count
		case cks.TaskFailed:
			out.Minutes[i].Failed += m.Count
		}
	}
	// The depth at the end of the last step is today's; each earlier
	// step's is the next one's without the next step's moves.
	depth := map[cks.TaskState]int{}
	for _, c := range counts {
		depth[cks.TaskState(c.State)] = c.Count
	}
	for i := n - 1; i >= 0; i-- {
		d := make(map[cks.TaskState]int, len(Unfinished))
		for _, st := range Unfinished {
			d[st] = max(depth[st], 0) // never below 0, whatever an odd history says
		}
		out.Minutes[i].Depth = d
		for st, delta := range net[i] {
			depth[st] -= delta
		}
	}
	lat := make([][]float64, n)
	for _, w := range waits {
		i := index(w.ClaimedAt)
		if i < 0 || i >= n {
			continue
		}
		lat[i] = append(lat[i], max(float64(w.ClaimedAt.Sub(w.OpenedAt))/float64(time.Millisecond), 0))
	}
	for i, l := range lat {
		m := &out.Minutes[i]
		m.Claims = len(l)
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		m.ClaimLatencyP50MS, m.ClaimLatencyP95MS = new(percentile(l, 50)), new(percentile(l, 95))
	}
	return out
}

// percentile is the nearest-rank p-th percentile of sorted (non-empty).
func percentile(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
