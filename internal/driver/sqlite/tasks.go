package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/internal/nullable"
	"github.com/cks-dev/cks/internal/driver/sqlite/internal/dbsqlc"
)

// SQLite has one writer, so every Lock a caller asks for is already held:
// the primitives ignore it. The bulk writes run one prepared statement per
// row inside the caller's write transaction (or one of their own).

// TaskInsertMany implements driver.TaskExecutor with one prepared insert per
// row that returns nothing but the id. The row as stored is the row sent in
// the form a read returns it (stored): SQLite keeps TEXT and INTEGER values
// as they are bound. A row as an enqueue makes it (newTask) goes through the
// narrow insert, its other columns left to their defaults.
func (e *executor) TaskInsertMany(ctx context.Context, rows []driver.TaskRow) ([]driver.TaskRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	var out []driver.TaskRow
	err := e.write(ctx, "task insert many", func(w *wtx) error {
		out = make([]driver.TaskRow, len(rows))
		for i, r := range rows {
			var (
				id  int64
				err error
			)
			if newTask(r) {
				id, err = e.d.q.TaskInsertNew(ctx, w, dbsqlc.TaskInsertNewParams{Type: r.Type, Title: r.Title,
					Description: r.Description, AcceptanceCriteria: r.AcceptanceCriteria,
					Payload: nullable.JSONText(r.Payload), State: r.State, Priority: int64(r.Priority),
					MaxAttempts: int64(r.MaxAttempts), ParentID: nullable.Int(r.ParentID), DedupeKey: r.DedupeKey,
					CreatedBy: r.CreatedBy, CreatedAt: w.times.nonNull(r.CreatedAt), Metadata: nullable.JSONText(r.Metadata),
					AttemptTimeoutMs: r.AttemptTimeoutMs, ConcurrencyKeys: r.ConcurrencyKeys, Traceparent: r.Traceparent})
			} else {
				id, err = e.d.q.TaskInsert(ctx, w, taskInsertParams(r))
			}
			if err != nil {
				return mapErr("task insert many", err)
			}
			if out[i], err = stored(r, &w.times); err != nil {
				return fmt.Errorf("task insert many: %w", err)
			}
			out[i].ID = id
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// newTask reports whether r is a task as an enqueue creates it, which
// TaskInsertNew stores: no attempt, lease, outcome or schedule yet, the
// first revision, created, updated and state-changed at one time.
func newTask(r driver.TaskRow) bool {
	return !r.CreatedAt.IsZero() && r.Attempts == 0 && r.Restarts == 0 && r.Revision == 1 && r.ClaimedBy == "" && r.ClaimedAt.IsZero() &&
		r.LeaseTokenHash == "" && r.LeaseExpiresAt.IsZero() && r.LeaseRenewedAt.IsZero() && r.LeaseMs == 0 &&
		r.RunAfter.IsZero() && r.Result == "" && r.LastError == "" && r.Question == "" && r.Answer == "" &&
		r.ReviewNote == "" && r.UpdatedAt.Equal(r.CreatedAt) && r.StateChangedAt.Equal(r.CreatedAt) && r.ExpiresAt.IsZero()
}

// stored is r as a read of its row returns it: the JSON columns' empty
// value is the empty object, each time is what its text parses back to.
func stored(r driver.TaskRow, times *timeTexts) (driver.TaskRow, error) {
	r.Payload, r.Metadata = []byte(nullable.JSONText(r.Payload)), []byte(nullable.JSONText(r.Metadata))
	for _, t := range []*time.Time{&r.ClaimedAt, &r.LeaseExpiresAt, &r.LeaseRenewedAt, &r.RunAfter,
		&r.CreatedAt, &r.UpdatedAt, &r.StateChangedAt, &r.ExpiresAt} {
		if t.IsZero() {
			continue
		}
		var err error
		if *t, err = parseTime(times.nonNull(*t)); err != nil {
			return r, err
		}
	}
	return r, nil
}

// TaskClaimable implements driver.TaskExecutor.
func (e *executor) TaskClaimable(ctx context.Context, p driver.TaskClaimableParams) ([]driver.TaskRow, error) {
	return e.taskClaimable(ctx, p, false)
}

// taskClaimable is TaskClaimable's read; with guard (TaskClaim's), a task
// with concurrency keys only while no limit exists.
func (e *executor) taskClaimable(ctx context.Context, p driver.TaskClaimableParams, guard bool) ([]driver.TaskRow, error) {
	now := fmtTime(p.Now)
	var (
		rows []dbsqlc.CksOutboxTask
		err  error
	)
	if len(p.Types) == 1 {
		rows, err = e.d.q.TaskClaimableOfType(ctx, e.read, dbsqlc.TaskClaimableOfTypeParams{
			State: p.State, Excluded: jsonList(p.Excluded), Type: p.Types[0], Now: &now,
			Guard: guard, Saturated: jsonList(p.Saturated), Limit: int64(p.Limit)})
	} else {
		rows, err = e.d.q.TaskClaimable(ctx, e.read, dbsqlc.TaskClaimableParams{
			State: p.State, Excluded: jsonList(p.Excluded), AnyType: len(p.Types) == 0,
			Types: jsonList(p.Types), Now: &now, Guard: guard, Saturated: jsonList(p.Saturated), Limit: int64(p.Limit)})
	}
	if err != nil {
		return nil, mapErr("task claimable", err)
	}
	return taskRowsOf(rows)
}

// TaskClaim implements driver.TaskExecutor with TaskClaimable's read and
// one prepared update per row, in the one writer's transaction (SQLite has
// no round trip to save).
func (e *executor) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	limit := min(p.Limit, len(p.Leases))
	if limit <= 0 {
		return nil, nil
	}
	var out []driver.TaskClaimed
	err := e.write(ctx, "task claim", func(w *wtx) error {
		out = nil
		in := &executor{d: e.d, read: w, tx: w}
		var rows []driver.TaskRow
		if p.IDs != nil {
			// The keyed claim's choice, read in this transaction (by the
			// one writer: as it was read, when the caller hands the rows
			// over): those still in p.State, in claim order.
			got := p.Chosen
			if len(got) != len(p.IDs) {
				var err error
				if got, err = in.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: p.IDs}); err != nil {
					return err
				}
			}
			byID := make(map[int64]driver.TaskRow, len(got))
			for _, r := range got {
				byID[r.ID] = r
			}
			for _, id := range p.IDs {
				if r, ok := byID[id]; ok && r.State == p.State {
					rows = append(rows, r)
				}
			}
			slices.SortFunc(rows, driver.ClaimOrder)
			rows = rows[:min(len(rows), limit)]
		} else {
			sel := p.TaskClaimableParams
			sel.Limit = limit
			var err error
			if rows, err = in.taskClaimable(ctx, sel, true); err != nil {
				return err
			}
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]int64, len(rows))
		for i := range rows {
			r := &rows[i]
			l := p.Leases[i]
			r.State, r.Attempts, r.ClaimedBy, r.ClaimedAt = p.To, r.Attempts+p.AttemptsAdded, l.ClaimedBy, p.Now
			r.LeaseTokenHash, r.AgentTokenHash, r.LeaseExpiresAt, r.LeaseRenewedAt = l.TokenHash, l.AgentTokenHash, l.ExpiresAt, p.Now
			r.LeaseMs, r.RunAfter, r.UpdatedAt, r.StateChangedAt = l.Ms, p.RunAfter, p.Now, p.Now
			if p.Then.To != "" {
				r.State = p.Then.To
			}
			ids[i] = r.ID
			// The claim's own columns alone (TaskClaimMove): the others
			// are as read, in this transaction of the one writer.
			if _, err := e.d.q.TaskClaimMove(ctx, w, dbsqlc.TaskClaimMoveParams{State: r.State, Attempts: int64(r.Attempts),
				ClaimedBy: r.ClaimedBy, ClaimedAt: w.times.of(r.ClaimedAt), LeaseTokenHash: r.LeaseTokenHash, AgentTokenHash: r.AgentTokenHash,
				LeaseExpiresAt: w.times.of(r.LeaseExpiresAt), LeaseRenewedAt: w.times.of(r.LeaseRenewedAt),
				LeaseMs: r.LeaseMs, RunAfter: w.times.of(r.RunAfter), UpdatedAt: w.times.nonNull(r.UpdatedAt),
				StateChangedAt: w.times.of(r.StateChangedAt), TaskID: r.ID}); err != nil {
				return mapErr(fmt.Sprintf("task claim %d", r.ID), err)
			}
		}
		deps, err := in.TaskDepList(ctx, ids)
		if err != nil {
			return err
		}
		byTask := map[int64][]int64{}
		for _, d := range deps {
			byTask[d.TaskID] = append(byTask[d.TaskID], d.DependsOn)
		}
		out = make([]driver.TaskClaimed, len(rows))
		for i, r := range rows {
			out[i] = driver.TaskClaimed{TaskRow: r, DependsOn: byTask[r.ID]}
		}
		return nil
	})
	return out, err
}

