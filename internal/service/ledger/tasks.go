package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// maxUniqueRetries is how often an operation that lost a dedupe race (a
// unique violation) runs again; the retry finds the winner.
const maxUniqueRetries = 3

// Enqueue stores a new task: OPEN, or WAITING when a dependency is not
// COMPLETED yet, or BLOCKED when one is already FAILED or CANCELLED. When
// DedupeKey matches a non-terminal task, that task is returned instead,
// with created false and no error. A missing dependency or parent is a
// FieldError naming depends_on or parent_id. A new task cannot close a
// dependency cycle (nothing depends on it yet); dependency edits (next
// issue) check with findCycle.
//
// Two enqueues racing on one dedupe key meet at the unique index; the loser
// runs again and returns the winner's task.
func (s *Service) Enqueue(ctx context.Context, n cks.NewTask) (cks.Task, bool, error) {
	n, err := n.Validate()
	if err != nil {
		return cks.Task{}, false, err
	}
	for try := 0; ; try++ {
		var (
			out     cks.Task
			created bool
		)
		err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
			var err error
			out, created, err = s.enqueueTx(ctx, ex, now, n)
			return err
		})
		if isUnique(err) && n.DedupeKey != "" && try < maxUniqueRetries {
			continue
		}
		return out, created, err
	}
}

// EnqueueWith makes the creation of tasks and a caller's own record of it
// one commit: in one write transaction of the ledger, with its time, decide
// says which tasks to create (none is a choice too), they are enqueued by
// the rule of EnqueueMany, and record writes what the caller keeps of them
// (their outcomes, in order). A service that owns a rule of when a task is
// created — a schedule's slot (package schedule) — so never creates one
// without its mark, or its mark without the task. The transaction may run
// again (a retried transaction, a lost dedupe race): decide and record
// only read, write through ex and assign. An invalid task from decide is
// a FieldError naming it by index (tasks[0].type) and nothing is written.
func (s *Service) EnqueueWith(ctx context.Context,
	decide func(ctx context.Context, ex driver.Executor, now time.Time) ([]cks.NewTask, error),
	record func(ctx context.Context, ex driver.Executor, now time.Time, created []cks.CreatedTask) error) error {
	for try := 0; ; try++ {
		keyed := false
		err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
			ns, err := decide(ctx, ex, now)
			if err != nil {
				return err
			}
			valid := make([]cks.NewTask, len(ns))
			for i, n := range ns {
				if valid[i], err = n.Validate(); err != nil {
					return itemError(batchField, i, err)
				}
				keyed = keyed || n.DedupeKey != ""
			}
			var out []cks.CreatedTask
			if len(valid) > 0 {
				if out, err = s.enqueueManyTx(ctx, ex, now, valid, batchField); err != nil {
					return err
				}
			}
			return record(ctx, ex, now, out)
		})
		if isUnique(err) && keyed && try < maxUniqueRetries {
			continue
		}
		return err
	}
}

// EnqueueMany enqueues ns in one transaction, each item by the rule of
// Enqueue as if enqueued one after another in order (an item whose
// dedupe key an earlier item took gets that item's task, created
// false), and returns one CreatedTask per item, in order. It costs a
// constant number of statements however many items there are (one read
// serves all their dedupe keys), and publishes TopicTasksReady once. An
// invalid item, or one whose parent or dependency does not exist, is a
// FieldError naming it by index (tasks[3].type) and nothing is written.
// It is the Go API's bulk form for callers that fill a queue (no
// operation of the table offers it: create_task's permission depends on
// each item's parent).
//
// the tasks ns in one transaction, each by the rule of a single Enqueue, in
// order, in a constant number of statements however many there are. Every
// item is validated first, and an invalid one is a FieldError naming it
// (tasks[i].FIELD); nothing is written then.
func (s *Service) EnqueueMany(ctx context.Context, ns []cks.NewTask) ([]cks.CreatedTask, error) {
	if len(ns) == 0 {
		return nil, nil
	}
	valid := make([]cks.NewTask, len(ns))
	keyed := false
	for i, n := range ns {
		v, err := n.Validate()
		if err != nil {
			return nil, itemError(batchField, i, err)
		}
		valid[i], keyed = v, keyed || v.DedupeKey != ""
	}
	for try := 0; ; try++ {
		var out []cks.CreatedTask
		err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
			var err error
			out, err = s.enqueueManyTx(ctx, ex, now, valid, batchField)
			return err
		})
		if isUnique(err) && keyed && try < maxUniqueRetries {
			continue
		}
		return out, err
	}
}

// batchField names field of item i of EnqueueMany.
func batchField(i int, field string) string { return fmt.Sprintf("tasks[%d].%s", i, field) }

// itemError renames the field of err, a FieldError, by name; any other
// error is returned as it is.
func itemError(name func(i int, field string) string, i int, err error) error {
	var fe *cks.FieldError
	if errors.As(err, &fe) {
		return &cks.FieldError{Field: name(i, fe.Field), Expected: fe.Expected}
	}
	return err
}

// enqueueTx is Enqueue's work inside ex's transaction, for a validated n:
// it returns the task of n's dedupe key (created false) or inserts the task
// with its dependencies (and the creation event of a task not created
// OPEN).
func (s *Service) enqueueTx(ctx context.Context, ex driver.Executor, now time.Time, n cks.NewTask) (cks.Task, bool, error) {
	out, err := s.enqueueManyTx(ctx, ex, now, []cks.NewTask{n}, func(_ int, f string) string { return f })
	if err != nil {
		return cks.Task{}, false, err
	}
	return out[0].Task, out[0].Created, nil
}

// delayedUntil is the run_after a new task n gets when enqueued at now:
// now+Delay, or RunAfter (a time already past is no delay: zero), or zero
// for a task that is not delayed. A RunAfter more than cks.MaxDelay
// ahead is a FieldError naming field.
func delayedUntil(n cks.NewTask, now time.Time, field string) (time.Time, error) {
	d, err := n.DelayDuration()
	switch {
	case err != nil:
		return time.Time{}, err
	case d > 0:
		return now.Add(d), nil
	case n.RunAfter.IsZero() || !n.RunAfter.After(now):
		return time.Time{}, nil
	case n.RunAfter.Sub(now) > cks.MaxDelay:
		return time.Time{}, &cks.FieldError{Field: field,
			Expected: fmt.Sprintf("a time at most %.0fh ahead (%s at the latest)", cks.MaxDelay.Hours(), now.Add(cks.MaxDelay).Format(time.RFC3339))}
	}
	return driver.Time(n.RunAfter), nil
}

// dedupeHit is what an enqueue batch knows of one dedupe key: the newest
// live task with it (what an item gets), and the task a DedupeOnce item
// gets — the live one first, else the newest finished one; 0 for none. An
// id below 0 is the item of the batch, -1-id, that created the task.
type dedupeHit struct{ live, any int64 }

