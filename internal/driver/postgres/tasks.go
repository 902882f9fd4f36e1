package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/internal/nullable"
	"github.com/cks-dev/cks/internal/driver/postgres/internal/dbsqlc"
)

// The bulk queries take one array per column. An array element cannot be
// NULL from a Go slice, so a NULL time is sent as the zero time and a NULL
// parent as 0, which the queries turn back into NULL (NULLIF). A single
// row goes through the one-row form of a query (plain parameters): for one
// row, arrays cost Postgres more than they save.

// arrayTime is t as an element of a timestamptz array: driver.Time, or the
// zero time for NULL.
func arrayTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return driver.Time(t)
}

// TaskInsertMany implements driver.TaskExecutor. The rows come back in the
// order of their ids, which is input order: one statement draws them from
// the sequence row by row.
func (e *executor) TaskInsertMany(ctx context.Context, rows []driver.TaskRow) ([]driver.TaskRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	if len(rows) == 1 {
		stored, err := e.d.q.TaskInsert(ctx, e.db, taskInsertParams(rows[0]))
		if err != nil {
			return nil, mapErr("task insert", err)
		}
		return []driver.TaskRow{taskRowOf(stored)}, nil
	}
	if at, ok := newTasks(rows); ok {
		return e.taskInsertManyNew(ctx, rows, at)
	}
	inserted, err := e.d.q.TaskInsertMany(ctx, e.db, taskInsertManyParams(rows))
	if err != nil {
		return nil, mapErr("task insert", err)
	}
	if len(inserted) != len(rows) {
		return nil, fmt.Errorf("postgres: task insert: %d rows back for %d", len(inserted), len(rows))
	}
	slices.SortFunc(inserted, func(x, y dbsqlc.CksOutboxTask) int { return cmp.Compare(x.TaskID, y.TaskID) })
	return taskRowsOf(inserted), nil
}

// newTasks reports whether rows are tasks as an enqueue creates them (no
// attempt, lease, outcome or schedule yet, the first revision, created,
// updated and state-changed at one time, the same for every row), and that
// time: TaskInsertManyNew's rows.
func newTasks(rows []driver.TaskRow) (time.Time, bool) {
	at := rows[0].CreatedAt
	for _, r := range rows {
		if r.Attempts != 0 || r.Restarts != 0 || r.Revision != 1 || r.ClaimedBy != "" || !r.ClaimedAt.IsZero() ||
			r.LeaseTokenHash != "" || !r.LeaseExpiresAt.IsZero() || !r.LeaseRenewedAt.IsZero() || r.LeaseMs != 0 ||
			!r.RunAfter.IsZero() || r.Result != "" || r.LastError != "" || r.Question != "" || r.Answer != "" ||
			r.ReviewNote != "" || !r.CreatedAt.Equal(at) || !r.UpdatedAt.Equal(at) || !r.StateChangedAt.Equal(at) ||
			!r.ExpiresAt.IsZero() {
			return time.Time{}, false
		}
	}
	return at, true
}

// taskInsertManyNew inserts rows (newTasks) with TaskInsertManyNew: the
// rows as stored are rows with the ids and the jsonb columns' stored form
// that come back.
func (e *executor) taskInsertManyNew(ctx context.Context, rows []driver.TaskRow, at time.Time) ([]driver.TaskRow, error) {
	n := len(rows)
	a := dbsqlc.TaskInsertManyNewParams{CreatedAt: driver.Time(at), Types: make([]string, n), Titles: make([]string, n),
		Descriptions: make([]string, n), AcceptanceCriterias: make([]string, n), Payloads: make([]string, n),
		States: make([]string, n), Priorities: make([]int32, n), MaxAttemptss: make([]int32, n),
		ParentIds: make([]int64, n), DedupeKeys: make([]string, n), CreatedBys: make([]string, n),
		Metadatas: make([]string, n), AttemptTimeoutMss: make([]int64, n), ConcurrencyKeyss: make([]string, n),
		Traceparents: make([]string, n)}
	for i, r := range rows {
		a.Types[i], a.Titles[i], a.Descriptions[i], a.AcceptanceCriterias[i] = r.Type, r.Title, r.Description, r.AcceptanceCriteria
		a.Payloads[i], a.States[i], a.Priorities[i] = nullable.JSONText(r.Payload), r.State, int32(r.Priority)
		a.MaxAttemptss[i], a.ParentIds[i], a.DedupeKeys[i] = int32(r.MaxAttempts), r.ParentID, r.DedupeKey
		a.CreatedBys[i], a.Metadatas[i] = r.CreatedBy, nullable.JSONText(r.Metadata)
		a.AttemptTimeoutMss[i], a.ConcurrencyKeyss[i], a.Traceparents[i] = r.AttemptTimeoutMs, r.ConcurrencyKeys, r.Traceparent
	}
	got := make([]dbsqlc.TaskInsertManyNewRow, 0, n)
	err := eachTaskInsertManyNew(ctx, e.db, a, func(r *dbsqlc.TaskInsertManyNewRow) { got = append(got, *r) })
	if err != nil {
		return nil, mapErr("task insert", err)
	}
	if len(got) != n {
		return nil, fmt.Errorf("postgres: task insert: %d rows back for %d", len(got), n)
	}
	slices.SortFunc(got, func(x, y dbsqlc.TaskInsertManyNewRow) int { return cmp.Compare(x.TaskID, y.TaskID) })
	out := make([]driver.TaskRow, n)
	for i, g := range got {
		out[i] = rows[i]
		out[i].ID, out[i].Payload, out[i].Metadata = g.TaskID, nonNil(g.Payload), nonNil(g.Metadata)
		out[i].CreatedAt = driver.Time(at)
		out[i].UpdatedAt, out[i].StateChangedAt = out[i].CreatedAt, out[i].CreatedAt
	}
	return out, nil
}

