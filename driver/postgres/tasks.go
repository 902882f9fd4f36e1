package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/postgres/internal/dbsqlc"
	"github.com/cks-dev/cks/store"
)

// The bulk queries take one array per column. An array element cannot be
// NULL from a Go slice, so a NULL time is sent as the zero time and a NULL
// parent as 0, which the queries turn back into NULL (NULLIF). A single
// row goes through the one-row form of a query (plain parameters): for one
// row, arrays cost Postgres more than they save.

// arrayTime is t as an element of a timestamptz array: store.Time, or the
// zero time for NULL.
func arrayTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return store.Time(t)
}

// TaskInsertMany implements driver.TaskExecutor. The rows come back in the
// order of their ids, which is input order: one statement draws them from
// the sequence row by row.
func (e *executor) TaskInsertMany(ctx context.Context, rows []driver.TaskRow) ([]driver.TaskRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	if len(rows) == 1 {
		r := rows[0]
		stored, err := e.d.q.TaskInsert(ctx, e.db, dbsqlc.TaskInsertParams{
			Type: r.Type, Title: r.Title, Description: r.Description, AcceptanceCriteria: r.AcceptanceCriteria,
			Payload: []byte(jsonText(r.Payload)), State: r.State, Priority: int32(r.Priority),
			Attempts: int32(r.Attempts), MaxAttempts: int32(r.MaxAttempts), Restarts: int32(r.Restarts),
			Revision: int32(r.Revision), ParentID: nullable.Int(r.ParentID), DedupeKey: r.DedupeKey,
			CreatedBy: r.CreatedBy, ClaimedBy: r.ClaimedBy, ClaimedAt: nullTime(r.ClaimedAt),
			LeaseTokenHash: r.LeaseTokenHash, LeaseExpiresAt: nullTime(r.LeaseExpiresAt),
			LeaseRenewedAt: nullTime(r.LeaseRenewedAt), LeaseMs: r.LeaseMs, RunAfter: nullTime(r.RunAfter),
			Result: r.Result, LastError: r.LastError, Question: r.Question, Answer: r.Answer,
			ReviewNote: r.ReviewNote, CreatedAt: store.Time(r.CreatedAt), UpdatedAt: store.Time(r.UpdatedAt),
			StateChangedAt: nullTime(r.StateChangedAt), Metadata: []byte(jsonText(r.Metadata)),
		})
		if err != nil {
			return nil, mapErr("task insert", err)
		}
		return taskRows([]dbsqlc.CksOutboxTask{stored}), nil
	}
	var a dbsqlc.TaskInsertManyParams
	for _, r := range rows {
		a.Types = append(a.Types, r.Type)
		a.Titles = append(a.Titles, r.Title)
		a.Descriptions = append(a.Descriptions, r.Description)
		a.AcceptanceCriterias = append(a.AcceptanceCriterias, r.AcceptanceCriteria)
		a.Payloads = append(a.Payloads, jsonText(r.Payload))
		a.States = append(a.States, r.State)
		a.Priorities = append(a.Priorities, int32(r.Priority))
		a.Attemptss = append(a.Attemptss, int32(r.Attempts))
		a.MaxAttemptss = append(a.MaxAttemptss, int32(r.MaxAttempts))
		a.Restartss = append(a.Restartss, int32(r.Restarts))
		a.Revisions = append(a.Revisions, int32(r.Revision))
		a.ParentIds = append(a.ParentIds, r.ParentID)
		a.DedupeKeys = append(a.DedupeKeys, r.DedupeKey)
		a.CreatedBys = append(a.CreatedBys, r.CreatedBy)
		a.ClaimedBys = append(a.ClaimedBys, r.ClaimedBy)
		a.ClaimedAts = append(a.ClaimedAts, arrayTime(r.ClaimedAt))
		a.LeaseTokenHashes = append(a.LeaseTokenHashes, r.LeaseTokenHash)
		a.LeaseExpiresAts = append(a.LeaseExpiresAts, arrayTime(r.LeaseExpiresAt))
		a.LeaseRenewedAts = append(a.LeaseRenewedAts, arrayTime(r.LeaseRenewedAt))
		a.LeaseMss = append(a.LeaseMss, r.LeaseMs)
		a.RunAfters = append(a.RunAfters, arrayTime(r.RunAfter))
		a.Results = append(a.Results, r.Result)
		a.LastErrors = append(a.LastErrors, r.LastError)
		a.Questions = append(a.Questions, r.Question)
		a.Answers = append(a.Answers, r.Answer)
		a.ReviewNotes = append(a.ReviewNotes, r.ReviewNote)
		a.CreatedAts = append(a.CreatedAts, store.Time(r.CreatedAt))
		a.UpdatedAts = append(a.UpdatedAts, store.Time(r.UpdatedAt))
		a.StateChangedAts = append(a.StateChangedAts, arrayTime(r.StateChangedAt))
		a.Metadatas = append(a.Metadatas, jsonText(r.Metadata))
	}
	inserted, err := e.d.q.TaskInsertMany(ctx, e.db, a)
	if err != nil {
		return nil, mapErr("task insert", err)
	}
	if len(inserted) != len(rows) {
		return nil, fmt.Errorf("postgres: task insert: %d rows back for %d", len(inserted), len(rows))
	}
	slices.SortFunc(inserted, func(x, y dbsqlc.CksOutboxTask) int { return cmp.Compare(x.TaskID, y.TaskID) })
	return taskRows(inserted), nil
}

