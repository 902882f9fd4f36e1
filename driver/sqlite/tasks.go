package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/internal/nullable"
	"github.com/cks-dev/cks/driver/sqlite/internal/dbsqlc"
)

// SQLite has one writer, so every Lock a caller asks for is already held:
// the primitives ignore it. The bulk writes run one prepared statement per
// row inside the caller's write transaction (or one of their own).

// jsonText is a JSON column's value; an empty one is the empty object (the
// column's default).
func jsonText(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

// TaskInsertMany implements driver.TaskExecutor.
func (e *executor) TaskInsertMany(ctx context.Context, rows []driver.TaskRow) ([]driver.TaskRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	var out []driver.TaskRow
	err := e.write(ctx, "task insert", func(w *wtx) error {
		out = make([]driver.TaskRow, 0, len(rows))
		for _, r := range rows {
			stored, err := e.d.q.TaskInsert(ctx, w, dbsqlc.TaskInsertParams{
				Type:               r.Type,
				Title:              r.Title,
				Description:        r.Description,
				AcceptanceCriteria: r.AcceptanceCriteria,
				Payload:            jsonText(r.Payload),
				State:              r.State,
				Priority:           int64(r.Priority),
				Attempts:           int64(r.Attempts),
				MaxAttempts:        int64(r.MaxAttempts),
				Restarts:           int64(r.Restarts),
				Revision:           int64(r.Revision),
				ParentID:           nullable.Int(r.ParentID),
				DedupeKey:          r.DedupeKey,
				CreatedBy:          r.CreatedBy,
				ClaimedBy:          r.ClaimedBy,
				ClaimedAt:          fmtNullTime(r.ClaimedAt),
				LeaseTokenHash:     r.LeaseTokenHash,
				LeaseExpiresAt:     fmtNullTime(r.LeaseExpiresAt),
				LeaseRenewedAt:     fmtNullTime(r.LeaseRenewedAt),
				LeaseMs:            r.LeaseMs,
				RunAfter:           fmtNullTime(r.RunAfter),
				Result:             r.Result,
				LastError:          r.LastError,
				Question:           r.Question,
				Answer:             r.Answer,
				ReviewNote:         r.ReviewNote,
				CreatedAt:          fmtTime(r.CreatedAt),
				UpdatedAt:          fmtTime(r.UpdatedAt),
				StateChangedAt:     fmtNullTime(r.StateChangedAt),
				Metadata:           jsonText(r.Metadata),
			})
			if err != nil {
				return mapErr("task insert", err)
			}
			t, err := taskRow(stored)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TaskGetMany implements driver.TaskExecutor.
func (e *executor) TaskGetMany(ctx context.Context, p driver.TaskGetManyParams) ([]driver.TaskRow, error) {
	if len(p.IDs) == 0 {
		return nil, nil
	}
	var (
		rows []dbsqlc.CksOutboxTask
		err  error
	)
	if len(p.IDs) == 1 {
		rows, err = e.d.q.TaskGet(ctx, e.read, p.IDs[0])
	} else {
		rows, err = e.d.q.TaskGetMany(ctx, e.read, jsonList(p.IDs))
	}
	if err != nil {
		return nil, mapErr("task get", err)
	}
	return taskRows(rows)
}

// TaskUpdateMany implements driver.TaskExecutor.
func (e *executor) TaskUpdateMany(ctx context.Context, rows []driver.TaskRow) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	var n int64
	err := e.write(ctx, "task update", func(w *wtx) error {
		n = 0
		for _, r := range rows {
			k, err := e.d.q.TaskUpdate(ctx, w, dbsqlc.TaskUpdateParams{
				TaskID:             r.ID,
				Title:              r.Title,
				Description:        r.Description,
				AcceptanceCriteria: r.AcceptanceCriteria,
				Payload:            jsonText(r.Payload),
				State:              r.State,
				Priority:           int64(r.Priority),
				Attempts:           int64(r.Attempts),
				MaxAttempts:        int64(r.MaxAttempts),
				Restarts:           int64(r.Restarts),
				Revision:           int64(r.Revision),
				ParentID:           nullable.Int(r.ParentID),
				DedupeKey:          r.DedupeKey,
				ClaimedBy:          r.ClaimedBy,
				ClaimedAt:          fmtNullTime(r.ClaimedAt),
				LeaseTokenHash:     r.LeaseTokenHash,
				LeaseExpiresAt:     fmtNullTime(r.LeaseExpiresAt),
				LeaseRenewedAt:     fmtNullTime(r.LeaseRenewedAt),
				LeaseMs:            r.LeaseMs,
				RunAfter:           fmtNullTime(r.RunAfter),
				Result:             r.Result,
				LastError:          r.LastError,
				Question:           r.Question,
				Answer:             r.Answer,
				ReviewNote:         r.ReviewNote,
				UpdatedAt:          fmtTime(r.UpdatedAt),
				StateChangedAt:     fmtNullTime(r.StateChangedAt),
				Metadata:           jsonText(r.Metadata),
			})
			if err != nil {
				return mapErr(fmt.Sprintf("task update %d", r.ID), err)
			}
			n += k
		}
		return nil
	})
	return int(n), err
}

// TaskClaimable implements driver.TaskExecutor.
func (e *executor) TaskClaimable(ctx context.Context, p driver.TaskClaimableParams) ([]driver.TaskRow, error) {
	now := fmtTime(p.Now)
	var (
		rows []dbsqlc.CksOutboxTask
		err  error
	)
	if len(p.Types) == 1 {
		rows, err = e.d.q.TaskClaimableOfType(ctx, e.read, dbsqlc.TaskClaimableOfTypeParams{
			State: p.State, Excluded: jsonList(p.Excluded), Type: p.Types[0], Now: &now, Max: int64(p.Limit)})
	} else {
		rows, err = e.d.q.TaskClaimable(ctx, e.read, dbsqlc.TaskClaimableParams{
			State: p.State, Excluded: jsonList(p.Excluded), AnyType: len(p.Types) == 0,
			Types: jsonList(p.Types), Now: &now, Max: int64(p.Limit)})
	}
	if err != nil {
		return nil, mapErr("task claimable", err)
	}
	return taskRows(rows)
}

// TaskClaim implements driver.TaskExecutor with TaskClaimable's read and
// one prepared update and event insert per row, in the one writer's
// transaction (SQLite has no round trip to save).
func (e *executor) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	limit := min(p.Limit, len(p.LeaseTokenHashes))
	if limit <= 0 {
		return nil, nil
	}
	var out []driver.TaskClaimed
	err := e.write(ctx, "task claim", func(w *wtx) error {
		out = nil
		in := &executor{d: e.d, read: w, tx: w}
		sel := p.TaskClaimableParams
		sel.Limit = limit
		rows, err := in.TaskClaimable(ctx, sel)
		if err != nil || len(rows) == 0 {
			return err
		}
		events := make([]driver.TaskEventRow, 0, 2*len(rows))
		ids := make([]int64, len(rows))
		for i := range rows {
			r := &rows[i]
			r.State, r.Attempts, r.ClaimedBy, r.ClaimedAt = p.To, r.Attempts+p.AttemptsAdded, p.ClaimedBy, p.Now
			r.LeaseTokenHash, r.LeaseExpiresAt, r.LeaseRenewedAt = p.LeaseTokenHashes[i], p.LeaseExpiresAt, p.Now
			r.LeaseMs, r.RunAfter, r.UpdatedAt, r.StateChangedAt = p.LeaseMs, p.RunAfter, p.Now, p.Now
			events = append(events, driver.TaskEventRow{TaskID: r.ID, At: p.Now, Actor: p.ClaimedBy, From: p.State,
				To: p.To, Attempt: r.Attempts, Reason: p.Reason})
			if p.Then.To != "" {
				r.State = p.Then.To
				events = append(events, driver.TaskEventRow{TaskID: r.ID, At: p.Now, Actor: p.ClaimedBy, From: p.To,
					To: p.Then.To, Attempt: r.Attempts, Reason: p.Then.Reason})
			}
			ids[i] = r.ID
		}
		if _, err := in.TaskUpdateMany(ctx, rows); err != nil {
			return err
		}
		if err := in.TaskEventInsertMany(ctx, events); err != nil {
			return err
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

// TaskLeaseExpired implements driver.TaskExecutor.
func (e *executor) TaskLeaseExpired(ctx context.Context, p driver.TaskLeaseExpiredParams) ([]driver.TaskRow, error) {
	expired, renewed := fmtTime(p.ExpiredAt), fmtTime(p.RenewedBefore)
	rows, err := e.d.q.TaskLeaseExpired(ctx, e.read, dbsqlc.TaskLeaseExpiredParams{
		States: jsonList(p.States), Excluded: jsonList(p.Excluded), ExpiredAt: &expired,
		RenewedBefore: &renewed, Max: int64(p.Limit)})
	if err != nil {
		return nil, mapErr("task lease expired", err)
	}
	return taskRows(rows)
}

// optTime is a time filter: "" for none.
func optTime(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TaskList implements driver.TaskExecutor.
func (e *executor) TaskList(ctx context.Context, p driver.TaskListParams) ([]driver.TaskRow, error) {
	rows, err := e.d.q.TaskList(ctx, e.read, dbsqlc.TaskListParams{
		After: p.After, States: jsonList(p.States), Types: jsonList(p.Types),
		StateChangedBefore: optTime(fmtNullTime(p.StateChangedBefore)), Max: int64(p.Limit)})
	if err != nil {
		return nil, mapErr("task list", err)
	}
	return taskRows(rows)
}

// TaskCount implements driver.TaskExecutor.
func (e *executor) TaskCount(ctx context.Context, p driver.TaskCountParams) (int, error) {
	n, err := e.d.q.TaskCount(ctx, e.read, dbsqlc.TaskCountParams{
		States: jsonList(p.States), Types: jsonList(p.Types),
		StateChangedBefore: optTime(fmtNullTime(p.StateChangedBefore))})
	return int(n), mapErr("task count", err)
}

// TaskDedupeFind implements driver.TaskExecutor.
func (e *executor) TaskDedupeFind(ctx context.Context, p driver.TaskDedupeFindParams) (int64, error) {
	var (
		id  int64
		err error
	)
	if p.IncludeTerminal {
		id, err = e.d.q.TaskDedupeFindAny(ctx, e.read, dbsqlc.TaskDedupeFindAnyParams{Key: p.Key, Terminal: jsonList(p.Terminal)})
	} else {
		id, err = e.d.q.TaskDedupeFindLive(ctx, e.read, dbsqlc.TaskDedupeFindLiveParams{Key: p.Key, Terminal: jsonList(p.Terminal)})
	}
	return id, mapErr("task dedupe find", err)
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

// TaskDepInsertMany implements driver.TaskExecutor.
func (e *executor) TaskDepInsertMany(ctx context.Context, deps []driver.TaskDep) error {
	if len(deps) == 0 {
		return nil
	}
	return e.write(ctx, "task dependency insert", func(w *wtx) error {
		for _, d := range deps {
			if err := e.d.q.TaskDepInsert(ctx, w, dbsqlc.TaskDepInsertParams{TaskID: d.TaskID, DependsOn: d.DependsOn}); err != nil {
				return mapErr(fmt.Sprintf("task dependency insert %d → %d", d.TaskID, d.DependsOn), err)
			}
		}
		return nil
	})
}

// TaskDepDeleteMany implements driver.TaskExecutor.
func (e *executor) TaskDepDeleteMany(ctx context.Context, deps []driver.TaskDep) error {
	if len(deps) == 0 {
		return nil
	}
	return e.write(ctx, "task dependency delete", func(w *wtx) error {
		for _, d := range deps {
			if err := e.d.q.TaskDepDelete(ctx, w, dbsqlc.TaskDepDeleteParams{TaskID: d.TaskID, DependsOn: d.DependsOn}); err != nil {
				return mapErr(fmt.Sprintf("task dependency delete %d → %d", d.TaskID, d.DependsOn), err)
			}
		}
		return nil
	})
}

// TaskDepList implements driver.TaskExecutor.
func (e *executor) TaskDepList(ctx context.Context, ids []int64) ([]driver.TaskDep, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var (
		rows []dbsqlc.CksTaskDep
		err  error
	)
	if len(ids) == 1 {
		rows, err = e.d.q.TaskDepListOf(ctx, e.read, ids[0])
	} else {
		rows, err = e.d.q.TaskDepList(ctx, e.read, jsonList(ids))
	}
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
	var (
		rows []dbsqlc.CksTaskDep
		err  error
	)
	if len(ids) == 1 {
		rows, err = e.d.q.TaskDepListAdjacentOf(ctx, e.read, ids[0])
	} else {
		rows, err = e.d.q.TaskDepListAdjacent(ctx, e.read, jsonList(ids))
	}
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
	rows, err := e.d.q.TaskDependants(ctx, e.read, dbsqlc.TaskDependantsParams{
		DependsOn: jsonList(p.DependsOn), State: p.State})
	if err != nil {
		return nil, mapErr("task dependants", err)
	}
	return taskRows(rows)
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
				TaskID: ev.TaskID, At: fmtTime(ev.At), Actor: ev.Actor, FromState: ev.From, ToState: ev.To,
				Attempt: int64(ev.Attempt), Reason: ev.Reason}); err != nil {
				return mapErr(fmt.Sprintf("event of task %d", ev.TaskID), err)
			}
		}
		return nil
	})
}

// TaskEventList implements driver.TaskExecutor.
func (e *executor) TaskEventList(ctx context.Context, taskID int64) ([]driver.TaskEventRow, error) {
	rows, err := e.d.q.TaskEventList(ctx, e.read, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("events of task %d", taskID), err)
	}
	out := make([]driver.TaskEventRow, len(rows))
	for i, r := range rows {
		at, err := parseTime(r.At)
		if err != nil {
			return nil, err
		}
		out[i] = driver.TaskEventRow{ID: r.EventID, TaskID: r.TaskID, At: at, Actor: r.Actor,
			From: r.FromState, To: r.ToState, Attempt: int(r.Attempt), Reason: r.Reason}
	}
	return out, nil
}

// EvidenceInsert implements driver.TaskExecutor.
func (e *executor) EvidenceInsert(ctx context.Context, ev driver.EvidenceRow) (driver.EvidenceRow, error) {
	var out driver.EvidenceRow
	err := e.write(ctx, "evidence insert", func(w *wtx) error {
		r, err := e.d.q.EvidenceInsert(ctx, w, dbsqlc.EvidenceInsertParams{
			TaskID: ev.TaskID, Attempt: int64(ev.Attempt), Restart: int64(ev.Restart), Revision: int64(ev.Revision),
			Kind: ev.Kind, Body: ev.Body, Actor: ev.Actor, CreatedAt: fmtTime(ev.CreatedAt)})
		if err != nil {
			return mapErr(fmt.Sprintf("evidence of task %d", ev.TaskID), err)
		}
		out, err = evidenceRow(r)
		return err
	})
	return out, err
}

// EvidenceList implements driver.TaskExecutor.
func (e *executor) EvidenceList(ctx context.Context, taskID int64) ([]driver.EvidenceRow, error) {
	rows, err := e.d.q.EvidenceList(ctx, e.read, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("evidence of task %d", taskID), err)
	}
	out := make([]driver.EvidenceRow, len(rows))
	for i, r := range rows {
		if out[i], err = evidenceRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func evidenceRow(r dbsqlc.CksTaskEvidence) (driver.EvidenceRow, error) {
	created, err := parseTime(r.CreatedAt)
	return driver.EvidenceRow{ID: r.EvidenceID, TaskID: r.TaskID, Attempt: int(r.Attempt), Restart: int(r.Restart),
		Revision: int(r.Revision), Kind: r.Kind, Body: r.Body, Actor: r.Actor, CreatedAt: created}, err
}

// DecisionInsert implements driver.TaskExecutor.
func (e *executor) DecisionInsert(ctx context.Context, d driver.DecisionRow) (driver.DecisionRow, error) {
	var out driver.DecisionRow
	err := e.write(ctx, "decision insert", func(w *wtx) error {
		r, err := e.d.q.DecisionInsert(ctx, w, dbsqlc.DecisionInsertParams{
			TaskID: d.TaskID, Attempt: int64(d.Attempt), Restart: int64(d.Restart), Revision: int64(d.Revision),
			DerivedFromRevision: int64(d.DerivedFromRevision), Kind: d.Kind, Text: d.Text, Actor: d.Actor,
			CreatedAt: fmtTime(d.CreatedAt)})
		if err != nil {
			return mapErr(fmt.Sprintf("decision of task %d", d.TaskID), err)
		}
		out, err = decisionRow(r)
		return err
	})
	return out, err
}

// DecisionList implements driver.TaskExecutor.
func (e *executor) DecisionList(ctx context.Context, taskID int64) ([]driver.DecisionRow, error) {
	rows, err := e.d.q.DecisionList(ctx, e.read, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("decisions of task %d", taskID), err)
	}
	out := make([]driver.DecisionRow, len(rows))
	for i, r := range rows {
		if out[i], err = decisionRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decisionRow(r dbsqlc.CksTaskDecision) (driver.DecisionRow, error) {
	created, err := parseTime(r.CreatedAt)
	return driver.DecisionRow{ID: r.DecisionID, TaskID: r.TaskID, Attempt: int(r.Attempt), Restart: int(r.Restart),
		Revision: int(r.Revision), DerivedFromRevision: int(r.DerivedFromRevision), Kind: r.Kind, Text: r.Text,
		Actor: r.Actor, CreatedAt: created}, err
}

// AbortInsert implements driver.TaskExecutor.
func (e *executor) AbortInsert(ctx context.Context, a driver.AbortRow) (driver.AbortRow, error) {
	var out driver.AbortRow
	err := e.write(ctx, "abort insert", func(w *wtx) error {
		r, err := e.d.q.AbortInsert(ctx, w, dbsqlc.AbortInsertParams{
			TaskID: a.TaskID, LeaseTokenHash: a.LeaseTokenHash, Executor: a.Executor, Attempt: int64(a.Attempt),
			Restart: int64(a.Restart), RequestedBy: a.RequestedBy, Reason: a.Reason,
			RequestedAt: fmtTime(a.RequestedAt), DeadlineAt: fmtTime(a.DeadlineAt), Outcome: a.Outcome,
			ResolvedAt: fmtNullTime(a.ResolvedAt)})
		if err != nil {
			return mapErr(fmt.Sprintf("abort of task %d", a.TaskID), err)
		}
		out, err = abortRow(r)
		return err
	})
	return out, err
}

// AbortGet implements driver.TaskExecutor.
func (e *executor) AbortGet(ctx context.Context, p driver.AbortGetParams) (driver.AbortRow, error) {
	r, err := e.d.q.AbortGet(ctx, e.read, p.ID)
	if err != nil {
		return driver.AbortRow{}, mapErr(fmt.Sprintf("abort %d", p.ID), err)
	}
	return abortRow(r)
}

// AbortFindLatest implements driver.TaskExecutor.
func (e *executor) AbortFindLatest(ctx context.Context, p driver.AbortFindLatestParams) (driver.AbortRow, error) {
	r, err := e.d.q.AbortFindLatest(ctx, e.read, dbsqlc.AbortFindLatestParams{TaskID: p.TaskID, LeaseTokenHash: p.LeaseTokenHash})
	if err != nil {
		return driver.AbortRow{}, mapErr(fmt.Sprintf("abort of task %d", p.TaskID), err)
	}
	return abortRow(r)
}

// AbortUpdateMany implements driver.TaskExecutor.
func (e *executor) AbortUpdateMany(ctx context.Context, aborts []driver.AbortRow) (int, error) {
	if len(aborts) == 0 {
		return 0, nil
	}
	var n int64
	err := e.write(ctx, "abort update", func(w *wtx) error {
		n = 0
		for _, a := range aborts {
			k, err := e.d.q.AbortUpdate(ctx, w, dbsqlc.AbortUpdateParams{
				AbortID: a.ID, Outcome: a.Outcome, ResolvedAt: fmtNullTime(a.ResolvedAt)})
			if err != nil {
				return mapErr(fmt.Sprintf("abort update %d", a.ID), err)
			}
			n += k
		}
		return nil
	})
	return int(n), err
}

// AbortList implements driver.TaskExecutor.
func (e *executor) AbortList(ctx context.Context, taskID int64) ([]driver.AbortRow, error) {
	rows, err := e.d.q.AbortList(ctx, e.read, taskID)
	if err != nil {
		return nil, mapErr(fmt.Sprintf("aborts of task %d", taskID), err)
	}
	return abortRows(rows)
}

// AbortLatestMany implements driver.TaskExecutor.
func (e *executor) AbortLatestMany(ctx context.Context, taskIDs []int64) ([]driver.AbortRow, error) {
	if len(taskIDs) == 0 {
		return nil, nil
	}
	rows, err := e.d.q.AbortLatestMany(ctx, e.read, jsonList(taskIDs))
	if err != nil {
		return nil, mapErr("latest aborts", err)
	}
	return abortRows(rows)
}

// AbortPendingDue implements driver.TaskExecutor.
func (e *executor) AbortPendingDue(ctx context.Context, p driver.AbortPendingDueParams) ([]driver.AbortRow, error) {
	rows, err := e.d.q.AbortPendingDue(ctx, e.read, dbsqlc.AbortPendingDueParams{
		Outcome: p.Outcome, Now: fmtTime(p.Now), Max: int64(p.Limit)})
	if err != nil {
		return nil, mapErr("aborts due", err)
	}
	return abortRows(rows)
}

func abortRow(r dbsqlc.CksTaskAbort) (driver.AbortRow, error) {
	requested, err1 := parseTime(r.RequestedAt)
	deadline, err2 := parseTime(r.DeadlineAt)
	resolved, err3 := parseNullTime(r.ResolvedAt)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return driver.AbortRow{}, err
		}
	}
	return driver.AbortRow{ID: r.AbortID, TaskID: r.TaskID, LeaseTokenHash: r.LeaseTokenHash, Executor: r.Executor,
		Attempt: int(r.Attempt), Restart: int(r.Restart), RequestedBy: r.RequestedBy, Reason: r.Reason,
		RequestedAt: requested, DeadlineAt: deadline, Outcome: r.Outcome, ResolvedAt: resolved}, nil
}

func abortRows(rows []dbsqlc.CksTaskAbort) ([]driver.AbortRow, error) {
	out := make([]driver.AbortRow, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = abortRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func taskRows(rows []dbsqlc.CksOutboxTask) ([]driver.TaskRow, error) {
	out := make([]driver.TaskRow, len(rows))
	for i, r := range rows {
		t, err := taskRow(r)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func taskRow(r dbsqlc.CksOutboxTask) (driver.TaskRow, error) {
	t := driver.TaskRow{
		ID:                 r.TaskID,
		Type:               r.Type,
		Title:              r.Title,
		Description:        r.Description,
		AcceptanceCriteria: r.AcceptanceCriteria,
		Payload:            []byte(r.Payload),
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
		LeaseTokenHash:     r.LeaseTokenHash,
		LeaseMs:            r.LeaseMs,
		Result:             r.Result,
		LastError:          r.LastError,
		Question:           r.Question,
		Answer:             r.Answer,
		ReviewNote:         r.ReviewNote,
		Metadata:           []byte(r.Metadata),
	}
	var err error
	times := []struct {
		src *string
		dst *time.Time
	}{
		{r.ClaimedAt, &t.ClaimedAt}, {r.LeaseExpiresAt, &t.LeaseExpiresAt}, {r.LeaseRenewedAt, &t.LeaseRenewedAt},
		{r.RunAfter, &t.RunAfter}, {r.StateChangedAt, &t.StateChangedAt}, {&r.CreatedAt, &t.CreatedAt},
		{&r.UpdatedAt, &t.UpdatedAt},
	}
	for _, f := range times {
		if *f.dst, err = parseNullTime(f.src); err != nil {
			return driver.TaskRow{}, fmt.Errorf("task %d: %w", r.TaskID, err)
		}
	}
	return t, nil
}