// TaskUpdateMany implements driver.TaskExecutor: one statement, by
// primary key.
func (e *executor) TaskUpdateMany(ctx context.Context, rows []driver.TaskRow) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if len(rows) == 1 {
		n, err := e.d.q.TaskUpdate(ctx, e.db, taskUpdateParams(rows[0]))
		return int(n), mapErr(fmt.Sprintf("task update %d", rows[0].ID), err)
	}
	n, err := e.d.q.TaskUpdateMany(ctx, e.db, taskUpdateManyParams(rows))
	return int(n), mapErr("task update", err)
}

// TaskMoveMany implements driver.TaskExecutor: one statement, the rows by
// primary key and the events in a data-modifying CTE of it (one move with
// one event through the one-row form, plain parameters).
func (e *executor) TaskMoveMany(ctx context.Context, p driver.TaskMoveManyParams) (int, error) {
	if len(p.Rows) == 0 && len(p.Events) == 0 {
		return 0, nil
	}
	if err := driver.MoveEventsWithoutChanges(p.Events); err != nil {
		return 0, err
	}
	if len(p.Rows) == 1 && len(p.Events) == 1 {
		r, ev := p.Rows[0], p.Events[0]
		n, err := e.d.q.TaskMove(ctx, e.db, dbsqlc.TaskMoveParams{State: r.State, Attempts: int32(r.Attempts),
			Restarts: int32(r.Restarts), ClaimedBy: r.ClaimedBy, ClaimedAt: nullTime(r.ClaimedAt),
			LeaseTokenHash: r.LeaseTokenHash, LeaseExpiresAt: nullTime(r.LeaseExpiresAt),
			LeaseRenewedAt: nullTime(r.LeaseRenewedAt), LeaseMs: r.LeaseMs, RunAfter: nullTime(r.RunAfter),
			Result: r.Result, LastError: r.LastError, Question: r.Question, Answer: r.Answer,
			ReviewNote: r.ReviewNote, UpdatedAt: driver.Time(r.UpdatedAt), StateChangedAt: nullTime(r.StateChangedAt),
			TaskID: r.ID, EventTaskID: ev.TaskID, EventAt: driver.Time(ev.At), EventActor: ev.Actor,
			EventFromState: ev.FromState, EventToState: ev.ToState, EventAttempt: int32(ev.Attempt), EventReason: ev.Reason,
			EventClaimedAt: nullTime(ev.ClaimedAt), EventStartedAt: nullTime(ev.StartedAt), EventWorker: ev.Worker})
		return int(n), mapErr(fmt.Sprintf("task move %d", r.ID), err)
	}
	n, err := e.d.q.TaskMoveMany(ctx, e.db, taskMoveManyParams(p))
	return int(n), mapErr("task move", err)
}