// enqueueManyTx is the work of EnqueueMany inside ex's transaction, for
// validated ns: each item, in order, gets the task of its dedupe key
// (created false: an existing one, or one an earlier item of ns created)
// or becomes a new task with its dependencies (and the creation event of a
// task not created OPEN). The
// rules are decided in Go over reads made once for the whole batch — the
// dedupe keys (one read, TaskDedupeFindMany), the parents (one read),
// the dependencies (one read, LockShare, as depState) — and the new rows
// are written in three statements (tasks, edges, events) with one
// TopicTasksReady when any is OPEN. name names an item's field in a
// FieldError (a missing parent or dependency). Update's AddChildren
// enqueues its children as one batch through it.
func (s *Service) enqueueManyTx(ctx context.Context, ex driver.Executor, now time.Time, ns []cks.NewTask, name func(i int, field string) string) ([]cks.CreatedTask, error) {
	// The task of each dedupe key, read once for the batch.
	hits := map[string]*dedupeHit{}
	var keys []string
	for _, n := range ns {
		if n.DedupeKey != "" && hits[n.DedupeKey] == nil {
			hits[n.DedupeKey] = &dedupeHit{}
			keys = append(keys, n.DedupeKey)
		}
	}
	if len(keys) > 0 {
		found, err := ex.TaskDedupeFindMany(ctx, driver.TaskDedupeFindManyParams{Keys: keys, Terminal: strs(Terminal[:])})
		if err != nil {
			return nil, fmt.Errorf("enqueue: dedupe: %w", err)
		}
		for _, f := range found {
			if h := hits[f.Key]; h != nil {
				h.any = f.ID
				if !f.Terminal {
					h.live = f.ID
				}
			}
		}
	}
	// Decide, item by item, which are new and which get another's task.
	out := make([]cks.CreatedTask, len(ns))
	found := make([]int64, len(ns)) // the task a dedupe hit gets (< 0: an item's)
	var fresh []int                 // the items that become tasks
	for i, n := range ns {
		if h := hits[n.DedupeKey]; h != nil {
			got := h.live
			if n.DedupeOnce && got == 0 {
				got = h.any
			}
			if got != 0 {
				found[i] = got
				continue
			}
			// This item creates the key's live task; later ones get it.
			h.live, h.any = int64(-1-i), int64(-1-i)
		}
		fresh = append(fresh, i)
		out[i].Created = true
	}
	// The parents and dependencies of the new tasks, each read once.
	var parents, deps []int64
	for _, i := range fresh {
		if p := ns[i].ParentID; p != nil {
			parents = append(parents, *p)
		}
		deps = append(deps, ns[i].DependsOn...)
	}
	exists, err := rowsByID(ctx, ex, parents, driver.LockNone)
	if err != nil {
		return nil, err
	}
	depRows, err := rowsByID(ctx, ex, deps, driver.LockShare)
	if err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	rows := make([]driver.TaskRow, len(fresh))
	budgets := make([]budget, len(fresh))
	states := make([]cks.TaskState, len(fresh))
	reasons := make([]string, len(fresh))
	ready := false
	for k, i := range fresh {
		n := ns[i]
		if n.ParentID != nil {
			if _, ok := exists[*n.ParentID]; !ok {
				return nil, &cks.FieldError{Field: name(i, "parent_id"),
					Expected: fmt.Sprintf("the id of an existing task (no task %d)", *n.ParentID)}
			}
		}
		state, reason := cks.TaskOpen, ""
		if len(n.DependsOn) > 0 { // (the field's name is made only for a task that has some)
			if state, reason, err = depStateOf(depRows, n.DependsOn, name(i, "depends_on")); err != nil {
				return nil, err
			}
		}
		if state == cks.TaskOpen {
			reason, ready = "enqueued", true
		}
		states[k], reasons[k] = state, reason
		rows[k] = driver.TaskRow{Type: n.Type, Title: n.Title, Description: n.Description,
			AcceptanceCriteria: n.AcceptanceCriteria, Payload: n.Payload, State: string(state), Priority: n.Priority,
			MaxAttempts: n.MaxAttempts, Revision: 1, DedupeKey: n.DedupeKey, CreatedBy: n.CreatedBy,
			CreatedAt: now, UpdatedAt: now, StateChangedAt: now, Metadata: n.Metadata}
		if n.ParentID != nil {
			rows[k].ParentID = *n.ParentID
		}
		if rows[k].RunAfter, err = delayedUntil(n, now, name(i, "run_after")); err != nil {
			return nil, err
		}
		timeout, err := cks.ParseAttemptTimeout(name(i, "attempt_timeout"), n.AttemptTimeout)
		if err != nil {
			return nil, err
		}
		rows[k].AttemptTimeoutMs = timeout.Milliseconds()
		rows[k].ConcurrencyKeys = encodeKeys(n.ConcurrencyKeys)
		rows[k].Traceparent = n.Traceparent
		if budgets[k], err = parseBudget(n.MaxTokens, n.MaxCost, func(f string) string { return name(i, f) }); err != nil {
			return nil, err
		}
		if rows[k].ExpiresAt, err = expiresAt(n, now, rows[k].RunAfter, name(i, "expires_at")); err != nil {
			return nil, err
		}
	}
	if len(rows) > 0 {
		inserted, err := ex.TaskInsertMany(ctx, rows)
		if err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		noteCreated(ex, inserted)
		var edges []driver.TaskDep
		var events []driver.TaskEventRow
		for k, r := range inserted { // as stored: the database's form of the JSON columns
			n := ns[fresh[k]]
			for _, d := range n.DependsOn {
				edges = append(edges, driver.TaskDep{TaskID: r.ID, DependsOn: d})
			}
			// A task created OPEN is its row (history: the creation event is
			// read from it); one created WAITING or BLOCKED keeps its event,
			// whose state and reason the row does not hold.
			if states[k] != cks.TaskOpen {
				events = append(events, driver.TaskEventRow{TaskID: r.ID, At: now, Actor: n.CreatedBy,
					ToState: string(states[k]), Reason: reasons[k]})
			}
			// The dependencies are the ones just written, in the order a
			// read returns them.
			var ds []int64
			if len(n.DependsOn) > 0 {
				ds = slices.Sorted(slices.Values(n.DependsOn))
			}
			out[fresh[k]].Task = toTask(r, ds)
			if budgets[k].set() {
				sp, err := putBudget(ctx, ex, r.ID, budgets[k])
				if err != nil {
					return nil, err
				}
				spend := toSpend(sp)
				out[fresh[k]].Task.Spend = &spend
			}
		}
		if err := ex.TaskDepInsertMany(ctx, edges); err != nil {
			return nil, fmt.Errorf("enqueue: dependencies: %w", err)
		}
		if err := ex.TaskEventInsertMany(ctx, events); err != nil {
			return nil, err
		}
		if ready {
			if err := ex.Notify(ctx, cks.TopicTasksReady); err != nil {
				return nil, err
			}
		}
		// A new task counts on the board: noted, published after the
		// commit (write).
		if err := ex.Notify(ctx, cks.TopicTasksMoved); err != nil {
			return nil, err
		}
	}
	// The dedupe hits: tasks of this batch, or existing ones read at once.
	var existing []int64
	for i, id := range found {
		if id < 0 {
			out[i].Task = out[-1-id].Task
		} else if id > 0 {
			existing = append(existing, id)
		}
	}
	if len(existing) > 0 {
		slices.Sort(existing)
		got, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: slices.Compact(existing)})
		if err != nil {
			return nil, err
		}
		tasks, err := tasksOf(ctx, ex, got...)
		if err != nil {
			return nil, err
		}
		byID := make(map[int64]cks.Task, len(tasks))
		for _, t := range tasks {
			byID[t.ID] = t
		}
		for i, id := range found {
			if id > 0 {
				t, ok := byID[id]
				if !ok {
					return nil, notFound(id)
				}
				out[i].Task = t
			}
		}
	}
	return out, nil
}