// TaskMoveMany implements driver.TaskExecutor with one prepared narrow
// update per row and one event insert per event, in one write of the one
// writer (SQLite has no round trip to save).
func (e *executor) TaskMoveMany(ctx context.Context, p driver.TaskMoveManyParams) (int, error) {
	if len(p.Rows) == 0 && len(p.Events) == 0 {
		return 0, nil
	}
	if err := driver.MoveEventsWithoutChanges(p.Events); err != nil {
		return 0, err
	}
	var n int
	err := e.write(ctx, "task move", func(w *wtx) error {
		n = 0
		for _, r := range p.Rows {
			x, err := e.d.q.TaskMove(ctx, w, dbsqlc.TaskMoveParams{State: r.State, Attempts: int64(r.Attempts),
				Restarts: int64(r.Restarts), ClaimedBy: r.ClaimedBy, ClaimedAt: w.times.of(r.ClaimedAt),
				LeaseTokenHash: r.LeaseTokenHash, LeaseExpiresAt: w.times.of(r.LeaseExpiresAt),
				LeaseRenewedAt: w.times.of(r.LeaseRenewedAt), LeaseMs: r.LeaseMs, RunAfter: w.times.of(r.RunAfter),
				Result: r.Result, LastError: r.LastError, Question: r.Question, Answer: r.Answer,
				ReviewNote: r.ReviewNote, UpdatedAt: w.times.nonNull(r.UpdatedAt), StateChangedAt: w.times.of(r.StateChangedAt),
				TaskID: r.ID})
			if err != nil {
				return mapErr(fmt.Sprintf("task move %d", r.ID), err)
			}
			n += int(x)
		}
		in := &executor{d: e.d, read: w, tx: w}
		return in.TaskEventInsertMany(ctx, p.Events)
	})
	return n, err
}