// taskMoveManyParams writes p as the arrays of dbsqlc.TaskMoveManyParams,
// one element a row (or an event).
func taskMoveManyParams(p driver.TaskMoveManyParams) dbsqlc.TaskMoveManyParams {
	n, m := len(p.Rows), len(p.Events)
	a := dbsqlc.TaskMoveManyParams{
		TaskIds: make([]int64, n), States: make([]string, n), Attemptss: make([]int32, n),
		Restartss: make([]int32, n), ClaimedBys: make([]string, n), ClaimedAts: make([]time.Time, n),
		LeaseTokenHashes: make([]string, n), LeaseExpiresAts: make([]time.Time, n),
		LeaseRenewedAts: make([]time.Time, n), LeaseMss: make([]int64, n), RunAfters: make([]time.Time, n),
		Results: make([]string, n), LastErrors: make([]string, n), Questions: make([]string, n),
		Answers: make([]string, n), ReviewNotes: make([]string, n), UpdatedAts: make([]time.Time, n),
		StateChangedAts: make([]time.Time, n),
		EventTaskIds:    make([]int64, m), EventAts: make([]time.Time, m), EventActors: make([]string, m),
		EventFromStates: make([]string, m), EventToStates: make([]string, m), EventAttempts: make([]int32, m),
		EventReasons: make([]string, m), EventClaimedAts: make([]time.Time, m), EventStartedAts: make([]time.Time, m),
		EventWorkers: make([]string, m),
	}
	for i, r := range p.Rows {
		a.TaskIds[i], a.States[i], a.Attemptss[i], a.Restartss[i] = r.ID, r.State, int32(r.Attempts), int32(r.Restarts)
		a.ClaimedBys[i], a.ClaimedAts[i], a.LeaseTokenHashes[i] = r.ClaimedBy, arrayTime(r.ClaimedAt), r.LeaseTokenHash
		a.LeaseExpiresAts[i], a.LeaseRenewedAts[i] = arrayTime(r.LeaseExpiresAt), arrayTime(r.LeaseRenewedAt)
		a.LeaseMss[i], a.RunAfters[i], a.Results[i], a.LastErrors[i] = r.LeaseMs, arrayTime(r.RunAfter), r.Result, r.LastError
		a.Questions[i], a.Answers[i], a.ReviewNotes[i] = r.Question, r.Answer, r.ReviewNote
		a.UpdatedAts[i], a.StateChangedAts[i] = arrayTime(r.UpdatedAt), arrayTime(r.StateChangedAt)
	}
	for i, ev := range p.Events {
		a.EventTaskIds[i], a.EventAts[i], a.EventActors[i] = ev.TaskID, driver.Time(ev.At), ev.Actor
		a.EventFromStates[i], a.EventToStates[i] = ev.FromState, ev.ToState
		a.EventAttempts[i], a.EventReasons[i] = int32(ev.Attempt), ev.Reason
		a.EventClaimedAts[i], a.EventStartedAts[i], a.EventWorkers[i] = arrayTime(ev.ClaimedAt), arrayTime(ev.StartedAt), ev.Worker
	}
	return a
}

// TaskClaimable implements driver.TaskExecutor.
func (e *executor) TaskClaimable(ctx context.Context, p driver.TaskClaimableParams) ([]driver.TaskRow, error) {
	out := []driver.TaskRow{}
	add := func(r *dbsqlc.CksOutboxTask) { out = append(out, taskRowOf(*r)) }
	var err error
	switch len(p.Types) {
	case 0:
		err = eachTaskClaimable(ctx, e.db, taskClaimableParams(p), add)
	case 1:
		err = eachTaskClaimableOfType(ctx, e.db, dbsqlc.TaskClaimableOfTypeParams{
			State: p.State, Excluded: nonNil(p.Excluded), Type: p.Types[0], Now: nullTime(p.Now),
			Saturated: nonNil(p.Saturated), Limit: int32(p.Limit)}, add)
	default:
		err = eachTaskClaimableOfTypes(ctx, e.db, taskClaimableOfTypesParams(p), add)
	}
	if err != nil {
		return nil, mapErr("task claimable", err)
	}
	return out, nil
}