// jsonText is a JSON column's value as the text the query casts to jsonb;
// an empty one is the empty object (the column's default).
func jsonText(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

// TaskGetMany implements driver.TaskExecutor.
func (e *executor) TaskGetMany(ctx context.Context, p driver.TaskGetManyParams) ([]driver.TaskRow, error) {
	if len(p.IDs) == 0 {
		return nil, nil
	}
	var get func(context.Context, dbsqlc.DBTX, []int64) ([]dbsqlc.CksOutboxTask, error)
	switch p.Lock {
	case driver.LockNone:
		get = e.d.q.TaskGetMany
	case driver.LockUpdate:
		get = e.d.q.TaskGetManyForUpdate
	case driver.LockUpdateSkip:
		get = e.d.q.TaskGetManyForUpdateSkip
	case driver.LockShare:
		get = e.d.q.TaskGetManyForShare
	default:
		return nil, fmt.Errorf("postgres: task get: unknown lock %d", p.Lock)
	}
	rows, err := get(ctx, e.db, p.IDs)
	if err != nil {
		return nil, mapErr("task get", err)
	}
	return taskRows(rows), nil
}

// TaskUpdateMany implements driver.TaskExecutor: one statement, by
// primary key.
func (e *executor) TaskUpdateMany(ctx context.Context, rows []driver.TaskRow) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if len(rows) == 1 {
		r := rows[0]
		n, err := e.d.q.TaskUpdate(ctx, e.db, dbsqlc.TaskUpdateParams{
			TaskID: r.ID, Title: r.Title, Description: r.Description, AcceptanceCriteria: r.AcceptanceCriteria,
			Payload: []byte(jsonText(r.Payload)), State: r.State, Priority: int32(r.Priority),
			Attempts: int32(r.Attempts), MaxAttempts: int32(r.MaxAttempts), Restarts: int32(r.Restarts),
			Revision: int32(r.Revision), ParentID: nullable.Int(r.ParentID), DedupeKey: r.DedupeKey,
			ClaimedBy: r.ClaimedBy, ClaimedAt: nullTime(r.ClaimedAt), LeaseTokenHash: r.LeaseTokenHash,
			LeaseExpiresAt: nullTime(r.LeaseExpiresAt), LeaseRenewedAt: nullTime(r.LeaseRenewedAt),
			LeaseMs: r.LeaseMs, RunAfter: nullTime(r.RunAfter), Result: r.Result, LastError: r.LastError,
			Question: r.Question, Answer: r.Answer, ReviewNote: r.ReviewNote, UpdatedAt: store.Time(r.UpdatedAt),
			StateChangedAt: nullTime(r.StateChangedAt), Metadata: []byte(jsonText(r.Metadata)),
		})
		return int(n), mapErr(fmt.Sprintf("task update %d", r.ID), err)
	}
	var a dbsqlc.TaskUpdateManyParams
	for _, r := range rows {
		a.TaskIds = append(a.TaskIds, r.ID)
		a.Titles = append(a.Titles, r.Title)
		a.Descriptions = append(a.Descriptions, r.Description)
		a.AcceptanceCriterias = append(a.AcceptanceCriterias, r.AcceptanceCriteria)
		a.Payloads = append(a.Payloads, jsonText(r.Payload))
		a.States = append(a.States, r.State)
		a.Priorities = append(a.Priorities, int32(r.Priority))
		a.Attemptss = append(a.Attemptss, int32(r.Attempts))
		a.MaxAttemptss = append(a.MaxAttemptss, int32(r.MaxAttempts))
		a.Restartss = append(a.Restartss, int32(r.Restarts))
		a.Revisions = append(a.Revisions, int32(r.Revision))
		a.ParentIds = append(a.ParentIds, r.ParentID)
		a.DedupeKeys = append(a.DedupeKeys, r.DedupeKey)
		a.ClaimedBys = append(a.ClaimedBys, r.ClaimedBy)
		a.ClaimedAts = append(a.ClaimedAts, arrayTime(r.ClaimedAt))
		a.LeaseTokenHashes = append(a.LeaseTokenHashes, r.LeaseTokenHash)
		a.LeaseExpiresAts = append(a.LeaseExpiresAts, arrayTime(r.LeaseExpiresAt))
		a.LeaseRenewedAts = append(a.LeaseRenewedAts, arrayTime(r.LeaseRenewedAt))
		a.LeaseMss = append(a.LeaseMss, r.LeaseMs)
		a.RunAfters = append(a.RunAfters, arrayTime(r.RunAfter))
		a.Results = append(a.Results, r.Result)
		a.LastErrors = append(a.LastErrors, r.LastError)
		a.Questions = append(a.Questions, r.Question)
		a.Answers = append(a.Answers, r.Answer)
		a.ReviewNotes = append(a.ReviewNotes, r.ReviewNote)
		a.UpdatedAts = append(a.UpdatedAts, store.Time(r.UpdatedAt))
		a.StateChangedAts = append(a.StateChangedAts, arrayTime(r.StateChangedAt))
		a.Metadatas = append(a.Metadatas, jsonText(r.Metadata))
	}
	n, err := e.d.q.TaskUpdateMany(ctx, e.db, a)
	return int(n), mapErr("task update", err)
}