// rowsByID reads the tasks ids (in any order, repeats allowed) locked as
// asked, by id; unknown ids are absent.
func rowsByID(ctx context.Context, ex driver.Executor, ids []int64, lock driver.Lock) (map[int64]driver.TaskRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids, Lock: lock})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]driver.TaskRow, len(rows))
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

// dependenciesOf returns the dependencies of each of rows and the row of
// every one of those dependencies, by id, locked as asked: one read of the
// edges, one of the rows.
func dependenciesOf(ctx context.Context, ex driver.Executor, rows []driver.TaskRow, lock driver.Lock) (map[int64][]int64, map[int64]driver.TaskRow, error) {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	deps, err := depsOf(ctx, ex, ids...)
	if err != nil {
		return nil, nil, err
	}
	var all []int64
	for _, ds := range deps {
		all = append(all, ds...)
	}
	byID, err := rowsByID(ctx, ex, all, lock)
	return deps, byID, err
}

// stateNow is depState of task id's own dependencies: the state Start,
// Retry and a dependency edit move it to.
func stateNow(ctx context.Context, ex driver.Executor, id int64, field string) (cks.TaskState, string, error) {
	deps, err := depsOf(ctx, ex, id)
	if err != nil {
		return "", "", err
	}
	return depState(ctx, ex, deps[id], field)
}

// depState is the state a task with dependencies deps belongs in now, as
// Enqueue, Start and Update evaluate it: BLOCKED when one FAILED or was
// CANCELLED, WAITING when one is not COMPLETED, else OPEN, with the reason
// ("dependencies complete" for OPEN), deps taken in order. The dependencies
// are read with LockShare: a dependency completing concurrently either
// waits for this transaction (and then sees the task in its new state) or
// is seen COMPLETED here. A missing dependency is a FieldError naming
// field.
func depState(ctx context.Context, ex driver.Executor, deps []int64, field string) (cks.TaskState, string, error) {
	rows, err := rowsByID(ctx, ex, deps, driver.LockShare)
	if err != nil {
		return "", "", fmt.Errorf("dependencies: %w", err)
	}
	return depStateOf(rows, deps, field)
}

// depStateOf is depState over the dependency rows read (by id).
func depStateOf(rows map[int64]driver.TaskRow, deps []int64, field string) (cks.TaskState, string, error) {
	state, reason := cks.TaskOpen, "dependencies complete"
	for _, d := range deps {
		r, ok := rows[d]
		dep := cks.TaskState(r.State)
		switch {
		case !ok:
			return "", "", NoSuchDependency(field, d)
		case dep == cks.TaskFailed || dep == cks.TaskCancelled:
			return cks.TaskBlocked, fmt.Sprintf("dependency %d is %s", d, dep), nil
		case dep != cks.TaskCompleted && state == cks.TaskOpen:
			state, reason = cks.TaskWaiting, fmt.Sprintf("waiting for dependency %d", d)
		}
	}
	return state, reason, nil
}

// NoSuchDependency is the refusal of a dependency d, named in field, that
// is no task. The surfaces answer it too for a task the caller may not read
// (ops), so that a create or an edit cannot tell the two apart.
func NoSuchDependency(field string, d int64) error {
	return &cks.FieldError{Field: field, Expected: fmt.Sprintf("ids of existing tasks the caller may read (no task %d)", d)}
}

// GetTask returns the task with its dependencies, events and evidence.
//
// It reads the task and everything recorded for it in one read-only snapshot,
// so the grouping by attempt sees the counters the records were made under.
func (s *Service) GetTask(ctx context.Context, id int64) (cks.Task, error) {
	var t cks.Task
	err := s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		r, err := getRow(ctx, ex, id, driver.LockNone)
		if err != nil {
			return err
		}
		if t, err = taskOf(ctx, ex, r); err != nil {
			return err
		}
		if t.ChildIDs, t.ChildCount, err = children(ctx, ex, id); err != nil {
			return err
		}
		events, err := ex.TaskEventList(ctx, id)
		if err != nil {
			return err
		}
		if t.Events, err = history(r, events); err != nil {
			return err
		}
		evRows, err := ex.EvidenceList(ctx, id)
		if err != nil {
			return err
		}
		evidence := make([]cks.Evidence, len(evRows))
		for i, e := range evRows {
			evidence[i] = toEvidence(e)
		}
		decRows, err := ex.DecisionList(ctx, id)
		if err != nil {
			return err
		}
		decisions := make([]cks.Decision, len(decRows))
		for i, d := range decRows {
			decisions[i] = toDecision(d)
		}
		abRows, err := ex.AbortList(ctx, id)
		if err != nil {
			return err
		}
		var aborts []cks.Abort
		for _, a := range abRows {
			aborts = append(aborts, toAbort(a))
		}
		groupAttempts(&t, evidence, decisions, aborts)
		return spendOfTask(ctx, ex, &t)
	})
	return t, err
}

// children are the ids of the first cks.MaxChildIDs children of task id
// and how many it has: what a view of a parent names of them, however many
// there are (list_tasks with parent_id pages them all).
func children(ctx context.Context, ex driver.Executor, id int64) ([]int64, int, error) {
	n, err := ex.TaskChildCount(ctx, id)
	if err != nil || n == 0 {
		return nil, 0, err
	}
	ids, err := ex.TaskChildren(ctx, driver.TaskChildrenParams{Parent: id, Limit: cks.MaxChildIDs})
	return ids, n, err
}

// filterStates checks the states of f against the table and renders them.
func filterStates(f cks.TaskFilter) ([]string, error) {
	for _, st := range f.States {
		if !Valid(st) {
			return nil, &cks.FieldError{Field: "state", Expected: fmt.Sprintf("one of %v (got %q)", All, st)}
		}
	}
	return strs(f.States), nil
}

// ListTasks returns one page of tasks (without events and evidence,
// with LastAbort).
func (s *Service) ListTasks(ctx context.Context, f cks.TaskFilter) (cks.TaskPage, error) {
	f, err := f.Validate()
	if err != nil {
		return cks.TaskPage{}, err
	}
	states, err := filterStates(f)
	if err != nil {
		return cks.TaskPage{}, err
	}
	lp, err := listParams(f, states)
	if err != nil {
		return cks.TaskPage{}, err
	}
	var page cks.TaskPage
	err = s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		page = cks.TaskPage{}
		rows, more, err := listRows(ctx, ex, lp, f.Parent, f.Limit)
		if err != nil {
			return err
		}
		if more {
			page.Next, page.NextKey = rows[len(rows)-1].ID, sortKey(f.Sort, rows[len(rows)-1])
		}
		if len(rows) == 0 {
			return nil
		}
		if page.Tasks, err = tasksOf(ctx, ex, rows...); err != nil {
			return err
		}
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		last, err := ex.AbortLatestMany(ctx, ids)
		if err != nil {
			return err
		}
		byTask := make(map[int64]*cks.Abort, len(last))
		for _, a := range last {
			ab := toAbort(a)
			byTask[a.TaskID] = &ab
		}
		for i := range page.Tasks {
			page.Tasks[i].LastAbort = byTask[page.Tasks[i].ID]
		}
		return fillStops(ctx, ex, page.Tasks)
	})
	return page, err
}