// TaskClaim implements driver.TaskExecutor: one statement of the form
// TaskClaimable would use, or of the ids given (ByIDs).
func (e *executor) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	limit := min(p.Limit, len(p.Leases))
	if limit <= 0 {
		return nil, nil
	}
	q := dbsqlc.TaskClaimParams{State: p.State, Excluded: nonNil(p.Excluded),
		Now: pgtype.Timestamptz{Time: driver.Time(p.Now), Valid: true}, Limit: int32(limit),
		ToState: p.To, AttemptsAdded: int32(p.AttemptsAdded), RunAfter: nullTime(p.RunAfter),
		ThenTo: p.Then.To}
	q.LeaseTokenHashes, q.AgentTokenHashes, q.ClaimedBys = make([]string, limit), make([]string, limit), make([]string, limit)
	q.LeaseExpiresAts, q.LeaseMss = make([]time.Time, limit), make([]int64, limit)
	for i, l := range p.Leases[:limit] {
		q.LeaseTokenHashes[i], q.AgentTokenHashes[i], q.ClaimedBys[i] = l.TokenHash, l.AgentTokenHash, l.ClaimedBy
		q.LeaseExpiresAts[i], q.LeaseMss[i] = driver.Time(l.ExpiresAt), l.Ms
	}
	var (
		c   claimed
		err error
	)
	switch {
	case p.IDs != nil:
		err = eachTaskClaimByIDs(ctx, e.db, dbsqlc.TaskClaimByIDsParams{State: q.State, IDs: p.IDs,
			Now: driver.Time(p.Now), Limit: q.Limit, LeaseTokenHashes: q.LeaseTokenHashes, AgentTokenHashes: q.AgentTokenHashes,
			ClaimedBys: q.ClaimedBys, LeaseExpiresAts: q.LeaseExpiresAts, LeaseMss: q.LeaseMss,
			ToState: q.ToState, AttemptsAdded: q.AttemptsAdded, RunAfter: q.RunAfter, ThenTo: q.ThenTo},
			func(r *dbsqlc.TaskClaimByIDsRow) { c.add(dbsqlc.TaskClaimRow(*r), limit) })
	case len(p.Types) == 0:
		err = eachTaskClaim(ctx, e.db, q, func(r *dbsqlc.TaskClaimRow) { c.add(*r, limit) })
	case len(p.Types) == 1:
		err = eachTaskClaimOfType(ctx, e.db, dbsqlc.TaskClaimOfTypeParams{State: q.State,
			Excluded: q.Excluded, Type: p.Types[0], Now: q.Now, Limit: q.Limit, LeaseTokenHashes: q.LeaseTokenHashes, AgentTokenHashes: q.AgentTokenHashes,
			ClaimedBys: q.ClaimedBys, LeaseExpiresAts: q.LeaseExpiresAts, LeaseMss: q.LeaseMss,
			ToState: q.ToState, AttemptsAdded: q.AttemptsAdded, RunAfter: q.RunAfter, ThenTo: q.ThenTo},
			func(r *dbsqlc.TaskClaimOfTypeRow) { c.add(dbsqlc.TaskClaimRow(*r), limit) })
	default:
		err = eachTaskClaimOfTypes(ctx, e.db, dbsqlc.TaskClaimOfTypesParams{State: q.State,
			Excluded: q.Excluded, Types: p.Types, Now: q.Now, Limit: q.Limit, LeaseTokenHashes: q.LeaseTokenHashes, AgentTokenHashes: q.AgentTokenHashes,
			ClaimedBys: q.ClaimedBys, LeaseExpiresAts: q.LeaseExpiresAts, LeaseMss: q.LeaseMss,
			ToState: q.ToState, AttemptsAdded: q.AttemptsAdded, RunAfter: q.RunAfter, ThenTo: q.ThenTo},
			func(r *dbsqlc.TaskClaimOfTypesRow) { c.add(dbsqlc.TaskClaimRow(*r), limit) })
	}
	if err != nil {
		return nil, mapErr("task claim", err)
	}
	return c.rows, nil
}

// claimPrealloc bounds the rows a claim makes room for at its first row:
// a claim is often of fewer rows than its limit (the queue runs dry), and
// room for thousands would be made for a few; past it the slice grows.
const claimPrealloc = 64

// claimed gathers the rows of one of the three claim forms (the same
// columns, converted to the first form's type) as the driver's, read
// straight from the scan (eachTaskClaim…): nil for none.
type claimed struct{ rows []driver.TaskClaimed }

// add appends r, of a claim of at most limit rows.
func (c *claimed) add(r dbsqlc.TaskClaimRow, limit int) {
	if c.rows == nil {
		c.rows = make([]driver.TaskClaimed, 0, min(limit, claimPrealloc))
	}
	t := driver.TaskClaimed{TaskRow: taskRowOfTaskClaimRow(r)}
	if len(r.DependsOn) > 0 {
		t.DependsOn = r.DependsOn
	}
	c.rows = append(c.rows, t)
}