// TaskClaimable implements driver.TaskExecutor.
func (e *executor) TaskClaimable(ctx context.Context, p driver.TaskClaimableParams) ([]driver.TaskRow, error) {
	now := store.Time(p.Now)
	var (
		rows []dbsqlc.CksOutboxTask
		err  error
	)
	switch len(p.Types) {
	case 0:
		rows, err = e.d.q.TaskClaimable(ctx, e.db, dbsqlc.TaskClaimableParams{
			State: p.State, Excluded: nonNil(p.Excluded), Now: &now, Max: int32(p.Limit)})
	case 1:
		rows, err = e.d.q.TaskClaimableOfType(ctx, e.db, dbsqlc.TaskClaimableOfTypeParams{
			State: p.State, Excluded: nonNil(p.Excluded), Type: p.Types[0], Now: &now, Max: int32(p.Limit)})
	default:
		rows, err = e.d.q.TaskClaimableOfTypes(ctx, e.db, dbsqlc.TaskClaimableOfTypesParams{
			State: p.State, Excluded: nonNil(p.Excluded), Types: p.Types, Now: &now, Max: int32(p.Limit)})
	}
	if err != nil {
		return nil, mapErr("task claimable", err)
	}
	return taskRows(rows), nil
}

// TaskClaim implements driver.TaskExecutor: one statement of the form
// TaskClaimable would use.
func (e *executor) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	limit := min(p.Limit, len(p.LeaseTokenHashes))
	if limit <= 0 {
		return nil, nil
	}
	now := store.Time(p.Now)
	q := dbsqlc.TaskClaimParams{State: p.State, Excluded: nonNil(p.Excluded), Now: &now, Max: int32(limit),
		LeaseTokenHashes: p.LeaseTokenHashes[:limit], ToState: p.To, AttemptsAdded: int32(p.AttemptsAdded),
		ClaimedBy: p.ClaimedBy, LeaseExpiresAt: store.Time(p.LeaseExpiresAt), LeaseMs: p.LeaseMs,
		RunAfter: nullTime(p.RunAfter), Reason: p.Reason, ThenTo: p.Then.To, ThenReason: p.Then.Reason}
	var (
		rows []dbsqlc.TaskClaimRow
		err  error
	)
	switch len(p.Types) {
	case 0:
		rows, err = e.d.q.TaskClaim(ctx, e.db, q)
	case 1:
		var typed []dbsqlc.TaskClaimOfTypeRow
		typed, err = e.d.q.TaskClaimOfType(ctx, e.db, dbsqlc.TaskClaimOfTypeParams{State: q.State,
			Excluded: q.Excluded, Type: p.Types[0], Now: q.Now, Max: q.Max, LeaseTokenHashes: q.LeaseTokenHashes,
			ToState: q.ToState, AttemptsAdded: q.AttemptsAdded, ClaimedBy: q.ClaimedBy,
			LeaseExpiresAt: q.LeaseExpiresAt, LeaseMs: q.LeaseMs, RunAfter: q.RunAfter, Reason: q.Reason,
			ThenTo: q.ThenTo, ThenReason: q.ThenReason})
		for _, r := range typed {
			rows = append(rows, dbsqlc.TaskClaimRow(r))
		}
	default:
		var typed []dbsqlc.TaskClaimOfTypesRow
		typed, err = e.d.q.TaskClaimOfTypes(ctx, e.db, dbsqlc.TaskClaimOfTypesParams{State: q.State,
			Excluded: q.Excluded, Types: p.Types, Now: q.Now, Max: q.Max, LeaseTokenHashes: q.LeaseTokenHashes,
			ToState: q.ToState, AttemptsAdded: q.AttemptsAdded, ClaimedBy: q.ClaimedBy,
			LeaseExpiresAt: q.LeaseExpiresAt, LeaseMs: q.LeaseMs, RunAfter: q.RunAfter, Reason: q.Reason,
			ThenTo: q.ThenTo, ThenReason: q.ThenReason})
		for _, r := range typed {
			rows = append(rows, dbsqlc.TaskClaimRow(r))
		}
	}
	if err != nil {
		return nil, mapErr("task claim", err)
	}
	out := make([]driver.TaskClaimed, len(rows))
	for i, r := range rows {
		row := taskRows([]dbsqlc.CksOutboxTask{{TaskID: r.TaskID, Type: r.Type, Title: r.Title,
			Description: r.Description, AcceptanceCriteria: r.AcceptanceCriteria, Payload: r.Payload,
			State: r.State, Priority: r.Priority, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
			Restarts: r.Restarts, Revision: r.Revision, ParentID: r.ParentID, DedupeKey: r.DedupeKey,
			CreatedBy: r.CreatedBy, ClaimedBy: r.ClaimedBy, ClaimedAt: r.ClaimedAt,
			LeaseTokenHash: r.LeaseTokenHash, LeaseExpiresAt: r.LeaseExpiresAt, LeaseRenewedAt: r.LeaseRenewedAt,
			LeaseMs: r.LeaseMs, RunAfter: r.RunAfter, Result: r.Result, LastError: r.LastError,
			Question: r.Question, Answer: r.Answer, ReviewNote: r.ReviewNote, CreatedAt: r.CreatedAt,
			UpdatedAt: r.UpdatedAt, StateChangedAt: r.StateChangedAt, Metadata: r.Metadata}})[0]
		var deps []int64
		if len(r.DependsOn) > 0 {
			deps = r.DependsOn
		}
		out[i] = driver.TaskClaimed{TaskRow: row, DependsOn: deps}
	}
	return out, nil
}

