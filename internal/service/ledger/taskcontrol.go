package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// insertAbort records a pending abort of cur's current lease (cur read and
// locked in the transaction, CLAIMED or RUNNING, its lease not yet revoked
// in this copy) and publishes TopicTaskAborts.
func insertAbort(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, actor, reason string, deadline time.Duration) (cks.Abort, error) {
	a, err := ex.AbortInsert(ctx, driver.AbortRow{TaskID: cur.ID, LeaseTokenHash: cur.LeaseTokenHash,
		Executor: cur.ClaimedBy, Attempt: cur.Attempts, Restart: cur.Restarts, RequestedBy: actor, Reason: reason,
		RequestedAt: now, DeadlineAt: driver.Time(now.Add(deadline)), Outcome: string(cks.AbortPending)})
	if err != nil {
		return cks.Abort{}, fmt.Errorf("abort of task %d: %w", cur.ID, err)
	}
	return toAbort(a), ex.Notify(ctx, cks.TopicTaskAborts)
}

// stop holds task p.ID in STOPPED (StopTask without the wait). For
// CLAIMED/RUNNING it revokes the lease, gives the attempt back
// (attempts-1: a stop must not consume the retry budget), records a
// pending Abort naming the executor with deadline_at = now+deadline, and
// publishes TopicTaskAborts, all in one transaction; the Abort is
// returned. For OPEN, WAITING, BLOCKED, NEEDS_INPUT, NEEDS_REVIEW and
// REVIEWING it only moves the task (a reviewer's lease is revoked without
// an abort request). A terminal or already STOPPED task is ErrConflict
// naming its state. The reason must be non-empty (FieldError reason), the
// deadline as ValidateDeadline; the deadline used is returned with the
// task, the abort and the state the task was stopped from.
func (s *Service) stop(ctx context.Context, p StopParams) (cks.TaskStopResult, time.Duration, error) {
	if err := cmp.Or(cks.ValidateText("actor", p.Actor), ValidateStopReason(p.Reason)); err != nil {
		return cks.TaskStopResult{}, 0, err
	}
	deadline, err := cks.ValidateDeadline(p.Deadline)
	if err != nil {
		return cks.TaskStopResult{}, 0, err
	}
	actor, reason := p.Actor, p.Reason
	var (
		ab   *cks.Abort
		from cks.TaskState
	)
	t, err := s.onTask(ctx, p.ID, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		var (
			out driver.TaskRow
			err error
		)
		from = cks.TaskState(cur.State)
		out, ab, err = stopTx(ctx, ex, now, cur, actor, "stopped: "+reason, reason, deadline)
		return out, err
	})
	if err != nil {
		return cks.TaskStopResult{Task: t}, deadline, err
	}
	return cks.TaskStopResult{Task: t, From: from, Abort: ab}, deadline, nil
}

// stopTx moves cur (read and locked) to STOPPED, revoking any lease. A
// CLAIMED or RUNNING task also gives its attempt back (attempts-1; the
// event carries the aborted attempt) and gets a pending abort naming its
// executor. reason goes to the event, abortReason to the abort request.
func stopTx(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, actor, reason, abortReason string, deadline time.Duration) (driver.TaskRow, *cks.Abort, error) {
	if cks.TaskState(cur.State) == cks.TaskStopped {
		return cur, nil, fmt.Errorf("task %d is already STOPPED: %w", cur.ID, cks.ErrConflict)
	}
	leased := cks.TaskState(cur.State) == cks.TaskClaimed || cks.TaskState(cur.State) == cks.TaskRunning
	out, err := moveOne(ctx, ex, now, move{row: cur, to: cks.TaskStopped, actor: actor, reason: reason, attempt: cur.Attempts,
		set: func(r *driver.TaskRow) {
			if leased {
				r.Attempts--
			}
			revoke(r)
		}})
	if err != nil || !leased {
		return out, nil, err
	}
	ab, err := insertAbort(ctx, ex, now, cur, actor, abortReason, deadline)
	if err != nil {
		return out, nil, err
	}
	return out, &ab, nil
}

// Start releases a STOPPED task: to OPEN, or WAITING when a dependency
// is not COMPLETED at this moment, or BLOCKED when one FAILED or was
// CANCELLED; restarts+1, attempts unchanged, run_after cleared. Any
// other state is ErrConflict naming it.
func (s *Service) Start(ctx context.Context, id int64, actor, reason string) (cks.Task, error) {
	if err := cmp.Or(cks.ValidateText("actor", actor), cks.ValidateText("reason", reason)); err != nil {
		return cks.Task{}, err
	}
	return s.onTask(ctx, id, func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error) {
		return startTx(ctx, ex, now, cur, actor, reason, "")
	})
}