// fillStops sets the Stop of the STOPPED tasks of tasks: the event that
// stopped each, one read for all of them.
func fillStops(ctx context.Context, ex driver.Executor, tasks []cks.Task) error {
	var ids []int64
	for _, t := range tasks {
		if t.State == cks.TaskStopped {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := ex.TaskEventStoppedMany(ctx, ids)
	if err != nil {
		return err
	}
	byTask := make(map[int64]*cks.TaskEvent, len(rows))
	for _, r := range rows {
		ev, err := toEvent(r)
		if err != nil {
			return err
		}
		byTask[r.TaskID] = &ev
	}
	for i := range tasks {
		if ev := byTask[tasks[i].ID]; ev != nil {
			tasks[i].Stop = ev
		}
	}
	return nil
}

// listChunk is how many rows ListTasks reads at a time: a page of large
// tasks ends at cks.MaxPageBytes, so a listing reads about that much and
// one chunk more, not its whole limit of rows.
const listChunk = 100

// listRows reads the rows of one page of p's listing (of the children of
// parent, when it is not 0): at most limit rows, and no more than a
// cks.PageBudget holds. more says whether rows follow.
func listRows(ctx context.Context, ex driver.Executor, p driver.TaskListParams, parent int64, limit int) (rows []driver.TaskRow, more bool, err error) {
	var budget cks.PageBudget
	for {
		p.Limit = min(limit+1-len(rows), listChunk)
		chunk, err := listChunkOf(ctx, ex, p, parent)
		if err != nil {
			return nil, false, err
		}
		for _, r := range chunk {
			if len(rows) == limit || !budget.Fits(rowSize(r)) {
				return rows, true, nil
			}
			rows = append(rows, r)
		}
		if len(chunk) < p.Limit {
			return rows, false, nil
		}
		last := chunk[len(chunk)-1]
		p.After, p.AfterUpdated, p.AfterPriority = last.ID, last.UpdatedAt, last.Priority
	}
}

// listChunkOf reads one chunk of p's listing: of the children of parent
// by id (through the index of parent_id) when it is not 0.
func listChunkOf(ctx context.Context, ex driver.Executor, p driver.TaskListParams, parent int64) ([]driver.TaskRow, error) {
	if parent == 0 {
		return ex.TaskList(ctx, p)
	}
	ids, err := ex.TaskChildren(ctx, driver.TaskChildrenParams{Parent: parent, After: p.After, Limit: p.Limit})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids})
}

// driverSorts are the driver's orders of list_tasks' sorts.
var driverSorts = map[cks.TaskSort]driver.TaskSort{
	cks.TaskSortID: driver.TaskSortID, cks.TaskSortIDDesc: driver.TaskSortIDDesc,
	cks.TaskSortUpdated: driver.TaskSortUpdated, cks.TaskSortUpdatedDesc: driver.TaskSortUpdatedDesc,
	cks.TaskSortPriority: driver.TaskSortPriority,
}

// sortKey is the cursor key of row r under sort (cks.TaskPage.NextKey): ""
// for a sort by task_id alone.
func sortKey(sort cks.TaskSort, r driver.TaskRow) string {
	switch sort {
	case cks.TaskSortUpdated, cks.TaskSortUpdatedDesc:
		return driver.Time(r.UpdatedAt).Format(cks.KeyTime)
	case cks.TaskSortPriority:
		return strconv.Itoa(r.Priority)
	}
	return ""
}

// listParams are the driver's params of f (validated) and its states: the
// cursor's key read back from f.AfterKey, a key that does not parse a
// FieldError naming cursor_key.
func listParams(f cks.TaskFilter, states []string) (driver.TaskListParams, error) {
	p := driver.TaskListParams{States: states, Types: f.Types, StateChangedBefore: driver.Time(f.StateChangedBefore),
		CreatedBy: f.CreatedBy, Match: cks.SearchKey(f.Text), UnconfirmedAbort: f.UnconfirmedAbort,
		Sort: driverSorts[f.Sort], After: f.After}
	if f.After == 0 || !f.Sort.Keyed() {
		return p, nil
	}
	bad := &cks.FieldError{Field: "cursor_key", Expected: fmt.Sprintf("the next_key of the previous page under sort %s, got %q", f.Sort, f.AfterKey)}
	if f.Sort == cks.TaskSortPriority {
		n, err := strconv.Atoi(f.AfterKey)
		if err != nil {
			return p, bad
		}
		p.AfterPriority = n
		return p, nil
	}
	t, err := time.Parse(cks.KeyTime, f.AfterKey)
	if err != nil {
		return p, bad
	}
	p.AfterUpdated = t
	return p, nil
}

// rowSize is about the size of a task row in an answer: its text and JSON
// as encoded, and a fixed allowance for the keys, numbers and times.
func rowSize(r driver.TaskRow) int {
	n := 600 + len(r.Payload) + len(r.Metadata)
	for _, s := range [...]string{r.Type, r.Title, r.Description, r.AcceptanceCriteria, r.DedupeKey, r.CreatedBy,
		r.ClaimedBy, r.Result, r.LastError, r.Question, r.Answer, r.ReviewNote} {
		n += cks.EncodedLen(s)
	}
	return n
}

// CountTasks counts the tasks f selects, with ListTasks' semantics for
// its filters (states, types, StateChangedBefore, text, creator, an
// unconfirmed abort); After, AfterKey, Sort and Limit are ignored. An
// unknown state is a FieldError naming state. (The stale_stop_report
// sweeper counts {States: [STOPPED], StateChangedBefore: now - 24h}.)
func (s *Service) CountTasks(ctx context.Context, f cks.TaskFilter) (int, error) {
	p, err := countParams(f)
	if err != nil {
		return 0, err
	}
	return s.db.Executor().TaskCount(ctx, p)
}

// countParams validates filter f and returns the count queries' params
// of it: ListTasks' selection without its paging and sort.
func countParams(f cks.TaskFilter) (driver.TaskCountParams, error) {
	f, err := f.Validate()
	if err != nil {
		return driver.TaskCountParams{}, err
	}
	states, err := filterStates(f)
	if err != nil {
		return driver.TaskCountParams{}, err
	}
	return driver.TaskCountParams{States: states, Types: f.Types, StateChangedBefore: driver.Time(f.StateChangedBefore),
		CreatedBy: f.CreatedBy, Match: cks.SearchKey(f.Text), UnconfirmedAbort: f.UnconfirmedAbort}, nil
}