// nonNil is s, or an empty list for nil (a nil slice is a NULL array,
// and x <> ALL(NULL) is NULL, not true).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// TaskLeaseExpired implements driver.TaskExecutor.
func (e *executor) TaskLeaseExpired(ctx context.Context, p driver.TaskLeaseExpiredParams) ([]driver.TaskRow, error) {
	expired, renewed := store.Time(p.ExpiredAt), store.Time(p.RenewedBefore)
	rows, err := e.d.q.TaskLeaseExpired(ctx, e.db, dbsqlc.TaskLeaseExpiredParams{
		States: nonNil(p.States), Excluded: nonNil(p.Excluded), ExpiredAt: &expired,
		RenewedBefore: &renewed, Max: int32(p.Limit)})
	if err != nil {
		return nil, mapErr("task lease expired", err)
	}
	return taskRows(rows), nil
}

// TaskList implements driver.TaskExecutor.
func (e *executor) TaskList(ctx context.Context, p driver.TaskListParams) ([]driver.TaskRow, error) {
	rows, err := e.d.q.TaskList(ctx, e.db, dbsqlc.TaskListParams{
		After: p.After, States: nonNil(p.States), Types: nonNil(p.Types),
		StateChangedBefore: nullTime(p.StateChangedBefore), Max: int32(p.Limit)})
	if err != nil {
		return nil, mapErr("task list", err)
	}
	return taskRows(rows), nil
}