// optTime is a time filter: "" for none.
func optTime(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TaskList implements driver.TaskExecutor: the query of p's sort (the
// one writer makes a lock moot).
func (e *executor) TaskList(ctx context.Context, p driver.TaskListParams) ([]driver.TaskRow, error) {
	var (
		rows []dbsqlc.CksOutboxTask
		err  error
	)
	// Every sort's params are the same fields but for the cursor's key.
	b := dbsqlc.TaskListParams{After: p.After, States: jsonList(p.States), Types: jsonList(p.Types),
		StateChangedBefore: optTime(fmtNullTime(p.StateChangedBefore)), CreatedBy: p.CreatedBy, Match: p.Match,
		UnconfirmedAbort: p.UnconfirmedAbort, Limit: int64(p.Limit)}
	updated := optTime(fmtNullTime(p.AfterUpdated))
	one := oneIndexedState(p.States)
	switch {
	case one != "" && (p.Sort == driver.TaskSortID || p.Sort == driver.TaskSortIDDesc):
		in := dbsqlc.TaskListInStateParams{State: one, After: b.After, Types: b.Types, StateChangedBefore: b.StateChangedBefore,
			CreatedBy: b.CreatedBy, Match: b.Match, UnconfirmedAbort: b.UnconfirmedAbort, Limit: b.Limit}
		if p.Sort == driver.TaskSortID {
			rows, err = e.d.q.TaskListInState(ctx, e.read, in)
		} else {
			rows, err = e.d.q.TaskListInStateDesc(ctx, e.read, dbsqlc.TaskListInStateDescParams(in))
		}
	default:
		rows, err = e.listSorted(ctx, p, b, updated)
	}
	if err != nil {
		return nil, mapErr("task list", err)
	}
	return taskRowsOf(rows)
}

// oneIndexedState is the one state of states when there is one and
// idx_outbox_tasks_state holds it (any but OPEN), else "".
func oneIndexedState(states []string) string {
	if len(states) != 1 || states[0] == string(cks.TaskOpen) {
		return ""
	}
	return states[0]
}

// listSorted is TaskList of any states in p.Sort's order.
func (e *executor) listSorted(ctx context.Context, p driver.TaskListParams, b dbsqlc.TaskListParams, updated string) (
	rows []dbsqlc.CksOutboxTask, err error) {
	switch p.Sort {
	case driver.TaskSortIDDesc:
		rows, err = e.d.q.TaskListIDDesc(ctx, e.read, dbsqlc.TaskListIDDescParams(b))
	case driver.TaskSortUpdated:
		rows, err = e.d.q.TaskListUpdated(ctx, e.read, dbsqlc.TaskListUpdatedParams{After: b.After, AfterUpdated: updated,
			States: b.States, Types: b.Types, StateChangedBefore: b.StateChangedBefore, CreatedBy: b.CreatedBy,
			Match: b.Match, UnconfirmedAbort: b.UnconfirmedAbort, Limit: b.Limit})
	case driver.TaskSortUpdatedDesc:
		rows, err = e.d.q.TaskListUpdatedDesc(ctx, e.read, dbsqlc.TaskListUpdatedDescParams{After: b.After, AfterUpdated: updated,
			States: b.States, Types: b.Types, StateChangedBefore: b.StateChangedBefore, CreatedBy: b.CreatedBy,
			Match: b.Match, UnconfirmedAbort: b.UnconfirmedAbort, Limit: b.Limit})
	case driver.TaskSortPriority:
		rows, err = e.d.q.TaskListPriority(ctx, e.read, dbsqlc.TaskListPriorityParams{After: b.After, AfterPriority: int64(p.AfterPriority),
			States: b.States, Types: b.Types, StateChangedBefore: b.StateChangedBefore, CreatedBy: b.CreatedBy,
			Match: b.Match, UnconfirmedAbort: b.UnconfirmedAbort, Limit: b.Limit})
	default:
		rows, err = e.d.q.TaskList(ctx, e.read, b)
	}
	return rows, err
}

// TaskCount implements driver.TaskExecutor.
func (e *executor) TaskCount(ctx context.Context, p driver.TaskCountParams) (int, error) {
	if one := oneIndexedState(p.States); one != "" {
		n, err := e.d.q.TaskCountInState(ctx, e.read, dbsqlc.TaskCountInStateParams{State: one, Types: jsonList(p.Types),
			StateChangedBefore: optTime(fmtNullTime(p.StateChangedBefore)),
			CreatedBy:          p.CreatedBy, Match: p.Match, UnconfirmedAbort: p.UnconfirmedAbort})
		return int(n), mapErr("task count", err)
	}
	n, err := e.d.q.TaskCount(ctx, e.read, dbsqlc.TaskCountParams{
		States: jsonList(p.States), Types: jsonList(p.Types),
		StateChangedBefore: optTime(fmtNullTime(p.StateChangedBefore)),
		CreatedBy:          p.CreatedBy, Match: p.Match, UnconfirmedAbort: p.UnconfirmedAbort})
	return int(n), mapErr("task count", err)
}

// TaskCountByState implements driver.TaskExecutor.
func (e *executor) TaskCountByState(ctx context.Context, p driver.TaskCountParams) ([]driver.TaskStateCount, error) {
	if p.ByStateAlone() {
		all, err := e.d.q.TaskCountByStateAll(ctx, e.read)
		if err != nil {
			return nil, mapErr("task count by state", err)
		}
		out := make([]driver.TaskStateCount, len(all))
		for i, r := range all {
			out[i] = driver.TaskStateCount{State: r.State, Count: int(r.Count)}
		}
		return driver.InStates(out, p.States), nil
	}
	rows, err := e.d.q.TaskCountByState(ctx, e.read, dbsqlc.TaskCountByStateParams{
		States: jsonList(p.States), Types: jsonList(p.Types),
		StateChangedBefore: optTime(fmtNullTime(p.StateChangedBefore)),
		CreatedBy:          p.CreatedBy, Match: p.Match, UnconfirmedAbort: p.UnconfirmedAbort})
	if err != nil {
		return nil, mapErr("task count by state", err)
	}
	return taskStateCountsOf(rows), nil
}

// TaskLockDependencyGraph implements driver.TaskExecutor: the one writer
// already serialises every dependency edit.
func (e *executor) TaskLockDependencyGraph(ctx context.Context) error { return nil }

// TaskEventInsertMany implements driver.TaskExecutor.
func (e *executor) TaskEventInsertMany(ctx context.Context, events []driver.TaskEventRow) error {
	if len(events) == 0 {
		return nil
	}
	return e.write(ctx, "task event insert", func(w *wtx) error {
		for _, ev := range events {
			if err := e.d.q.TaskEventInsert(ctx, w, dbsqlc.TaskEventInsertParams{
				TaskID: ev.TaskID, At: w.times.nonNull(ev.At), Actor: ev.Actor, FromState: ev.FromState, ToState: ev.ToState,
				Attempt: int64(ev.Attempt), Reason: ev.Reason, Changes: ev.Changes, ClaimedAt: w.times.of(ev.ClaimedAt),
				StartedAt: w.times.of(ev.StartedAt), Worker: ev.Worker}); err != nil {
				return mapErr(fmt.Sprintf("event of task %d", ev.TaskID), err)
			}
		}
		return nil
	})
}

// TaskDedupeFindMany implements driver.TaskExecutor: the two lookups of
// TaskDedupeFind per key (in-process reads, one writer: a loop costs no
// round trip).
func (e *executor) TaskDedupeFindMany(ctx context.Context, p driver.TaskDedupeFindManyParams) ([]driver.TaskDedupeHit, error) {
	keys := slices.Compact(slices.Sorted(slices.Values(p.Keys)))
	var out []driver.TaskDedupeHit
	for _, k := range keys {
		id, err := e.TaskDedupeFind(ctx, driver.TaskDedupeFindParams{Key: k, Terminal: p.Terminal})
		if err == nil {
			out = append(out, driver.TaskDedupeHit{Key: k, ID: id})
			continue
		}
		if !errors.Is(err, driver.ErrNoRows) {
			return nil, err
		}
		id, err = e.TaskDedupeFind(ctx, driver.TaskDedupeFindParams{Key: k, Terminal: p.Terminal, IncludeTerminal: true})
		if errors.Is(err, driver.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, driver.TaskDedupeHit{Key: k, ID: id, Terminal: true})
	}
	return out, nil
}

// TaskEventMinutes implements driver.TaskExecutor.
func (e *executor) TaskEventMinutes(ctx context.Context, p driver.TaskEventWindowParams) ([]driver.TaskEventMinute, error) {
	rows, err := e.d.q.TaskEventMinutes(ctx, e.read, dbsqlc.TaskEventMinutesParams{Since: fmtTime(p.Since), Until: fmtTime(p.Until)})
	if err != nil {
		return nil, mapErr("task event minutes", err)
	}
	out := make([]driver.TaskEventMinute, len(rows))
	for i, r := range rows {
		m, err := parseTime(r.Minute)
		if err != nil {
			return nil, fmt.Errorf("task event minutes: %w", err)
		}
		out[i] = driver.TaskEventMinute{Minute: m, From: r.FromState, To: r.ToState, Count: int(r.Count)}
	}
	return out, nil
}

// TaskTypesDue implements driver.TaskExecutor.
func (e *executor) TaskTypesDue(ctx context.Context, now time.Time) ([]driver.TaskTypeDue, error) {
	rows, err := e.d.q.TaskTypesDue(ctx, e.read, fmtNullTime(now))
	if err != nil {
		return nil, mapErr("task types due", err)
	}
	out := make([]driver.TaskTypeDue, len(rows))
	for i, r := range rows {
		since, err := parseTime(r.DueSince)
		if err != nil {
			return nil, fmt.Errorf("task types due: %w", err)
		}
		out[i] = driver.TaskTypeDue{Type: r.Type, Due: int(r.Due), Since: since}
	}
	return out, nil
}

// TaskNextDue implements driver.TaskExecutor.
func (e *executor) TaskNextDue(ctx context.Context, now time.Time) (time.Time, error) {
	t, err := e.d.q.TaskNextDue(ctx, e.read, fmtNullTime(now))
	if err = mapErr("task next due", err); errors.Is(err, driver.ErrNoRows) || (err == nil && t == nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	next, err := parseTime(*t)
	if err != nil {
		return time.Time{}, fmt.Errorf("task next due: %w", err)
	}
	return next, nil
}

// TaskTypesHeld implements driver.TaskExecutor.
func (e *executor) TaskTypesHeld(ctx context.Context) ([]string, error) {
	types, err := e.d.q.TaskTypesHeld(ctx, e.read)
	return types, mapErr("task types held", err)
}

// KeyStartInsertMany implements driver.LimitExecutor with one prepared
// insert per key, in one write of the one writer.
func (e *executor) KeyStartInsertMany(ctx context.Context, keys []string, startedAt time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	return e.write(ctx, "key start insert", func(w *wtx) error {
		at := w.times.nonNull(startedAt)
		for _, k := range keys {
			if err := e.d.q.KeyStartInsert(ctx, w, dbsqlc.KeyStartInsertParams{Key: k, StartedAt: at}); err != nil {
				return mapErr("key start insert", err)
			}
		}
		return nil
	})
}
