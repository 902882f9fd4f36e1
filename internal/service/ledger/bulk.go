package ledger

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

// MaxBulk is the most tasks one bulk call acts on: at most this many ids,
// and a filter's page of at most this many tasks (its default), so one
// call is one bounded transaction; the rest of a filter's tasks are the
// next calls' (BulkResult.NextCursor).
const MaxBulk = 500

// BulkParams is one bulk operation (Bulk).
type BulkParams struct {
	// Action is the verb: cks.ActionStop, ActionStart, ActionCancel or
	// ActionRetry.
	Action cks.TaskAction
	// IDs are the tasks to act on; or, when nil, the tasks Filter selects
	// (its States, Types, StateChangedBefore, Text, CreatedBy and
	// UnconfirmedAbort, in id order from After whatever its Sort, at most
	// Limit of them: 0 for MaxBulk).
	IDs    []int64
	Filter *cks.TaskFilter
	Actor  string
	Reason string
	// Deadline and Wait are StopParams' for the aborts of the running
	// tasks a stop holds: one deadline for them all.
	Deadline time.Duration
	Wait     bool
}

// bulkVerbs are the verbs Bulk does.
var bulkVerbs = []cks.TaskAction{cks.ActionStop, cks.ActionStart, cks.ActionCancel, cks.ActionRetry}

// Bulk does one operator verb to many tasks as one service call: the tasks
// are selected and locked in one query (TaskGetMany of the ids, or one page
// of TaskList for the filter, in id order), and each is then moved by the
// verb's own rule (stop, start, cancel, retry: the single-task operations'
// functions) in the same transaction, each from its state as it is at its
// turn (an earlier task's cancel may have blocked it). A task the rule
// refuses — its state does not admit the verb, its dedupe key is taken, no
// such task — is an outcome (BulkRefused, with why) and changes nothing;
// any other error fails the whole call, which then changes nothing. A stop
// with Wait then waits, up to one deadline for all, for the executors of
// the running tasks it held to confirm their aborts (waitAborts). For a
// start or a retry the outcome carries the task's latest abort when its
// executor never confirmed it. Bad input is a FieldError: no verb of
// bulkVerbs (action), both ids and a filter or neither, more than MaxBulk
// ids (task_ids), a filter without a state, type or stopped_longer_than, a
// limit outside 1..MaxBulk (limit), a stop without a reason (reason).
func (s *Service) Bulk(ctx context.Context, p BulkParams) (cks.BulkResult, error) {
	deadline, err := validateBulk(&p)
	if err != nil {
		return cks.BulkResult{}, err
	}
	var out cks.BulkResult
	err = s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		out = cks.BulkResult{Action: p.Action, Tasks: []cks.BulkTask{}}
		ids, next, err := bulkSelect(ctx, ex, p)
		if err != nil {
			return err
		}
		out.NextCursor = next
		for _, id := range ids {
			t, err := bulkOne(ctx, ex, now, p, id, deadline)
			if err != nil {
				return err
			}
			out.Tasks = append(out.Tasks, t)
		}
		return bulkAborts(ctx, ex, p.Action, out.Tasks)
	})
	if isUnique(err) {
		// A dedupe key a retry reopens was taken meanwhile by an enqueue.
		err = fmt.Errorf("a task's dedupe_key was taken while the retry ran; nothing changed: %w", cks.ErrConflict)
	}
	if err != nil {
		return cks.BulkResult{}, err
	}
	if p.Action == cks.ActionStop && p.Wait {
		err = s.waitBulk(ctx, out.Tasks, deadline)
	}
	out.Count()
	return out, err
}

// CheckBulk reports the first field of p Bulk refuses before it reads
// anything: the rule of a bulk call's input, which package ops checks
// before the call.
func CheckBulk(p BulkParams) error {
	_, err := validateBulk(&p)
	return err
}

// validateBulk checks p (filling in the filter's default limit) and returns
// the abort deadline to use.
func validateBulk(p *BulkParams) (time.Duration, error) {
	if !slices.Contains(bulkVerbs, p.Action) {
		return 0, &cks.FieldError{Field: "action", Expected: fmt.Sprintf("one of %v", bulkVerbs)}
	}
	reason := cks.ValidateText("reason", p.Reason)
	if p.Action == cks.ActionStop {
		reason = ValidateStopReason(p.Reason)
	}
	if err := cmp.Or(cks.ValidateText("actor", p.Actor), reason); err != nil {
		return 0, err
	}
	deadline, err := cks.ValidateDeadline(p.Deadline)
	if err != nil {
		return 0, err
	}
	switch f := p.Filter; {
	case (len(p.IDs) > 0) == (f != nil):
		return 0, &cks.FieldError{Field: "task_ids", Expected: "the tasks to act on: task ids, or else a filter (state, type or stopped_longer_than)"}
	case len(p.IDs) > MaxBulk:
		return 0, &cks.FieldError{Field: "task_ids", Expected: fmt.Sprintf("at most %d task ids (got %d)", MaxBulk, len(p.IDs))}
	case f == nil:
		if slices.ContainsFunc(p.IDs, func(id int64) bool { return id <= 0 }) {
			return 0, &cks.FieldError{Field: "task_ids", Expected: "ids of existing tasks"}
		}
	case len(f.States) == 0 && len(f.Types) == 0 && f.StateChangedBefore.IsZero() && f.Text == "" && f.CreatedBy == "" && !f.UnconfirmedAbort:
		return 0, &cks.FieldError{Field: "state", Expected: "a filter of the tasks to act on: a state, a type, stopped_longer_than, q, created_by or unconfirmed_abort (or task ids)"}
	case f.Limit < 0 || f.Limit > MaxBulk:
		return 0, &cks.FieldError{Field: "limit", Expected: fmt.Sprintf("an integer from 1 to %d (0 for the default %d)", MaxBulk, MaxBulk)}
	case f.After < 0:
		return 0, &cks.FieldError{Field: "cursor", Expected: "a task id"}
	}
	if p.Filter != nil {
		if _, err := filterStates(*p.Filter); err != nil {
			return 0, err
		}
		// The listing's checks of the filter (its text, creator); the
		// selection goes in id order whatever the listing's sort.
		f := *p.Filter
		f.Sort, f.AfterKey, f.Limit = "", "", 0
		if _, err := f.Validate(); err != nil {
			return 0, err
		}
	}
	return deadline, nil
}