// startTx releases the STOPPED task cur (read and locked) to the state its
// dependencies call for now: restarts+1, run_after cleared. changes are
// its event's: those of the edit that restarted the task, or "".
func startTx(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, actor, reason, changes string) (driver.TaskRow, error) {
	if !admits(cks.TaskState(cur.State), cks.ActionStart) {
		return cur, wrongState(cur, "start", cks.TaskStopped)
	}
	to, why, err := stateNow(ctx, ex, cur.ID, "depends_on")
	if err != nil {
		return cur, err
	}
	if reason == "" {
		reason = "started"
	}
	return moveOne(ctx, ex, now, move{row: cur, to: to, actor: actor, reason: reason + " (" + why + ")", changes: changes,
		set: func(r *driver.TaskRow) { r.Restarts++; r.RunAfter = time.Time{} }})
}

// delayable are the states update's run_after and delay apply to: a task
// no one has claimed and that no start would release (startTx clears
// run_after).
var delayable = [...]cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked}

// update applies p (validated with TaskPatch.Validate) as one
// operation. STOPPED, OPEN, WAITING, BLOCKED: in place; a dependency
// edit re-evaluates OPEN/WAITING/BLOCKED as Enqueue would (a STOPPED
// task is evaluated by Start). CLAIMED/RUNNING with a material patch:
// stop (as StopTask, with an Abort) → apply → start (as Start), one
// transaction, so no reader sees the task STOPPED; with a non-material
// patch: live. NEEDS_INPUT, NEEDS_REVIEW, REVIEWING: non-material edits
// in place, material ones ErrConflict ("stop it first"). Terminal:
// ErrConflict. Material edits bump revision. A dependency that does not
// exist or closes a cycle is a FieldError naming add_depends_on; a
// cancel_children id that is not a child is a FieldError naming
// cancel_children. Any error changes nothing.
//
// An update that adds dependencies first takes the dependency graph's lock
// (TaskLockDependencyGraph), so that two updates cannot each pass the cycle
// check and together close a cycle. An update whose new children lose a
// dedupe race is run again (the retry then finds the winner), as Enqueue is.
// An update applied in place or live appends an event of its own (From and To
// the task's state, reason "update: FIELDS", and each field's old and new
// value, editChanges), so every edit is in the task's log; a restart
// records the edit in its stop and start events, the values on the start's.
func (s *Service) update(ctx context.Context, id int64, actor string, p cks.TaskPatch, deadline time.Duration) (cks.UpdateResult, error) {
	if err := cks.ValidateText("actor", actor); err != nil {
		return cks.UpdateResult{}, err
	}
	p, err := p.Validate()
	if err != nil {
		return cks.UpdateResult{}, err
	}
	if deadline, err = cks.ValidateDeadline(deadline); err != nil {
		return cks.UpdateResult{}, err
	}
	dedupe := slices.ContainsFunc(p.AddChildren, func(n cks.NewTask) bool { return n.DedupeKey != "" })
	for try := 0; ; try++ {
		var out cks.UpdateResult
		err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
			var err error
			out, err = s.updateTx(ctx, ex, now, id, actor, p, deadline)
			return err
		})
		if isUnique(err) && dedupe && try < maxUniqueRetries {
			continue
		}
		return out, err
	}
}