// TaskCount implements driver.TaskExecutor.
func (e *executor) TaskCount(ctx context.Context, p driver.TaskCountParams) (int, error) {
	n, err := e.d.q.TaskCount(ctx, e.db, dbsqlc.TaskCountParams{
		States: nonNil(p.States), Types: nonNil(p.Types), StateChangedBefore: nullTime(p.StateChangedBefore)})
	return int(n), mapErr("task count", err)
}

// TaskDedupeFind implements driver.TaskExecutor.
func (e *executor) TaskDedupeFind(ctx context.Context, p driver.TaskDedupeFindParams) (int64, error) {
	var (
		id  int64
		err error
	)
	if p.IncludeTerminal {
		id, err = e.d.q.TaskDedupeFindAny(ctx, e.db, dbsqlc.TaskDedupeFindAnyParams{Key: p.Key, Terminal: nonNil(p.Terminal)})
	} else {
		id, err = e.d.q.TaskDedupeFindLive(ctx, e.db, dbsqlc.TaskDedupeFindLiveParams{Key: p.Key, Terminal: nonNil(p.Terminal)})
	}
	return id, mapErr("task dedupe find", err)
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

// depArrays splits edges into the query's two arrays.
func depArrays(deps []driver.TaskDep) (tasks, dependsOn []int64) {
	for _, d := range deps {
		tasks = append(tasks, d.TaskID)
		dependsOn = append(dependsOn, d.DependsOn)
	}
	return tasks, dependsOn
}

// TaskDepInsertMany implements driver.TaskExecutor.
func (e *executor) TaskDepInsertMany(ctx context.Context, deps []driver.TaskDep) error {
	if len(deps) == 0 {
		return nil
	}
	tasks, on := depArrays(deps)
	return mapErr("task dependency insert", e.d.q.TaskDepInsertMany(ctx, e.db,
		dbsqlc.TaskDepInsertManyParams{TaskIds: tasks, DependsOns: on}))
}

// TaskDepDeleteMany implements driver.TaskExecutor.
func (e *executor) TaskDepDeleteMany(ctx context.Context, deps []driver.TaskDep) error {
	if len(deps) == 0 {
		return nil
	}
	tasks, on := depArrays(deps)
	return mapErr("task dependency delete", e.d.q.TaskDepDeleteMany(ctx, e.db,
		dbsqlc.TaskDepDeleteManyParams{TaskIds: tasks, DependsOns: on}))
}

// TaskDepList implements driver.TaskExecutor.
func (e *executor) TaskDepList(ctx context.Context, ids []int64) ([]driver.TaskDep, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := e.d.q.TaskDepList(ctx, e.db, ids)
	if err != nil {
		return nil, mapErr("task dependency list", err)
	}
	out := make([]driver.TaskDep, len(rows))
	for i, r := range rows {
		out[i] = driver.TaskDep{TaskID: r.TaskID, DependsOn: r.DependsOn}
	}
	return out, nil
}

// TaskDepListAdjacent implements driver.TaskExecutor.
func (e *executor) TaskDepListAdjacent(ctx context.Context, ids []int64) ([]driver.TaskDep, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := e.d.q.TaskDepListAdjacent(ctx, e.db, ids)
	if err != nil {
		return nil, mapErr("task dependency list", err)
	}
	out := make([]driver.TaskDep, len(rows))
	for i, r := range rows {
		out[i] = driver.TaskDep{TaskID: r.TaskID, DependsOn: r.DependsOn}
	}
	return out, nil
}

// TaskDependants implements driver.TaskExecutor.
func (e *executor) TaskDependants(ctx context.Context, p driver.TaskDependantsParams) ([]driver.TaskRow, error) {
	if len(p.DependsOn) == 0 {
		return nil, nil
	}
	var (
		rows []dbsqlc.CksOutboxTask
		err  error
	)
	switch p.Lock {
	case driver.LockNone:
		rows, err = e.d.q.TaskDependants(ctx, e.db, dbsqlc.TaskDependantsParams{DependsOns: p.DependsOn, State: p.State})
	case driver.LockUpdate:
		rows, err = e.d.q.TaskDependantsForUpdate(ctx, e.db, dbsqlc.TaskDependantsForUpdateParams{DependsOns: p.DependsOn, State: p.State})
	case driver.LockUpdateSkip:
		rows, err = e.d.q.TaskDependantsForUpdateSkip(ctx, e.db, dbsqlc.TaskDependantsForUpdateSkipParams{DependsOns: p.DependsOn, State: p.State})
	case driver.LockShare:
		rows, err = e.d.q.TaskDependantsForShare(ctx, e.db, dbsqlc.TaskDependantsForShareParams{DependsOns: p.DependsOn, State: p.State})
	default:
		return nil, fmt.Errorf("postgres: task dependants: unknown lock %d", p.Lock)
	}
	if err != nil {
		return nil, mapErr("task dependants", err)
	}
	return taskRows(rows), nil
}

// TaskLockDependencyGraph implements driver.TaskExecutor with a
// transaction-scoped advisory lock of the schema.
func (e *executor) TaskLockDependencyGraph(ctx context.Context) error {
	return mapErr("task dependency graph lock", e.d.q.TaskLockDependencyGraph(ctx, e.db))
}

// TaskEventInsertMany implements driver.TaskExecutor.
func (e *executor) TaskEventInsertMany(ctx context.Context, events []driver.TaskEventRow) error {
	if len(events) == 0 {
		return nil
	}
	if len(events) == 1 {
		ev := events[0]
		return mapErr(fmt.Sprintf("event of task %d", ev.TaskID), e.d.q.TaskEventInsert(ctx, e.db, dbsqlc.TaskEventInsertParams{
			TaskID: ev.TaskID, At: store.Time(ev.At), Actor: ev.Actor, FromState: ev.From, ToState: ev.To,
			Attempt: int32(ev.Attempt), Reason: ev.Reason}))
	}
	var a dbsqlc.TaskEventInsertManyParams
	for _, ev := range events {
		a.TaskIds = append(a.TaskIds, ev.TaskID)
		a.Ats = append(a.Ats, store.Time(ev.At))
		a.Actors = append(a.Actors, ev.Actor)
		a.FromStates = append(a.FromStates, ev.From)
		a.ToStates = append(a.ToStates, ev.To)
		a.Attempts = append(a.Attempts, int32(ev.Attempt))
		a.Reasons = append(a.Reasons, ev.Reason)
	}
	return mapErr("task event insert", e.d.q.TaskEventInsertMany(ctx, e.db, a))
}

// TaskEventList implements driver.TaskExecutor.
func (e *executor) TaskEventList(ctx context.Context, taskID int64) ([]driver.TaskEventRow, error) {
	rows, err := e.d.q.TaskEventList(ctx, e.db, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("events of task %d", taskID), err)
	}
	out := make([]driver.TaskEventRow, len(rows))
	for i, r := range rows {
		out[i] = driver.TaskEventRow{ID: r.EventID, TaskID: r.TaskID, At: store.Time(r.At), Actor: r.Actor,
			From: r.FromState, To: r.ToState, Attempt: int(r.Attempt), Reason: r.Reason}
	}
	return out, nil
}