// bulkSelect selects and locks the tasks of p in one query, in id order,
// and returns their ids (for ids, those asked, unknown ones too) and, for a
// filter that matches more than its limit, the cursor of the next call.
func bulkSelect(ctx context.Context, ex driver.Executor, p BulkParams) ([]int64, int64, error) {
	if f := p.Filter; f != nil {
		limit := cmp.Or(f.Limit, MaxBulk)
		rows, err := ex.TaskList(ctx, driver.TaskListParams{States: strs(f.States), Types: f.Types,
			StateChangedBefore: driver.Time(f.StateChangedBefore), CreatedBy: f.CreatedBy, Match: cks.SearchKey(f.Text),
			UnconfirmedAbort: f.UnconfirmedAbort, After: f.After, Limit: limit + 1, Lock: driver.LockUpdate})
		if err != nil {
			return nil, 0, err
		}
		var next int64
		if len(rows) > limit {
			rows, next = rows[:limit], rows[limit-1].ID
		}
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		return ids, next, nil
	}
	ids := slices.Compact(slices.Sorted(slices.Values(p.IDs)))
	if _, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids, Lock: driver.LockUpdate}); err != nil {
		return nil, 0, err
	}
	return ids, 0, nil
}

// bulkOne does p's verb to task id (locked by bulkSelect), read again as
// it now is, and returns its outcome; only an error that is no refusal is
// returned as one.
func bulkOne(ctx context.Context, ex driver.Executor, now time.Time, p BulkParams, id int64, deadline time.Duration) (cks.BulkTask, error) {
	out := cks.BulkTask{TaskID: id}
	cur, err := getRow(ctx, ex, id, driver.LockUpdate)
	if errors.Is(err, cks.ErrNotFound) {
		out.Outcome, out.Reason = cks.BulkRefused, err.Error()
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.From = cks.TaskState(cur.State)
	var row driver.TaskRow
	switch p.Action {
	case cks.ActionStop:
		row, out.Abort, err = stopTx(ctx, ex, now, cur, p.Actor, "stopped: "+p.Reason, p.Reason, deadline)
	case cks.ActionStart:
		row, err = startTx(ctx, ex, now, cur, p.Actor, p.Reason, "")
	case cks.ActionCancel:
		row, out.Abort, err = cancelTx(ctx, ex, now, cur, p.Actor, p.Reason)
	case cks.ActionRetry:
		row, err = retryTx(ctx, ex, now, cur, p.Actor, p.Reason)
	}
	switch {
	case errors.Is(err, cks.ErrConflict):
		// Refused before anything was written (the rules check first).
		out.Outcome, out.State, out.Reason, out.Abort = cks.BulkRefused, out.From, err.Error(), nil
		return out, nil
	case err != nil:
		return out, err
	}
	out.Outcome, out.State = cks.BulkDone, cks.TaskState(row.State)
	return out, nil
}

// bulkAborts gives the started or retried tasks of ts their latest abort
// when it was never confirmed: one read for them all.
func bulkAborts(ctx context.Context, ex driver.Executor, action cks.TaskAction, ts []cks.BulkTask) error {
	if action != cks.ActionStart && action != cks.ActionRetry {
		return nil
	}
	var ids []int64
	for _, t := range ts {
		if t.Outcome == cks.BulkDone {
			ids = append(ids, t.TaskID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	latest, err := ex.AbortLatestMany(ctx, ids)
	if err != nil {
		return err
	}
	byTask := map[int64]cks.Abort{}
	for _, a := range latest {
		if a.Outcome != string(cks.AbortConfirmed) {
			byTask[a.TaskID] = toAbort(a)
		}
	}
	for i := range ts {
		if a, ok := byTask[ts[i].TaskID]; ok && ts[i].Outcome == cks.BulkDone {
			ts[i].Abort = &a
		}
	}
	return nil
}

// waitBulk waits up to d for the aborts of ts to be confirmed (waitAborts)
// and gives each task its abort as it then stands.
func (s *Service) waitBulk(ctx context.Context, ts []cks.BulkTask, d time.Duration) error {
	var ids []int64
	for _, t := range ts {
		if t.Abort != nil {
			ids = append(ids, t.Abort.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	got, err := s.waitAborts(ctx, ids, d)
	for i := range ts {
		if ts[i].Abort == nil {
			continue
		}
		if a, ok := got[ts[i].Abort.ID]; ok {
			ts[i].Abort = &a
		}
	}
	return err
}