func (s *Service) updateTx(ctx context.Context, ex driver.Executor, now time.Time, id int64, actor string, p cks.TaskPatch, deadline time.Duration) (cks.UpdateResult, error) {
	var out cks.UpdateResult
	if len(p.AddDependsOn) > 0 {
		if err := ex.TaskLockDependencyGraph(ctx); err != nil {
			return out, fmt.Errorf("update task %d: dependency lock: %w", id, err)
		}
	}
	cur, err := getRow(ctx, ex, id, driver.LockUpdate)
	if err != nil {
		return out, err
	}
	budget, newBudget, err := patchBudget(ctx, ex, id, p)
	if err != nil {
		return out, err
	}
	state := cks.TaskState(cur.State)
	material := p.Material()
	fields := strings.Join(p.Fields(), ", ")
	summary := "update: " + fields
	running := state == cks.TaskClaimed || state == cks.TaskRunning
	switch {
	case !admits(state, cks.ActionUpdate):
		return out, fmt.Errorf("task %d is %s (terminal) and cannot be updated: %w", id, state, cks.ErrConflict)
	case p.Delays() && !slices.Contains(delayable[:], state):
		return out, fmt.Errorf("task %d is %s: run_after and delay hold back a task no one has claimed (%s); stop it and start it again first: %w",
			id, state, strings.Join(strs(delayable[:]), ", "), cks.ErrConflict)
	case running && material:
		// stop → apply → start in this one transaction: no reader sees STOPPED.
		out.Path = cks.UpdateRestart
		stopped, ab, err := stopTx(ctx, ex, now, cur, actor, summary, summary, deadline)
		if err != nil {
			return out, err
		}
		out.Abort = ab
		applied, children, err := s.applyPatch(ctx, ex, now, stopped, actor, p)
		if err != nil {
			return out, err
		}
		out.Children = children
		changes, err := editChanges(cur, p, children, applied.RunAfter, budget, newBudget)
		if err != nil {
			return out, err
		}
		started, err := startTx(ctx, ex, now, applied, actor, "restarted after "+summary, changes)
		if err != nil {
			return out, err
		}
		out.Task, err = taskOf(ctx, ex, started)
		return out, err
	case running:
		out.Path = cks.UpdateLive
	case material && !admits(state, cks.ActionUpdateMaterial):
		return out, fmt.Errorf("task %d is %s: a material edit (%s) needs the task stopped first: %w",
			id, state, fields, cks.ErrConflict)
	default:
		out.Path = cks.UpdateInPlace
	}
	applied, children, err := s.applyPatch(ctx, ex, now, cur, actor, p)
	if err != nil {
		return out, err
	}
	out.Children = children
	// The edit's own event: who changed which fields, from what to what,
	// and when.
	changes, err := editChanges(cur, p, children, applied.RunAfter, budget, newBudget)
	if err != nil {
		return out, err
	}
	if err := ex.TaskEventInsertMany(ctx, []driver.TaskEventRow{{TaskID: id, At: now, Actor: actor,
		FromState: applied.State, ToState: applied.State, Attempt: applied.Attempts, Reason: summary, Changes: changes}}); err != nil {
		return out, err
	}
	if len(p.AddDependsOn)+len(p.RemoveDependsOn) > 0 &&
		slices.Contains([]cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked}, cks.TaskState(applied.State)) {
		// A dependency edit re-evaluates the task as Enqueue would.
		to, why, err := stateNow(ctx, ex, id, "add_depends_on")
		if err != nil {
			return out, err
		}
		if to != cks.TaskState(applied.State) {
			if applied, err = moveOne(ctx, ex, now, move{row: applied, to: to, actor: actor, reason: summary + " (" + why + ")"}); err != nil {
				return out, err
			}
		}
	}
	out.Task, err = taskOf(ctx, ex, applied)
	return out, err
}