// EvidenceInsert implements driver.TaskExecutor.
func (e *executor) EvidenceInsert(ctx context.Context, ev driver.EvidenceRow) (driver.EvidenceRow, error) {
	r, err := e.d.q.EvidenceInsert(ctx, e.db, dbsqlc.EvidenceInsertParams{
		TaskID: ev.TaskID, Attempt: int32(ev.Attempt), Restart: int32(ev.Restart), Revision: int32(ev.Revision),
		Kind: ev.Kind, Body: ev.Body, Actor: ev.Actor, CreatedAt: store.Time(ev.CreatedAt)})
	if err != nil {
		return driver.EvidenceRow{}, mapErr(fmt.Sprintf("evidence of task %d", ev.TaskID), err)
	}
	return evidenceRow(r), nil
}

// EvidenceList implements driver.TaskExecutor.
func (e *executor) EvidenceList(ctx context.Context, taskID int64) ([]driver.EvidenceRow, error) {
	rows, err := e.d.q.EvidenceList(ctx, e.db, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("evidence of task %d", taskID), err)
	}
	out := make([]driver.EvidenceRow, len(rows))
	for i, r := range rows {
		out[i] = evidenceRow(r)
	}
	return out, nil
}

func evidenceRow(r dbsqlc.CksTaskEvidence) driver.EvidenceRow {
	return driver.EvidenceRow{ID: r.EvidenceID, TaskID: r.TaskID, Attempt: int(r.Attempt), Restart: int(r.Restart),
		Revision: int(r.Revision), Kind: r.Kind, Body: r.Body, Actor: r.Actor, CreatedAt: store.Time(r.CreatedAt)}
}