// CountTasksByState implements ledger.Service in one read (TaskCountByState).
func (s *Service) CountTasksByState(ctx context.Context, f cks.TaskFilter) (cks.TaskCounts, error) {
	p, err := countParams(f)
	if err != nil {
		return cks.TaskCounts{}, err
	}
	rows, err := s.db.Executor().TaskCountByState(ctx, p)
	if err != nil {
		return cks.TaskCounts{}, err
	}
	named := f.States
	if len(named) == 0 {
		named = All[:]
	}
	out := cks.TaskCounts{Counts: make(map[cks.TaskState]int, len(named))}
	for _, st := range named {
		out.Counts[st] = 0
	}
	for _, r := range rows {
		out.Counts[cks.TaskState(r.State)] = r.Count
		out.Total += r.Count
	}
	return out, nil
}

// lease gives r a fresh lease held by holder for d and returns its plain
// token (driver.NewLeaseToken); only its hash is written.
func lease(r *driver.TaskRow, now time.Time, holder string, d time.Duration) string {
	token := driver.NewLeaseToken()
	r.ClaimedBy, r.ClaimedAt, r.LeaseTokenHash = holder, now, driver.HashLeaseToken(token)
	r.LeaseExpiresAt, r.LeaseRenewedAt, r.LeaseMs = now.Add(d), now, d.Milliseconds()
	return token
}

// Claim leases up to p.N claimable tasks of the types p.Types (any type
// when empty) to p.Worker: state OPEN, run_after passed, not in the
// dispatch-exclusion set — or CLAIMED or RUNNING under a lease that expired
// unrenewed, which the claim takes back first as the reaper would (the
// attempt counted; FAILED "max attempts" when none is left) —; highest
// priority first, then oldest. Each gets CLAIMED, claimed_by, claimed_at,
// a fresh lease token (NewLeaseToken, stored as its hash), lease_expires_at
// = now+p.Lease (0: the default lease) and attempts+1 — and with
// p.Running moves on to RUNNING in the same transaction, as MarkRunning
// would (one commit less for an executor that starts at once;
// worker.Executor skips MarkRunning for a RUNNING task). The tasks are
// returned in that order, each with its plain token. It is claim_tasks'
// entry point, and every executor in this process claims through it too.
//
// In one driver statement (TaskClaim): the claimable tasks are locked (SKIP
// LOCKED: another claimer's are passed over) and leased at once — and,
// with p.Running, moved on to RUNNING. Neither writes an event: the
// attempt lives on the row until the event that ends it records it whole
// (history reads the claim and the start from there). The lease tokens are made here, one per task
// the claim may take; only their hashes go to the driver, and each plain
// token only to this caller. Claims made at once in this process share the
// statement (claimer). With p.Wait and nothing to claim, the claim waits
// up to that long for a task it can take (claimWaiting). With
// p.AgentToken, each claimed task is leased with an agent credential too.
func (s *Service) Claim(ctx context.Context, p ClaimParams) ([]cks.ClaimedTask, error) {
	if err := cks.ValidateTaskTypes("types", p.Types); err != nil {
		return nil, err
	}
	if p.Lease == 0 {
		p.Lease = s.settings.DefaultLease
	}
	if err := validateClaim(p.Worker, p.N, p.Lease); err != nil {
		return nil, err
	}
	// The moves a claim makes, checked against the table once.
	if err := check(cks.TaskOpen, cks.TaskClaimed); err != nil {
		return nil, err
	}
	if p.Running {
		if err := check(cks.TaskClaimed, cks.TaskRunning); err != nil {
			return nil, err
		}
	}
	if err := validateWait(p.Wait); err != nil {
		return nil, err
	}
	claim := s.claimNow
	if p.Wait > 0 {
		claim = s.claimWaiting
	}
	return claim(ctx, p)
}

// claimNow is Claim's claim, p checked.
func (s *Service) claimNow(ctx context.Context, p ClaimParams) ([]cks.ClaimedTask, error) {
	c := &claim{p: p, tokens: make([]string, p.N), hashes: make([]string, p.N)}
	if p.AgentToken != nil {
		c.agents, c.agentHashes = make([]string, p.N), make([]string, p.N)
	}
	for i := range c.tokens {
		c.tokens[i] = driver.NewLeaseToken()
		c.hashes[i] = driver.HashLeaseToken(c.tokens[i])
		if c.agents != nil {
			c.agents[i] = driver.NewLeaseToken()
			c.agentHashes[i] = driver.AgentTokenHash(c.agents[i], c.hashes[i])
		}
	}
	out, err := s.claimer.Do(ctx, c)
	sortClaimed(out)
	if p.AgentToken != nil {
		for _, t := range out {
			p.AgentToken(t.ID, c.agents[slices.Index(c.tokens, t.LeaseToken)])
		}
	}
	return out, err
}

// executing are the states an executor's lease is good for.
var executing = []cks.TaskState{cks.TaskClaimed, cks.TaskRunning}

// MarkRunning moves a claimed task to RUNNING. It writes no event: the
// start is the row's state_changed_at until the attempt's end records it.
func (s *Service) MarkRunning(ctx context.Context, id int64, token string) (cks.Task, error) {
	return s.onLease(ctx, id, token, executing, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		return moveOne(ctx, ex, now, move{row: cur, to: cks.TaskRunning, actor: cur.ClaimedBy, reason: runningReason})
	})
}

// touch is the lease heartbeat's renewal: it renews the lease for the
// duration given at claim and reports whether the lease is still held (the
// seed's touch_outbox_task convention). held is false exactly when err
// wraps ErrLeaseLost (or ErrNotFound, or is the FieldError of a token that
// is not text).
//
// Heartbeats go through the completer with Complete and Fail: the leases one
// process renews concurrently are renewed in one transaction, each fenced by
// its own token.
func (s *Service) touch(ctx context.Context, id int64, token string) (bool, error) {
	if err := cks.ValidateText("lease_token", token); err != nil {
		return false, err
	}
	_, err := s.completer.Do(ctx, &finish{id: id, token: token, touch: true})
	return err == nil, err
}

// Heartbeat is the lease heartbeat (touch_task's, and every executor's in
// this process, worker.Executor): it renews the lease for the duration
// given at claim (touch) and answers whether the lease is still held and,
// when it is not, whether an abort names it — an operator's stop, update or
// cancel revoked it and waits for the executor to confirm (ConfirmAbort
// with the same token) — or it ended some other way (it ran out unrenewed,
// the task finished), with nothing to confirm. A lost lease is an answer,
// not an error; an unknown task is ErrNotFound.
func (s *Service) Heartbeat(ctx context.Context, id int64, token string) (cks.TouchResult, error) {
	held, err := s.touch(ctx, id, token)
	switch {
	case !errors.Is(err, cks.ErrLeaseLost):
		return cks.TouchResult{Held: held}, err
	case token == "":
		return cks.TouchResult{}, nil // no lease: no abort names it
	}
	_, err = s.db.Executor().AbortFindLatest(ctx, driver.AbortFindLatestParams{TaskID: id,
		LeaseTokenHash: driver.HashLeaseToken(token), Lock: driver.LockNone})
	if errors.Is(err, driver.ErrNoRows) {
		return cks.TouchResult{}, nil
	}
	return cks.TouchResult{AbortRequested: err == nil}, err
}