// applyPatch writes p to cur (read and locked) without changing its state,
// and returns the row as it now is with the children p created. Cancelled
// children go through cancelTx, like Cancel (which may block a WAITING cur
// that depends on one: the row is read again before the fields are
// written).
func (s *Service) applyPatch(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, actor string, p cks.TaskPatch) (driver.TaskRow, []cks.Task, error) {
	depMap, err := depsOf(ctx, ex, cur.ID)
	if err != nil {
		return cur, nil, err
	}
	deps := depMap[cur.ID]
	var removed []driver.TaskDep
	for _, d := range p.RemoveDependsOn {
		if !slices.Contains(deps, d) {
			return cur, nil, &cks.FieldError{Field: "remove_depends_on",
				Expected: fmt.Sprintf("ids of current dependencies (task %d does not depend on %d)", cur.ID, d)}
		}
		deps = slices.DeleteFunc(deps, func(x int64) bool { return x == d })
		removed = append(removed, driver.TaskDep{TaskID: cur.ID, DependsOn: d})
	}
	if err := ex.TaskDepDeleteMany(ctx, removed); err != nil {
		return cur, nil, fmt.Errorf("update task %d: dependencies: %w", cur.ID, err)
	}
	var added []int64
	for _, d := range p.AddDependsOn {
		if d == cur.ID {
			return cur, nil, &cks.FieldError{Field: "add_depends_on",
				Expected: fmt.Sprintf("ids of other tasks (task %d cannot depend on itself)", d)}
		}
		if !slices.Contains(deps, d) && !slices.Contains(added, d) {
			added = append(added, d)
		}
	}
	if len(added) > 0 {
		if _, _, err := depState(ctx, ex, added, "add_depends_on"); err != nil {
			return cur, nil, err
		}
		var qerr error
		cycle := findCycle(cur.ID, added, func(id int64) []int64 {
			if qerr != nil {
				return nil
			}
			m, err := depsOf(ctx, ex, id)
			if err != nil {
				qerr = err
			}
			return m[id]
		})
		if qerr != nil {
			return cur, nil, qerr
		}
		if cycle != nil {
			return cur, nil, &cks.FieldError{Field: "add_depends_on",
				Expected: fmt.Sprintf("dependencies that close no cycle (this one would: %s)", formatPath(cycle))}
		}
		edges := make([]driver.TaskDep, len(added))
		for i, d := range added {
			edges[i] = driver.TaskDep{TaskID: cur.ID, DependsOn: d}
		}
		if err := ex.TaskDepInsertMany(ctx, edges); err != nil {
			return cur, nil, fmt.Errorf("update task %d: dependencies: %w", cur.ID, err)
		}
	}
	for _, c := range p.CancelChildren {
		child, err := getRow(ctx, ex, c, driver.LockUpdate)
		if errors.Is(err, cks.ErrNotFound) || (err == nil && child.ParentID != cur.ID) {
			return cur, nil, &cks.FieldError{Field: "cancel_children",
				Expected: fmt.Sprintf("ids of children of task %d (%d is not one)", cur.ID, c)}
		}
		if err != nil {
			return cur, nil, err
		}
		if _, _, err := cancelTx(ctx, ex, now, child, actor, fmt.Sprintf("cancelled by an update of parent %d", cur.ID)); err != nil {
			return cur, nil, fmt.Errorf("cancel_children: %w", err)
		}
	}
	var children []cks.Task
	if len(p.AddChildren) > 0 {
		// One enqueue batch: the children are enqueued in order, as one
		// Enqueue after another would, over reads made once for all.
		ns := make([]cks.NewTask, len(p.AddChildren))
		for i, n := range p.AddChildren {
			parent := cur.ID
			n.ParentID = &parent
			if n.CreatedBy == "" {
				n.CreatedBy = actor
			}
			ns[i] = n
		}
		created, err := s.enqueueManyTx(ctx, ex, now, ns, func(i int, f string) string { return fmt.Sprintf("add_children[%d].%s", i, f) })
		if err != nil {
			return cur, nil, err
		}
		for i, c := range created {
			if err := checkChildDedupe(i, cur.ID, c.Task, c.Created); err != nil {
				return cur, nil, err
			}
			children = append(children, c.Task)
		}
	}
	if len(p.CancelChildren) > 0 {
		// A cancelled child may have blocked cur.
		if cur, err = getRow(ctx, ex, cur.ID, driver.LockUpdate); err != nil {
			return cur, nil, err
		}
	}
	for _, f := range []struct {
		dst *string
		val *string
	}{{&cur.Title, p.Title}, {&cur.Description, p.Description}, {&cur.AcceptanceCriteria, p.AcceptanceCriteria}} {
		if f.val != nil {
			*f.dst = *f.val
		}
	}
	if len(p.Payload) > 0 {
		cur.Payload = p.Payload
	}
	if len(p.Metadata) > 0 {
		cur.Metadata = p.Metadata
	}
	if p.Priority != nil {
		cur.Priority = *p.Priority
	}
	if p.AttemptTimeout != "" {
		d, err := cks.ParseAttemptTimeout("attempt_timeout", p.AttemptTimeout)
		if err != nil {
			return cur, nil, err
		}
		cur.AttemptTimeoutMs = d.Milliseconds()
	}
	if p.Delays() {
		if cur.RunAfter, err = delayedUntil(cks.NewTask{RunAfter: p.RunAfter, Delay: p.Delay}, now, "run_after"); err != nil {
			return cur, nil, err
		}
		// A waiting claim learns when the task is now due (the waiting
		// room reads again): at once, or at its new time.
		if cks.TaskState(cur.State) == cks.TaskOpen {
			if err := ex.Notify(ctx, cks.TopicTasksReady); err != nil {
				return cur, nil, err
			}
		}
	}
	if p.ConcurrencyKeys != nil {
		cur.ConcurrencyKeys = encodeKeys(*p.ConcurrencyKeys)
		// The task may be claimable now, or a running attempt may have
		// freed a place under a limit: the waiting claims look again.
		if err := ex.Notify(ctx, cks.TopicTasksReady); err != nil {
			return cur, nil, err
		}
	}
	if !p.ExpiresAt.IsZero() {
		if cur.ExpiresAt, err = expiresAt(cks.NewTask{ExpiresAt: p.ExpiresAt}, now, cur.RunAfter, "expires_at"); err != nil {
			return cur, nil, err
		}
	}
	if p.MaxTokens != nil || p.MaxCost != nil {
		_, b, err := patchBudget(ctx, ex, cur.ID, p)
		if err != nil {
			return cur, nil, err
		}
		if _, err := putBudget(ctx, ex, cur.ID, b); err != nil {
			return cur, nil, err
		}
	}
	if p.Material() {
		cur.Revision++
	}
	cur.UpdatedAt = now
	if _, err := ex.TaskUpdateMany(ctx, []driver.TaskRow{cur}); err != nil {
		return cur, nil, fmt.Errorf("update task %d: %w", cur.ID, err)
	}
	return cur, children, nil
}