// DecisionInsert implements driver.TaskExecutor.
func (e *executor) DecisionInsert(ctx context.Context, d driver.DecisionRow) (driver.DecisionRow, error) {
	r, err := e.d.q.DecisionInsert(ctx, e.db, dbsqlc.DecisionInsertParams{
		TaskID: d.TaskID, Attempt: int32(d.Attempt), Restart: int32(d.Restart), Revision: int32(d.Revision),
		DerivedFromRevision: int32(d.DerivedFromRevision), Kind: d.Kind, Text: d.Text, Actor: d.Actor,
		CreatedAt: store.Time(d.CreatedAt)})
	if err != nil {
		return driver.DecisionRow{}, mapErr(fmt.Sprintf("decision of task %d", d.TaskID), err)
	}
	return decisionRow(r), nil
}

// DecisionList implements driver.TaskExecutor.
func (e *executor) DecisionList(ctx context.Context, taskID int64) ([]driver.DecisionRow, error) {
	rows, err := e.d.q.DecisionList(ctx, e.db, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("decisions of task %d", taskID), err)
	}
	out := make([]driver.DecisionRow, len(rows))
	for i, r := range rows {
		out[i] = decisionRow(r)
	}
	return out, nil
}

func decisionRow(r dbsqlc.CksTaskDecision) driver.DecisionRow {
	return driver.DecisionRow{ID: r.DecisionID, TaskID: r.TaskID, Attempt: int(r.Attempt), Restart: int(r.Restart),
		Revision: int(r.Revision), DerivedFromRevision: int(r.DerivedFromRevision), Kind: r.Kind, Text: r.Text,
		Actor: r.Actor, CreatedAt: store.Time(r.CreatedAt)}
}

// AbortInsert implements driver.TaskExecutor.
func (e *executor) AbortInsert(ctx context.Context, a driver.AbortRow) (driver.AbortRow, error) {
	r, err := e.d.q.AbortInsert(ctx, e.db, dbsqlc.AbortInsertParams{
		TaskID: a.TaskID, LeaseTokenHash: a.LeaseTokenHash, Executor: a.Executor, Attempt: int32(a.Attempt),
		Restart: int32(a.Restart), RequestedBy: a.RequestedBy, Reason: a.Reason,
		RequestedAt: store.Time(a.RequestedAt), DeadlineAt: store.Time(a.DeadlineAt), Outcome: a.Outcome,
		ResolvedAt: nullTime(a.ResolvedAt)})
	if err != nil {
		return driver.AbortRow{}, mapErr(fmt.Sprintf("abort of task %d", a.TaskID), err)
	}
	return abortRow(r), nil
}

// AbortGet implements driver.TaskExecutor.
func (e *executor) AbortGet(ctx context.Context, p driver.AbortGetParams) (driver.AbortRow, error) {
	var (
		r   dbsqlc.CksTaskAbort
		err error
	)
	switch p.Lock {
	case driver.LockNone:
		r, err = e.d.q.AbortGet(ctx, e.db, p.ID)
	case driver.LockUpdate:
		r, err = e.d.q.AbortGetForUpdate(ctx, e.db, p.ID)
	default:
		return driver.AbortRow{}, fmt.Errorf("postgres: abort get: unsupported lock %d", p.Lock)
	}
	if err != nil {
		return driver.AbortRow{}, mapErr(fmt.Sprintf("abort %d", p.ID), err)
	}
	return abortRow(r), nil
}

// AbortFindLatest implements driver.TaskExecutor.
func (e *executor) AbortFindLatest(ctx context.Context, p driver.AbortFindLatestParams) (driver.AbortRow, error) {
	var (
		r   dbsqlc.CksTaskAbort
		err error
	)
	switch p.Lock {
	case driver.LockNone:
		r, err = e.d.q.AbortFindLatest(ctx, e.db, dbsqlc.AbortFindLatestParams{TaskID: p.TaskID, LeaseTokenHash: p.LeaseTokenHash})
	case driver.LockUpdate:
		r, err = e.d.q.AbortFindLatestForUpdate(ctx, e.db, dbsqlc.AbortFindLatestForUpdateParams{TaskID: p.TaskID, LeaseTokenHash: p.LeaseTokenHash})
	default:
		return driver.AbortRow{}, fmt.Errorf("postgres: abort find: unsupported lock %d", p.Lock)
	}
	if err != nil {
		return driver.AbortRow{}, mapErr(fmt.Sprintf("abort of task %d", p.TaskID), err)
	}
	return abortRow(r), nil
}