// AddEvidence records evidence for the current attempt and revision.
func (s *Service) AddEvidence(ctx context.Context, id int64, token, kind, body string) (cks.Evidence, error) {
	if err := cmp.Or(cks.ValidateText("kind", kind), cks.ValidateText("body", body)); err != nil {
		return cks.Evidence{}, err
	}
	if kind == "" {
		return cks.Evidence{}, &cks.FieldError{Field: "kind", Expected: "a non-empty evidence kind"}
	}
	var out cks.Evidence
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := leased(ctx, ex, now, id, token, executing...)
		if err != nil {
			return err
		}
		out, err = addEvidence(ctx, ex, now, cur, kind, body)
		return err
	})
	return out, err
}

// addEvidence records evidence of cur's current attempt, restart and
// revision (cur read and fenced in the transaction).
func addEvidence(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, kind, body string) (cks.Evidence, error) {
	e, err := ex.EvidenceInsert(ctx, driver.EvidenceRow{TaskID: cur.ID, Attempt: cur.Attempts, Restart: cur.Restarts,
		Revision: cur.Revision, Kind: kind, Body: body, Actor: cur.ClaimedBy, CreatedAt: now})
	return toEvidence(e), err
}

// Complete ends the attempt successfully: COMPLETED with result, or
// NEEDS_REVIEW when needsReview. On COMPLETED, dependants whose
// dependencies are now all COMPLETED move WAITING → OPEN in the same
// transaction. The lease is revoked.
//
// Concurrent calls of one process are grouped into one transaction (the
// completer), each fenced by its own token and told its own outcome after the
// commit.
func (s *Service) Complete(ctx context.Context, id int64, token string, needsReview bool, result string) (cks.Task, error) {
	if err := cks.ValidateText("result", result); err != nil {
		return cks.Task{}, err
	}
	if err := cks.ValidateText("lease_token", token); err != nil {
		return cks.Task{}, err
	}
	return s.completer.Do(ctx, &finish{id: id, token: token, needsReview: needsReview, text: result})
}

// completion is the move of Complete on cur (read, locked and fenced):
// COMPLETED, or NEEDS_REVIEW when the executor asks for a review, with the
// result recorded and the lease revoked.
func completion(cur driver.TaskRow, needsReview bool, result string) move {
	to, reason := cks.TaskCompleted, "completed"
	if needsReview {
		to, reason = cks.TaskNeedsReview, "needs review"
	}
	return move{row: cur, to: to, actor: cur.ClaimedBy, reason: reason,
		set: func(r *driver.TaskRow) { r.Result = result; revoke(r) }}
}

// finished returns the tasks of rows, just written in ex's transaction,
// with their dependencies, and the set of those something depends on, and
// releases the dependants of those that are now COMPLETED. One statement reads the dependency edges at both ends of
// every row (TaskDepListAdjacent): a task's own dependencies, and whether
// anything depends on it; only a task something depends on costs the
// dependants' release its statements. The edges are read after the rows
// were locked and written, so an enqueue or edit that adds a dependant
// concurrently has either committed (its edge is read here) or waits for
// this transaction and then sees the task COMPLETED (depState).
func finished(ctx context.Context, ex driver.Executor, now time.Time, rows []driver.TaskRow) ([]cks.Task, map[int64]bool, error) {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	edges, err := ex.TaskDepListAdjacent(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	own := map[int64][]int64{}
	waitedFor := map[int64]bool{}
	for _, e := range edges {
		own[e.TaskID] = append(own[e.TaskID], e.DependsOn)
		waitedFor[e.DependsOn] = true
	}
	out := make([]cks.Task, len(rows))
	var done []int64
	for i, r := range rows {
		// own also holds the edges of a row that depends on another row
		// of the batch: those are its dependencies too.
		out[i] = toTask(r, own[r.ID])
		if cks.TaskState(r.State) == cks.TaskCompleted && waitedFor[r.ID] {
			done = append(done, r.ID)
		}
	}
	if len(done) > 0 {
		if err := releaseDependants(ctx, ex, now, done...); err != nil {
			return nil, nil, err
		}
	}
	return out, waitedFor, nil
}

// releaseDependants moves the WAITING dependants of the just completed
// tasks ids whose dependencies are now all COMPLETED to OPEN (reason: the
// first of ids each depends on). It locks the dependants first, in a
// statement of its own, so that the states of their dependencies are read
// in a later statement, after any concurrent completion of another of them
// has committed (Postgres, READ COMMITTED: two such completions would
// otherwise each miss the other's and leave the dependant WAITING).
func releaseDependants(ctx context.Context, ex driver.Executor, now time.Time, ids ...int64) error {
	waiting, err := ex.TaskDependants(ctx, driver.TaskDependantsParams{DependsOn: ids, State: string(cks.TaskWaiting),
		Lock: driver.LockUpdate})
	if err != nil || len(waiting) == 0 {
		return err
	}
	var deps map[int64][]int64
	if len(ids) > 1 {
		// Which of ids each dependant waited for names it in the reason.
		wids := make([]int64, len(waiting))
		for i, r := range waiting {
			wids[i] = r.ID
		}
		if deps, err = depsOf(ctx, ex, wids...); err != nil {
			return err
		}
	}
	moves, err := released(ctx, ex, waiting, func(r driver.TaskRow) move {
		last := ids[0]
		for _, id := range ids {
			if slices.Contains(deps[r.ID], id) {
				last = id
				break
			}
		}
		return move{to: cks.TaskOpen, actor: "ledger", reason: fmt.Sprintf("dependencies complete (last: %d)", last)}
	})
	if err != nil {
		return err
	}
	_, err = transition(ctx, ex, now, moves)
	return err
}

// released returns the moves of those of the WAITING tasks waiting (read
// and locked) whose dependencies are all COMPLETED, each made by mk.
func released(ctx context.Context, ex driver.Executor, waiting []driver.TaskRow, mk func(driver.TaskRow) move) ([]move, error) {
	deps, states, err := dependenciesOf(ctx, ex, waiting, driver.LockNone)
	if err != nil {
		return nil, err
	}
	done := map[int64]bool{}
	for id, r := range states {
		done[id] = cks.TaskState(r.State) == cks.TaskCompleted
	}
	var moves []move
	for _, r := range waiting {
		if cks.TaskState(r.State) != cks.TaskWaiting || isDispatchExcluded(cks.TaskState(r.State)) {
			continue
		}
		if !slices.ContainsFunc(deps[r.ID], func(d int64) bool { return !done[d] }) {
			m := mk(r)
			m.row = r
			moves = append(moves, m)
		}
	}
	return moves, nil
}

// blockDependants moves the WAITING dependants of task id, which just became
// (or, for ReleaseDependencies, is) FAILED or CANCELLED, to BLOCKED, and so
// on down the dependency graph, with events by actor. It returns how many
// tasks it blocked.
func blockDependants(ctx context.Context, ex driver.Executor, now time.Time, actor string, id int64, state cks.TaskState, why string) (int, error) {
	type item struct {
		id     int64
		reason string
	}
	queue := []item{{id, fmt.Sprintf("dependency %d is %s: %s", id, state, why)}}
	n := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		waiting, err := ex.TaskDependants(ctx, driver.TaskDependantsParams{DependsOn: []int64{it.id},
			State: string(cks.TaskWaiting), Lock: driver.LockUpdate})
		if err != nil {
			return n, err
		}
		moves := make([]move, len(waiting))
		for i, r := range waiting {
			moves[i] = move{row: r, to: cks.TaskBlocked, actor: actor, reason: it.reason,
				set: func(r *driver.TaskRow) { r.LastError = it.reason }}
		}
		blocked, err := transition(ctx, ex, now, moves)
		if err != nil {
			return n, err
		}
		n += len(blocked)
		for _, b := range blocked {
			queue = append(queue, item{b.ID, fmt.Sprintf("dependency %d is BLOCKED (%s)", b.ID, it.reason)})
		}
	}
	return n, nil
}