// formatPath renders a dependency cycle as "1 → 2 → 1".
func formatPath(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, " → ")
}

// ConfirmAbort is the executor's confirmation that the work of the
// revoked lease leaseToken has stopped: the task's abort for that token
// becomes AbortConfirmed (also after it was declared unconfirmed) and
// TopicTaskAborts is published. ErrNotFound when no abort names the
// token (the lease ended some other way: nothing to confirm).
//
// Confirming an abort that is already confirmed changes nothing (its
// resolved_at stays the first confirmation's).
func (s *Service) ConfirmAbort(ctx context.Context, id int64, token string) (cks.Abort, error) {
	if err := cks.ValidateText("lease_token", token); err != nil {
		return cks.Abort{}, err
	}
	noAbort := fmt.Errorf("no abort of task %d for that lease: %w", id, cks.ErrNotFound)
	if token == "" {
		return cks.Abort{}, noAbort
	}
	var out cks.Abort
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		a, err := ex.AbortFindLatest(ctx, driver.AbortFindLatestParams{TaskID: id, LeaseTokenHash: driver.HashLeaseToken(token),
			Lock: driver.LockUpdate})
		if errors.Is(err, driver.ErrNoRows) {
			return noAbort
		}
		if err != nil {
			return err
		}
		if a.Outcome != string(cks.AbortConfirmed) {
			a.Outcome, a.ResolvedAt = string(cks.AbortConfirmed), now
			if _, err := ex.AbortUpdateMany(ctx, []driver.AbortRow{a}); err != nil {
				return err
			}
		}
		out = toAbort(a)
		return ex.Notify(ctx, cks.TopicTaskAborts)
	})
	return out, err
}

// resolveAborts declares the pending ones of the aborts ids unconfirmed,
// in one transaction (read and locked in one statement, written in one),
// and publishes TopicTaskAborts when it resolved any. It returns every one
// of them as it now stands, by id; an id that is no abort is absent.
func (s *Service) resolveAborts(ctx context.Context, ids []int64) (map[int64]cks.Abort, error) {
	var out map[int64]cks.Abort
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		out = map[int64]cks.Abort{}
		rows, err := ex.AbortGetMany(ctx, driver.AbortGetManyParams{IDs: ids, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		var due []driver.AbortRow
		for _, a := range rows {
			if a.Outcome == string(cks.AbortPending) { // else settled already: returned as it is
				a.Outcome, a.ResolvedAt = string(cks.AbortUnconfirmed), now
				due = append(due, a)
			}
			out[a.ID] = toAbort(a)
		}
		if len(due) == 0 {
			return nil
		}
		if _, err := ex.AbortUpdateMany(ctx, due); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicTaskAborts)
	})
	return out, err
}