// AbortUpdateMany implements driver.TaskExecutor.
func (e *executor) AbortUpdateMany(ctx context.Context, aborts []driver.AbortRow) (int, error) {
	if len(aborts) == 0 {
		return 0, nil
	}
	var a dbsqlc.AbortUpdateManyParams
	for _, ab := range aborts {
		a.AbortIds = append(a.AbortIds, ab.ID)
		a.Outcomes = append(a.Outcomes, ab.Outcome)
		a.ResolvedAts = append(a.ResolvedAts, arrayTime(ab.ResolvedAt))
	}
	n, err := e.d.q.AbortUpdateMany(ctx, e.db, a)
	return int(n), mapErr("abort update", err)
}

// AbortList implements driver.TaskExecutor.
func (e *executor) AbortList(ctx context.Context, taskID int64) ([]driver.AbortRow, error) {
	rows, err := e.d.q.AbortList(ctx, e.db, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("aborts of task %d", taskID), err)
	}
	return abortRows(rows), nil
}

// AbortLatestMany implements driver.TaskExecutor.
func (e *executor) AbortLatestMany(ctx context.Context, taskIDs []int64) ([]driver.AbortRow, error) {
	if len(taskIDs) == 0 {
		return nil, nil
	}
	rows, err := e.d.q.AbortLatestMany(ctx, e.db, taskIDs)
	if err != nil {
		return nil, mapErr("latest aborts", err)
	}
	return abortRows(rows), nil
}

// AbortPendingDue implements driver.TaskExecutor.
func (e *executor) AbortPendingDue(ctx context.Context, p driver.AbortPendingDueParams) ([]driver.AbortRow, error) {
	rows, err := e.d.q.AbortPendingDue(ctx, e.db, dbsqlc.AbortPendingDueParams{
		Outcome: p.Outcome, Now: store.Time(p.Now), Max: int32(p.Limit)})
	if err != nil {
		return nil, mapErr("aborts due", err)
	}
	return abortRows(rows), nil
}

func abortRow(r dbsqlc.CksTaskAbort) driver.AbortRow {
	return driver.AbortRow{ID: r.AbortID, TaskID: r.TaskID, LeaseTokenHash: r.LeaseTokenHash, Executor: r.Executor,
		Attempt: int(r.Attempt), Restart: int(r.Restart), RequestedBy: r.RequestedBy, Reason: r.Reason,
		RequestedAt: store.Time(r.RequestedAt), DeadlineAt: store.Time(r.DeadlineAt), Outcome: r.Outcome,
		ResolvedAt: fromNullTime(r.ResolvedAt)}
}

func abortRows(rows []dbsqlc.CksTaskAbort) []driver.AbortRow {
	out := make([]driver.AbortRow, len(rows))
	for i, r := range rows {
		out[i] = abortRow(r)
	}
	return out
}

func taskRows(rows []dbsqlc.CksOutboxTask) []driver.TaskRow {
	out := make([]driver.TaskRow, len(rows))
	for i, r := range rows {
		out[i] = driver.TaskRow{
			ID:                 r.TaskID,
			Type:               r.Type,
			Title:              r.Title,
			Description:        r.Description,
			AcceptanceCriteria: r.AcceptanceCriteria,
			Payload:            r.Payload,
			State:              r.State,
			Priority:           int(r.Priority),
			Attempts:           int(r.Attempts),
			MaxAttempts:        int(r.MaxAttempts),
			Restarts:           int(r.Restarts),
			Revision:           int(r.Revision),
			ParentID:           nullable.Deref(r.ParentID),
			DedupeKey:          r.DedupeKey,
			CreatedBy:          r.CreatedBy,
			ClaimedBy:          r.ClaimedBy,
			ClaimedAt:          fromNullTime(r.ClaimedAt),
			LeaseTokenHash:     r.LeaseTokenHash,
			LeaseExpiresAt:     fromNullTime(r.LeaseExpiresAt),
			LeaseRenewedAt:     fromNullTime(r.LeaseRenewedAt),
			LeaseMs:            r.LeaseMs,
			RunAfter:           fromNullTime(r.RunAfter),
			Result:             r.Result,
			LastError:          r.LastError,
			Question:           r.Question,
			Answer:             r.Answer,
			ReviewNote:         r.ReviewNote,
			CreatedAt:          store.Time(r.CreatedAt),
			UpdatedAt:          store.Time(r.UpdatedAt),
			StateChangedAt:     fromNullTime(r.StateChangedAt),
			Metadata:           r.Metadata,
		}
	}
	return out
}