// Fail ends the attempt unsuccessfully. When retryable and attempts <
// max_attempts the task goes back to OPEN with run_after = now + backoff
// with jitter (backoff); otherwise it is FAILED (reason "max
// attempts: …" when retryable but exhausted) and its WAITING dependants
// become BLOCKED. The lease is revoked.
//
// , through the completer as Complete.
func (s *Service) Fail(ctx context.Context, id int64, token string, retryable bool, reason string) (cks.Task, error) {
	if err := cks.ValidateText("reason", reason); err != nil {
		return cks.Task{}, err
	}
	if err := cks.ValidateText("lease_token", token); err != nil {
		return cks.Task{}, err
	}
	return s.completer.Do(ctx, &finish{id: id, token: token, fail: true, retryable: retryable, text: reason})
}

// RequestInput parks the task in NEEDS_INPUT with question, revoking the
// lease. It does not burn an attempt: the claim's increment is given back
// (attempts-1), so the next claim after Answer carries the same attempt
// number and the evidence recorded before the question stays current.
func (s *Service) RequestInput(ctx context.Context, id int64, token, question string) (cks.Task, error) {
	if err := ValidateQuestion(question); err != nil {
		return cks.Task{}, err
	}
	return s.onLease(ctx, id, token, executing, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		return moveOne(ctx, ex, now, move{row: cur, to: cks.TaskNeedsInput, actor: cur.ClaimedBy, reason: question,
			attempt: cur.Attempts, set: func(r *driver.TaskRow) {
				r.Question, r.Answer = question, ""
				r.Attempts--
				revoke(r)
			}})
	})
}

// Answer records text as the answer to a NEEDS_INPUT task and returns it
// to OPEN (run_after cleared).
func (s *Service) Answer(ctx context.Context, id int64, actor, text string) (cks.Task, error) {
	if err := cmp.Or(cks.ValidateText("actor", actor), ValidateAnswer(text)); err != nil {
		return cks.Task{}, err
	}
	return s.onTask(ctx, id, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		if !admits(cks.TaskState(cur.State), cks.ActionAnswer) {
			return cur, wrongState(cur, "answer", cks.TaskNeedsInput)
		}
		return moveOne(ctx, ex, now, move{row: cur, to: cks.TaskOpen, actor: actor, reason: "answered: " + text,
			set: func(r *driver.TaskRow) { r.Answer, r.RunAfter = text, time.Time{} }})
	})
}

// ClaimReview moves a NEEDS_REVIEW task to REVIEWING under a fresh lease
// held by reviewer for d (0: the default lease, Settings.DefaultLease)
// (attempts unchanged), returned with its plain token as Claim returns it.
// A REVIEWING task whose review lease expired unrenewed is taken back
// first, as the reaper would (back to NEEDS_REVIEW), and then claimed.
func (s *Service) ClaimReview(ctx context.Context, id int64, reviewer string, d time.Duration) (cks.ClaimedTask, error) {
	if err := cks.ValidateText("reviewer", reviewer); err != nil {
		return cks.ClaimedTask{}, err
	}
	if d == 0 {
		d = s.settings.DefaultLease
	}
	if err := validateClaim(reviewer, 1, d); err != nil {
		return cks.ClaimedTask{}, err
	}
	var token string
	t, err := s.onTask(ctx, id, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		if cks.TaskState(cur.State) == cks.TaskReviewing && !leaseLive(cur, now) {
			back, err := reclaim(ctx, ex, now, []driver.TaskRow{cur}, ActorReaper, ReasonLeaseExpired)
			if err != nil {
				return cur, err
			}
			cur = back[0]
		}
		if !admits(cks.TaskState(cur.State), cks.ActionReview) {
			return cur, wrongState(cur, "claim review", cks.TaskNeedsReview)
		}
		return moveOne(ctx, ex, now, move{row: cur, to: cks.TaskReviewing, actor: reviewer, reason: "review claimed",
			set: func(r *driver.TaskRow) { token = lease(r, now, reviewer, d) }})
	})
	if err != nil {
		return cks.ClaimedTask{}, err
	}
	return cks.ClaimedTask{Task: t, LeaseToken: token, Traceparent: t.Traceparent}, nil
}

// Approve ends a review: REVIEWING → COMPLETED (releasing dependants like
// Complete), recording note.
func (s *Service) Approve(ctx context.Context, id int64, token, note string) (cks.Task, error) {
	return s.decideReview(ctx, id, token, true, note)
}

// Reject ends a review: REVIEWING → OPEN, recording note as the review.
func (s *Service) Reject(ctx context.Context, id int64, token, note string) (cks.Task, error) {
	return s.decideReview(ctx, id, token, false, note)
}

func (s *Service) decideReview(ctx context.Context, id int64, token string, approve bool, note string) (cks.Task, error) {
	if err := cks.ValidateText("note", note); err != nil {
		return cks.Task{}, err
	}
	var out cks.Task
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := leased(ctx, ex, now, id, token, cks.TaskReviewing)
		if err != nil {
			return err
		}
		to, reason := cks.TaskOpen, "review rejected: "+note
		if approve {
			to, reason = cks.TaskCompleted, "review approved: "+note
		}
		r, err := moveOne(ctx, ex, now, move{row: cur, to: to, actor: cur.ClaimedBy, reason: reason,
			set: func(r *driver.TaskRow) { r.ReviewNote, r.RunAfter = note, time.Time{}; revoke(r) }})
		if err != nil {
			return err
		}
		ts, _, err := finished(ctx, ex, now, []driver.TaskRow{r})
		if err == nil {
			out = ts[0]
		}
		return err
	})
	return out, err
}

// Cancel moves a non-terminal task to CANCELLED (terminal), revoking any
// lease, so its executor gets ErrLeaseLost on its next call; WAITING
// dependants become BLOCKED. A CLAIMED or RUNNING task also gets a
// pending Abort (deadline DefaultAbortDeadline) and TopicTaskAborts is
// published, so its executor learns of the cancel at once and confirms;
// Cancel itself does not wait.
func (s *Service) Cancel(ctx context.Context, id int64, actor, reason string) (cks.Task, error) {
	if err := cmp.Or(cks.ValidateText("actor", actor), cks.ValidateText("reason", reason)); err != nil {
		return cks.Task{}, err
	}
	return s.onTask(ctx, id, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		out, _, err := cancelTx(ctx, ex, now, cur, actor, reason)
		return out, err
	})
}