// ExpireAborts declares every pending abort whose deadline is at or
// before now unconfirmed, so an outcome is stored even when the caller
// that waited for it is gone. It returns how many it resolved.
//
// Pending aborts another transaction holds (SKIP LOCKED) are being settled by
// it.
func (s *Service) ExpireAborts(ctx context.Context, now time.Time) (int, error) {
	now = driver.Time(now)
	n := 0
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, _ time.Time) error {
		n = 0
		for {
			due, err := ex.AbortPendingDue(ctx, driver.AbortPendingDueParams{Outcome: string(cks.AbortPending),
				Now: now, Limit: expireBatch})
			if err != nil {
				return err
			}
			for i := range due {
				due[i].Outcome, due[i].ResolvedAt = string(cks.AbortUnconfirmed), now
			}
			k, err := ex.AbortUpdateMany(ctx, due)
			if err != nil {
				return err
			}
			n += k
			if len(due) < expireBatch {
				break
			}
		}
		if n == 0 {
			return nil
		}
		return ex.Notify(ctx, cks.TopicTaskAborts)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// LeaseHeld reports, reading only, whether leaseToken still holds task id's
// live lease (fence, at the service's clock's now): the cheap check an
// executor makes when woken by TopicTaskAborts. A lease that expired
// unrenewed is not held, whether or not it was taken back yet.
func (s *Service) LeaseHeld(ctx context.Context, id int64, token string) (bool, error) {
	r, err := getRow(ctx, s.db.Executor(), id, driver.LockNone)
	if err != nil {
		return false, err
	}
	return fence(r, token, driver.Time(s.clock.Now()), leasedStates[:]) == nil, nil
}

// RecordDecision records a decision of the current attempt, fenced like
// AddEvidence. kind must be non-empty; derivedFromRevision must be
// 1..the task's revision (FieldError derived_from_revision).
func (s *Service) RecordDecision(ctx context.Context, id int64, token, kind, text string, derivedFrom int) (cks.Decision, error) {
	if err := cmp.Or(cks.ValidateText("kind", kind), cks.ValidateText("text", text)); err != nil {
		return cks.Decision{}, err
	}
	if kind == "" {
		return cks.Decision{}, &cks.FieldError{Field: "kind", Expected: "a non-empty decision kind"}
	}
	var out cks.Decision
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := leased(ctx, ex, now, id, token, executing...)
		if err != nil {
			return err
		}
		out, err = insertDecision(ctx, ex, now, cur, kind, text, derivedFrom)
		return err
	})
	return out, err
}

// insertDecision records a decision of cur's current attempt, restart and
// revision (cur read and fenced in the transaction).
func insertDecision(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow, kind, text string, derivedFrom int) (cks.Decision, error) {
	if derivedFrom < 1 || derivedFrom > cur.Revision {
		return cks.Decision{}, &cks.FieldError{Field: "derived_from_revision",
			Expected: fmt.Sprintf("a revision of task %d from 1 to %d (its current one)", cur.ID, cur.Revision)}
	}
	d, err := ex.DecisionInsert(ctx, driver.DecisionRow{TaskID: cur.ID, Attempt: cur.Attempts, Restart: cur.Restarts,
		Revision: cur.Revision, DerivedFromRevision: derivedFrom, Kind: kind, Text: text, Actor: cur.ClaimedBy,
		CreatedAt: now})
	if err != nil {
		return cks.Decision{}, fmt.Errorf("decision of task %d: %w", cur.ID, err)
	}
	return toDecision(d), nil
}

// ReuseWorkspace records the explicit decision to continue in path, a
// workspace recorded (EvidenceWorkspace) by an earlier attempt of this
// task (otherwise FieldError path), and makes it the current attempt's
// workspace; one transaction, fenced like AddEvidence.
func (s *Service) ReuseWorkspace(ctx context.Context, id int64, token, path string, derivedFrom int) (cks.Decision, error) {
	if err := cks.ValidateText("path", path); err != nil {
		return cks.Decision{}, err
	}
	if path == "" {
		return cks.Decision{}, &cks.FieldError{Field: "path", Expected: "the path of a workspace an earlier attempt recorded"}
	}
	var out cks.Decision
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := leased(ctx, ex, now, id, token, executing...)
		if err != nil {
			return err
		}
		evidence, err := ex.EvidenceList(ctx, id)
		if err != nil {
			return err
		}
		earlier := slices.ContainsFunc(evidence, func(e driver.EvidenceRow) bool {
			return e.Kind == cks.EvidenceWorkspace && e.Body == path && !(e.Restart == cur.Restarts && e.Attempt == cur.Attempts)
		})
		if !earlier {
			return &cks.FieldError{Field: "path",
				Expected: fmt.Sprintf("the path of a workspace an earlier attempt of task %d recorded (none recorded %q)", id, path)}
		}
		if out, err = insertDecision(ctx, ex, now, cur, cks.DecisionReuseWorkspace, path, derivedFrom); err != nil {
			return err
		}
		_, err = addEvidence(ctx, ex, now, cur, cks.EvidenceWorkspace, path)
		return err
	})
	return out, err
}
