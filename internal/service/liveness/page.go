package liveness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// endOfTime is the cursor of a first page: after every instance's start.
var endOfTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// processFilter is a validated ListProcessesInput.
type processFilter struct {
	history bool
	alive   *bool
	kinds   []string
	after   cks.ProcessCursor
	limit   int
}

// filterOf validates in: each kind a process kind, the cursor one Page wrote, the
// limit in range; a bad field is a cks.FieldError naming it.
func filterOf(in cks.ListProcessesInput) (processFilter, error) {
	f := processFilter{history: in.History, alive: in.Alive, limit: in.Limit}
	for _, k := range in.Kind {
		if err := cks.ValidateProcessKind("kind", k); err != nil {
			return f, err
		}
		if !slices.Contains(f.kinds, k) {
			f.kinds = append(f.kinds, k)
		}
	}
	switch {
	case in.Limit < 0 || in.Limit > cks.MaxListLimit:
		return f, &cks.FieldError{Field: "limit", Expected: fmt.Sprintf("an integer from 1 to %d (0 for the default %d)", cks.MaxListLimit, cks.DefaultListLimit)}
	case in.Limit == 0:
		f.limit = cks.DefaultListLimit
	}
	var err error
	f.after, err = cks.ParseProcessCursor(in.Cursor)
	return f, err
}

// Page is list_processes: one page, newest-started first, of the live
// instances — the newest instance of each kind (what process_status
// reports) and every alive one — or, with History, of every instance that
// ever reported; Alive and Kind filter either. The live view reads the
// newest row of each kind and the alive rows (an index range each), never
// the history; a history page reads its own rows from the cursor on.
func (s *Service) Page(ctx context.Context, in cks.ListProcessesInput) (cks.ProcessList, error) {
	f, err := filterOf(in)
	if err != nil {
		return cks.ProcessList{}, err
	}
	now := s.clock.Now()
	ex := s.db.Executor()
	after, afterID := endOfTime, ""
	if !f.after.StartedAt.IsZero() {
		after, afterID = f.after.StartedAt, f.after.InstanceID
	}
	// One row more than the page tells whether another page follows.
	want := f.limit + 1
	var rows []driver.LivenessRow
	switch {
	case f.alive != nil && *f.alive:
		// Every alive instance is live: the same rows in both views.
		rows, err = ex.LivenessAlive(ctx, driver.LivenessAliveParams{Now: now, Kinds: f.kinds,
			AfterStartedAt: after, AfterInstanceID: afterID, Limit: want})
	case f.history:
		rows, err = ex.LivenessPage(ctx, driver.LivenessPageParams{Kinds: f.kinds, StoppedOnly: f.alive != nil, Now: now,
			AfterStartedAt: after, AfterInstanceID: afterID, Limit: want})
	default:
		rows, err = s.live(ctx, f, now, after, afterID, want)
	}
	if err != nil {
		return cks.ProcessList{}, fmt.Errorf("list processes: %w", err)
	}
	out := cks.ProcessList{Processes: make([]cks.Process, 0, min(len(rows), f.limit))}
	for _, r := range rows {
		if len(out.Processes) == f.limit {
			last := out.Processes[len(out.Processes)-1]
			out.Next = cks.ProcessCursor{StartedAt: last.StartedAt, InstanceID: last.InstanceID}.String()
			break
		}
		out.Processes = append(out.Processes, s.annotate(livenessOf(r), now))
	}
	return out, nil
}

// live reads up to want rows of the live view after the cursor: the alive
// rows and the newest row of each kind (of f's kinds, or every one that
// reported), without duplicates, in the listing's order; with Alive false,
// the newest rows that are stopped.
func (s *Service) live(ctx context.Context, f processFilter, now, after time.Time, afterID string, want int) ([]driver.LivenessRow, error) {
	ex := s.db.Executor()
	var rows []driver.LivenessRow
	if f.alive == nil {
		alive, err := ex.LivenessAlive(ctx, driver.LivenessAliveParams{Now: now, Kinds: f.kinds,
			AfterStartedAt: after, AfterInstanceID: afterID, Limit: want})
		if err != nil {
			return nil, err
		}
		rows = alive
	}
	kinds := f.kinds
	if len(kinds) == 0 {
		// Every kind that ever reported (index only).
		counts, err := ex.LivenessCountByKind(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range counts {
			kinds = append(kinds, c.ProcessKind)
		}
	}
	cursor := cks.ProcessCursor{StartedAt: after, InstanceID: afterID}
	for _, k := range kinds {
		r, err := ex.LivenessLatest(ctx, k)
		if errors.Is(err, driver.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rec := livenessOf(r)
		if !cursor.After(rec) || slices.ContainsFunc(rows, func(x driver.LivenessRow) bool { return x.InstanceID == r.InstanceID }) {
			continue
		}
		if f.alive != nil && StatusAt(rec, now) == cks.ProcessAlive {
			continue // alive=false: only the stopped ones
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b driver.LivenessRow) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.InstanceID, b.InstanceID)
	})
	if len(rows) > want {
		rows = rows[:want]
	}
	return rows, nil
}

// Counts returns, per known kind (and any other kind that reported), how
// many instances are alive now and how many are stopped, for the metrics:
// the alive ones from their index range, the total of each kind from an
// index-only count, so a scrape never reads the history's rows.
func (s *Service) Counts(ctx context.Context) (alive, stopped map[string]int, err error) {
	now := s.clock.Now()
	ex := s.db.Executor()
	totals, err := ex.LivenessCountByKind(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("count processes: %w", err)
	}
	alive, stopped = map[string]int{}, map[string]int{}
	for _, k := range KnownKinds() {
		alive[k] = 0
	}
	after, afterID := endOfTime, ""
	for {
		rows, err := ex.LivenessAlive(ctx, driver.LivenessAliveParams{Now: now, AfterStartedAt: after, AfterInstanceID: afterID, Limit: cks.MaxListLimit})
		if err != nil {
			return nil, nil, fmt.Errorf("count alive processes: %w", err)
		}
		for _, r := range rows {
			alive[r.ProcessKind]++
		}
		if len(rows) < cks.MaxListLimit {
			break
		}
		after, afterID = rows[len(rows)-1].StartedAt, rows[len(rows)-1].InstanceID
	}
	for _, c := range totals {
		stopped[c.ProcessKind] = c.Count - alive[c.ProcessKind]
	}
	return alive, stopped, nil
}

// DeclaredTypes returns the task types the alive instances say they
// claim (their --types), for ledger.UnclaimedTypes: read a page of alive
// rows at a time from idx_agent_liveness_alive.
func (s *Service) DeclaredTypes(ctx context.Context) (map[string]bool, error) {
	now := s.clock.Now()
	ex := s.db.Executor()
	out := map[string]bool{}
	after, afterID := endOfTime, ""
	for {
		const page = 1000
		rows, err := ex.LivenessAlive(ctx, driver.LivenessAliveParams{Now: now, AfterStartedAt: after, AfterInstanceID: afterID, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("declared task types: %w", err)
		}
		for _, r := range rows {
			for _, t := range livenessOf(r).TaskTypes {
				out[t] = true
			}
		}
		if len(rows) < page {
			return out, nil
		}
		last := livenessOf(rows[len(rows)-1])
		after, afterID = last.StartedAt, last.InstanceID
	}
}