// cancelTx is Cancel's work on cur (read and locked): CANCELLED with the
// lease revoked, a pending abort (published on TopicTaskAborts, and
// returned) when cur was CLAIMED or RUNNING, and its WAITING dependants
// BLOCKED. Update's CancelChildren and Bulk use it too.
func cancelTx(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, actor, reason string) (driver.TaskRow, *cks.Abort, error) {
	out, err := moveOne(ctx, ex, now, move{row: cur, to: cks.TaskCancelled, actor: actor, reason: reason,
		set: func(r *driver.TaskRow) { r.LastError = reason; revoke(r) }})
	if err != nil {
		return out, nil, err
	}
	var ab *cks.Abort
	if st := cks.TaskState(cur.State); st == cks.TaskClaimed || st == cks.TaskRunning {
		a, err := insertAbort(ctx, ex, now, cur, actor, "cancelled: "+reason, cks.DefaultAbortDeadline)
		if err != nil {
			return out, nil, err
		}
		ab = &a
	}
	_, err = blockDependants(ctx, ex, now, "ledger", cur.ID, cks.TaskCancelled, reason)
	return out, ab, err
}

// leasedStates are the states that have a lease: a Heartbeat renews it, and
// once it expired a claim or the reaper reclaims it (the schema's
// LeasedStates, its index of them on Postgres).
var leasedStates = [...]cks.TaskState{cks.TaskClaimed, cks.TaskRunning, cks.TaskReviewing}

// ReclaimExpired is the lease reaper's pass: it takes back every lease
// that is no longer live at now (leaseLive: expired unrenewed) — a
// CLAIMED or RUNNING task back to OPEN (the attempt stays counted), or
// FAILED with reason "max attempts" when attempts reached max_attempts; a
// REVIEWING task back to NEEDS_REVIEW — with an event by actor "reaper",
// reason "lease expired". The next claim takes such leases back too
// (claimBatch), so the reaper is the safety net for the tasks nobody
// claims. It returns how many tasks it reclaimed.
//
// The expired leases are read in batches, locked with SKIP LOCKED (a lease
// another transaction is renewing or ending is that one's business).
func (s *Service) ReclaimExpired(ctx context.Context, now time.Time) (int, error) {
	now = driver.Time(now)
	total := 0
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, _ time.Time) error {
		total = 0
		for {
			n, full, err := reclaimExpired(ctx, ex, now)
			total += n
			if err != nil || !full {
				return err
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// expiredLeases reads, locked (SKIP LOCKED), up to limit tasks in a
// leased state whose lease is no longer live at now — never one in a
// dispatch-excluded state: the leases reclaimExpired takes back, and the
// claim's probe for them. full reports that the read was cut at limit.
func expiredLeases(ctx context.Context, ex driver.Executor, now time.Time, limit int) (rows []driver.TaskRow, full bool, err error) {
	// The query selects lease_expires_at <= now; leaseLive decides.
	rows, err = ex.TaskLeaseExpired(ctx, leasesExpiringBy(now, limit))
	if err != nil {
		return nil, false, err
	}
	full = len(rows) == limit
	return slices.DeleteFunc(rows, func(r driver.TaskRow) bool { return leaseLive(r, now) }), full, nil
}

// leasesExpiringBy selects up to limit tasks in a leased state (never a
// dispatch-excluded one) whose lease expires unrenewed by at.
func leasesExpiringBy(at time.Time, limit int) driver.TaskLeaseExpiredParams {
	return driver.TaskLeaseExpiredParams{States: strs(leasedStates[:]), Excluded: strs(DispatchExcluded[:]),
		ExpiredAt: at, RenewedBefore: at, Limit: limit}
}

// reclaimExpired takes back, in ex's transaction, one batch of the leases
// that are no longer live at now (expiredLeases) as the reaper does
// (reclaim, actor ActorReaper, reason ReasonLeaseExpired). full reports a
// whole batch: there may be more.
func reclaimExpired(ctx context.Context, ex driver.Executor, now time.Time) (n int, full bool, err error) {
	rows, full, err := expiredLeases(ctx, ex, now, reclaimBatch)
	if err != nil {
		return 0, false, err
	}
	if _, err := reclaim(ctx, ex, now, rows, ActorReaper, ReasonLeaseExpired); err != nil {
		return 0, false, err
	}
	return len(rows), full, nil
}

// The event of a lease taken back once it expired unrenewed, whichever of
// the claim and the reaper took it back first: one rule, one record.
const (
	ActorReaper        = "reaper"
	ReasonLeaseExpired = "lease expired"
)

// ReleaseDependencies is the safety net of the dependency_release
// sweeper for WAITING tasks (Complete, Fail and Cancel already do this
// work in their own transactions): every WAITING task whose dependencies
// are all COMPLETED (vacuously, one with none) moves to OPEN, and every
// WAITING task with a FAILED or CANCELLED dependency moves to BLOCKED
// with a reason naming that dependency, cascading to its own WAITING
// dependants as Fail does. Every change goes through the transition
// table with an event by actor "dependency_release"; dispatch-excluded
// tasks (ledger.DispatchExcluded) are never touched. One transaction.
//
// COMPLETED is never left, so what the first reads see of a completed
// dependency cannot be undone by a concurrent transaction; a FAILED or
// CANCELLED one can be, by a retry, and is read with a shared lock (the
// retry waits, then unblocks). The WAITING tasks are then locked and their
// dependencies read again before any is released.
func (s *Service) ReleaseDependencies(ctx context.Context) (DependencyRelease, error) {
	var out DependencyRelease
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		out = DependencyRelease{}
		var waiting []driver.TaskRow
		for after := int64(0); ; {
			page, err := ex.TaskList(ctx, driver.TaskListParams{States: []string{string(cks.TaskWaiting)}, After: after, Limit: waitingPage})
			if err != nil {
				return err
			}
			waiting = append(waiting, page...)
			if len(page) < waitingPage {
				break
			}
			after = page[len(page)-1].ID
		}
		waiting = slices.DeleteFunc(waiting, func(r driver.TaskRow) bool { return isDispatchExcluded(cks.TaskState(r.State)) })
		if len(waiting) == 0 {
			return nil
		}
		ids := make([]int64, len(waiting))
		for i, r := range waiting {
			ids[i] = r.ID
		}
		// Shared locks: a retry (which locks the task it opens again)
		// either waits for this transaction, and then unblocks what it
		// blocked, or has committed, and its task is read as it left it.
		_, depRows, err := dependenciesOf(ctx, ex, waiting, driver.LockShare)
		if err != nil {
			return err
		}
		// Every FAILED or CANCELLED dependency of a WAITING task, by id.
		for _, id := range slices.Sorted(maps.Keys(depRows)) {
			d := depRows[id]
			if st := cks.TaskState(d.State); st == cks.TaskFailed || st == cks.TaskCancelled {
				n, err := blockDependants(ctx, ex, now, ActorDependencyRelease, d.ID, st,
					"found by the dependency_release sweeper")
				if err != nil {
					return err
				}
				out.Blocked += n
			}
		}
		locked, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		moves, err := released(ctx, ex, locked, func(driver.TaskRow) move {
			return move{to: cks.TaskOpen, actor: ActorDependencyRelease,
				reason: "dependencies complete (found by the dependency_release sweeper)"}
		})
		if err != nil {
			return err
		}
		rows, err := transition(ctx, ex, now, moves)
		out.Released = len(rows)
		return err
	})
	if err != nil {
		return DependencyRelease{}, err
	}
	return out, nil
}
