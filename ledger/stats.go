package ledger

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/driver"
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

// TaskStats reads the ledger's last minutes (cks.DefaultStatsMinutes
// when 0) per minute, up to the clock's now: the tasks completed and
// failed, the queue depth by unfinished state at each minute's end, and
// the claims' latencies (from the task last becoming OPEN to its claim).
// It reads from the events alone, bounded to the window: the depth is
// today's count of each state, walked back through the window's
// transitions, so it needs no history of counts. An answer is kept for
// StatsTTL and shared by the callers of the same window meanwhile
// (statsCache): its Until, the time of its read, may be up to StatsTTL
// before the call.
func (s *Service) TaskStats(ctx context.Context, minutes int) (cks.TaskStats, error) {
	if minutes == 0 {
		minutes = cks.DefaultStatsMinutes
	}
	if minutes < 1 || minutes > cks.MaxStatsMinutes {
		return cks.TaskStats{}, &cks.FieldError{Field: "minutes",
			Expected: fmt.Sprintf("a number of minutes from 1 to %d (0 for %d)", cks.MaxStatsMinutes, cks.DefaultStatsMinutes)}
	}
	return s.stats.get(ctx, minutes, s.clock.Now())
}

// readStats is TaskStats' read of the store, behind its cache.
func (s *Service) readStats(ctx context.Context, minutes int) (cks.TaskStats, error) {
	now := driver.Time(s.clock.Now())
	since := now.Truncate(time.Minute).Add(-time.Duration(minutes-1) * time.Minute)
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
	return statsOf(since, now, minutes, counts, moves, waits), nil
}

// statsOf assembles TaskStats from the reads (TaskStats' rule, apart from
// the store).
func statsOf(since, now time.Time, minutes int, counts []driver.TaskStateCount, moves []driver.TaskEventMinute,
	waits []driver.TaskClaimWait) cks.TaskStats {
	out := cks.TaskStats{Since: since, Until: now, Minutes: make([]cks.TaskStatsMinute, minutes),
		ClaimsSampled: len(waits) >= cks.MaxStatsClaims}
	index := func(t time.Time) int { return int(t.Sub(since) / time.Minute) }
	// net[i][st] is how much minute i's transitions changed st's count.
	net := make([]map[cks.TaskState]int, minutes)
	for i := range out.Minutes {
		out.Minutes[i].At = since.Add(time.Duration(i) * time.Minute)
		net[i] = map[cks.TaskState]int{}
	}
	for _, m := range moves {
		i := index(m.Minute)
		if i < 0 || i >= minutes {
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
	// The depth at the end of the last minute is today's; each earlier
	// minute's is the next one's without the next minute's moves.
	depth := map[cks.TaskState]int{}
	for _, c := range counts {
		depth[cks.TaskState(c.State)] = c.Count
	}
	for i := minutes - 1; i >= 0; i-- {
		d := make(map[cks.TaskState]int, len(Unfinished))
		for _, st := range Unfinished {
			d[st] = max(depth[st], 0) // never below 0, whatever an odd history says
		}
		out.Minutes[i].Depth = d
		for st, n := range net[i] {
			depth[st] -= n
		}
	}
	lat := make([][]float64, minutes)
	for _, w := range waits {
		i := index(w.ClaimedAt)
		if i < 0 || i >= minutes {
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