// nonNil is s, or an empty list for nil (a nil slice is a NULL array,
// and x <> ALL(NULL) is NULL, not true).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// TaskEventInsertMany implements driver.TaskExecutor.
func (e *executor) TaskEventInsertMany(ctx context.Context, events []driver.TaskEventRow) error {
	if len(events) == 0 {
		return nil
	}
	if len(events) == 1 {
		return mapErr(fmt.Sprintf("event of task %d", events[0].TaskID),
			e.d.q.TaskEventInsert(ctx, e.db, taskEventInsertParams(events[0])))
	}
	return mapErr("task event insert", e.d.q.TaskEventInsertMany(ctx, e.db, taskEventInsertManyParams(events)))
}

// TaskDedupeFindMany implements driver.TaskExecutor: one statement.
func (e *executor) TaskDedupeFindMany(ctx context.Context, p driver.TaskDedupeFindManyParams) ([]driver.TaskDedupeHit, error) {
	if len(p.Keys) == 0 {
		return nil, nil
	}
	rows, err := e.d.q.TaskDedupeFindMany(ctx, e.db, dbsqlc.TaskDedupeFindManyParams{Keys: p.Keys, Terminal: nonNil(p.Terminal)})
	if err != nil {
		return nil, mapErr("task dedupe find", err)
	}
	out := make([]driver.TaskDedupeHit, len(rows))
	for i, r := range rows {
		out[i] = driver.TaskDedupeHit{Key: r.DedupeKey, ID: r.TaskID, Terminal: r.Terminal}
	}
	return out, nil
}

// TaskEventMinutes implements driver.TaskExecutor.
func (e *executor) TaskEventMinutes(ctx context.Context, p driver.TaskEventWindowParams) ([]driver.TaskEventMinute, error) {
	rows, err := e.d.q.TaskEventMinutes(ctx, e.db, dbsqlc.TaskEventMinutesParams{Since: driver.Time(p.Since), Until: driver.Time(p.Until)})
	if err != nil {
		return nil, mapErr("task event minutes", err)
	}
	out := make([]driver.TaskEventMinute, len(rows))
	for i, r := range rows {
		out[i] = driver.TaskEventMinute{Minute: driver.Time(r.Minute), From: r.FromState, To: r.ToState, Count: int(r.Count)}
	}
	return out, nil
}

// TaskCountByState implements driver.TaskExecutor: a selection by state
// alone (the board's chips, the charts) is counted from the state indexes
// (TaskCountByStateAll); a filtered one reads the rows it filters.
func (e *executor) TaskCountByState(ctx context.Context, p driver.TaskCountParams) ([]driver.TaskStateCount, error) {
	if !p.ByStateAlone() {
		x, err := e.d.q.TaskCountByState(ctx, e.db, taskCountByStateParams(p))
		if err != nil {
			return nil, mapErr("task count by state", err)
		}
		return taskStateCountsOf(x), nil
	}
	all, err := e.d.q.TaskCountByStateAll(ctx, e.db)
	if err != nil {
		return nil, mapErr("task count by state", err)
	}
	out := make([]driver.TaskStateCount, len(all))
	for i, r := range all {
		out[i] = driver.TaskStateCount{State: r.State, Count: int(r.Count)}
	}
	return driver.InStates(out, p.States), nil
}

// TaskTypesDue implements driver.TaskExecutor.
func (e *executor) TaskTypesDue(ctx context.Context, now time.Time) ([]driver.TaskTypeDue, error) {
	rows, err := e.d.q.TaskTypesDue(ctx, e.db, nullTime(now))
	if err != nil {
		return nil, mapErr("task types due", err)
	}
	out := make([]driver.TaskTypeDue, len(rows))
	for i, r := range rows {
		out[i] = driver.TaskTypeDue{Type: r.Type, Due: int(r.Due), Since: driver.Time(r.DueSince)}
	}
	return out, nil
}

// TaskNextDue implements driver.TaskExecutor.
func (e *executor) TaskNextDue(ctx context.Context, now time.Time) (time.Time, error) {
	t, err := e.d.q.TaskNextDue(ctx, e.db, nullTime(now))
	if err = mapErr("task next due", err); errors.Is(err, driver.ErrNoRows) {
		return time.Time{}, nil
	}
	return fromNullTime(t), err
}

// TaskTypesHeld implements driver.TaskExecutor.
func (e *executor) TaskTypesHeld(ctx context.Context) ([]string, error) {
	types, err := e.d.q.TaskTypesHeld(ctx, e.db)
	return types, mapErr("task types held", err)
}
