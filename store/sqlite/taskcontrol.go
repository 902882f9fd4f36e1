package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
)

// abortColumns is the column list every abort query reads, in scanAbort's order.
const abortColumns = `abort_id, task_id, executor, attempt, restart, requested_by, reason,
	requested_at, deadline_at, outcome, resolved_at`

func scanAbort(sc scanner) (store.Abort, error) {
	var (
		a                        store.Abort
		requested, deadline, out string
		resolved                 sql.NullString
	)
	err := sc.Scan(&a.ID, &a.TaskID, &a.Executor, &a.Attempt, &a.Restart, &a.RequestedBy,
		&a.Reason, &requested, &deadline, &out, &resolved)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return a, err
		}
		return a, fmt.Errorf("sqlite: scan abort: %w", err)
	}
	a.Outcome = store.AbortOutcome(out)
	if a.RequestedAt, err = parseTime(requested); err != nil {
		return a, err
	}
	if a.DeadlineAt, err = parseTime(deadline); err != nil {
		return a, err
	}
	if resolved.Valid {
		if a.ResolvedAt, err = parseTime(resolved.String); err != nil {
			return a, err
		}
	}
	return a, nil
}

// abortsOf returns the aborts the condition where (with its arguments)
// selects, oldest first.
func abortsOf(ctx context.Context, q querier, where string, vals ...any) ([]store.Abort, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+abortColumns+` FROM cks_task_aborts WHERE `+where+` ORDER BY abort_id`, vals...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: aborts: %w", err)
	}
	return collect(rows, "aborts", scanAbort)
}

// lastAborts returns the most recent abort of each of the tasks ids that has one.
func lastAborts(ctx context.Context, q querier, ids []int64) (map[int64]*store.Abort, error) {
	out := map[int64]*store.Abort{}
	if len(ids) == 0 {
		return out, nil
	}
	a := &args{}
	ph := make([]string, len(ids))
	for i, id := range ids {
		ph[i] = a.add(id)
	}
	list := strings.Join(ph, ", ")
	aborts, err := abortsOf(ctx, q, `abort_id IN (SELECT max(abort_id) FROM cks_task_aborts WHERE task_id IN (`+list+`) GROUP BY task_id)`, a.vals...)
	if err != nil {
		return nil, err
	}
	for i := range aborts {
		out[aborts[i].TaskID] = &aborts[i]
	}
	return out, nil
}

// insertAbort records a pending abort of cur's lease, whose token hashes to
// leaseHash (read before the lease was revoked), and publishes
// TopicTaskAborts.
func insertAbort(ctx context.Context, tx *wtx, now time.Time, cur store.Task, leaseHash, actor, reason string, deadline time.Duration) (store.Abort, error) {
	ab := store.Abort{TaskID: cur.ID, Executor: cur.ClaimedBy, Attempt: cur.Attempts,
		Restart: cur.Restarts, RequestedBy: actor, Reason: reason, RequestedAt: now, DeadlineAt: store.Time(now.Add(deadline)),
		Outcome: store.AbortPending}
	err := tx.QueryRowContext(ctx, `INSERT INTO cks_task_aborts (task_id, lease_token_hash, executor, attempt, restart,
	requested_by, reason, requested_at, deadline_at, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING abort_id`,
		ab.TaskID, leaseHash, ab.Executor, ab.Attempt, ab.Restart, ab.RequestedBy, ab.Reason,
		fmtTime(ab.RequestedAt), fmtTime(ab.DeadlineAt), string(ab.Outcome)).Scan(&ab.ID)
	if err != nil {
		return ab, fmt.Errorf("sqlite: abort of task %d: %w", cur.ID, err)
	}
	return ab, publish(ctx, tx, store.TopicTaskAborts)
}

// Stop implements store.TaskControl.
func (s *Store) Stop(ctx context.Context, id int64, actor, reason string, deadline time.Duration) (store.Task, *store.Abort, error) {
	if err := cmp.Or(store.ValidateText("actor", actor), store.ValidateStopReason(reason)); err != nil {
		return store.Task{}, nil, err
	}
	deadline, err := store.ValidateDeadline(deadline)
	if err != nil {
		return store.Task{}, nil, err
	}
	var (
		out store.Task
		ab  *store.Abort
	)
	err = s.write(ctx, "stop", func(tx *wtx, now time.Time) error {
		cur, err := getTask(ctx, tx, id)
		if err != nil {
			return err
		}
		out, ab, err = s.stopTx(ctx, tx, now, cur, actor, "stopped: "+reason, reason, deadline)
		return err
	})
	return out, ab, err
}

// stopTx moves cur to STOPPED; a CLAIMED or RUNNING task has its lease
// revoked, its attempt given back and an abort recorded. reason goes to the
// event, abortReason to the abort request (as in the Postgres backend).
func (s *Store) stopTx(ctx context.Context, tx *wtx, now time.Time, cur store.Task, actor, reason, abortReason string, deadline time.Duration) (store.Task, *store.Abort, error) {
	if cur.State == ledger.Stopped {
		return cur, nil, fmt.Errorf("task %d is already STOPPED: %w", cur.ID, store.ErrConflict)
	}
	leased := cur.State == ledger.Claimed || cur.State == ledger.Running
	var hash string
	if leased {
		var err error
		if hash, err = leaseHashOf(ctx, tx, cur.ID); err != nil {
			return cur, nil, err
		}
	}
	out, err := s.moveOne(ctx, tx, now, cur, ledger.Stopped, move{actor: actor, reason: reason, attempt: cur.Attempts,
		set: func(a *args) string {
			if leased {
				return ", attempts = attempts - 1, " + revokeLease
			}
			return ", " + revokeLease
		}})
	if err != nil || !leased {
		return out, nil, err
	}
	ab, err := insertAbort(ctx, tx, now, cur, hash, actor, abortReason, deadline)
	if err != nil {
		return out, nil, err
	}
	return out, &ab, nil
}

// Start implements store.TaskControl.
func (s *Store) Start(ctx context.Context, id int64, actor, reason string) (store.Task, error) {
	if err := cmp.Or(store.ValidateText("actor", actor), store.ValidateText("reason", reason)); err != nil {
		return store.Task{}, err
	}
	return s.onTask(ctx, "start", id, func(tx *wtx, now time.Time, cur store.Task) (store.Task, error) {
		return s.startTx(ctx, tx, now, cur, actor, reason)
	})
}

// startTx releases the STOPPED task cur to the state its dependencies call for.
func (s *Store) startTx(ctx context.Context, tx *wtx, now time.Time, cur store.Task, actor, reason string) (store.Task, error) {
	if cur.State != ledger.Stopped {
		return cur, ledger.WrongState(cur, "start", ledger.Stopped)
	}
	to, why, err := depState(ctx, tx, cur.DependsOn, "depends_on")
	if err != nil {
		return cur, err
	}
	if reason == "" {
		reason = "started"
	}
	return s.moveOne(ctx, tx, now, cur, to, move{actor: actor, reason: reason + " (" + why + ")",
		set: func(a *args) string { return ", restarts = restarts + 1, run_after = NULL" }})
}

// Update implements store.TaskControl.
func (s *Store) Update(ctx context.Context, id int64, actor string, p store.TaskPatch, deadline time.Duration) (store.UpdateResult, error) {
	if err := store.ValidateText("actor", actor); err != nil {
		return store.UpdateResult{}, err
	}
	p, err := p.Validate()
	if err != nil {
		return store.UpdateResult{}, err
	}
	if deadline, err = store.ValidateDeadline(deadline); err != nil {
		return store.UpdateResult{}, err
	}
	var out store.UpdateResult
	err = s.write(ctx, "update", func(tx *wtx, now time.Time) error {
		out = store.UpdateResult{}
		cur, err := getTask(ctx, tx, id)
		if err != nil {
			return err
		}
		material := p.Material()
		summary := "update: " + strings.Join(p.Fields(), ", ")
		switch {
		case ledger.IsTerminal(cur.State):
			return fmt.Errorf("task %d is %s (terminal) and cannot be updated: %w", id, cur.State, store.ErrConflict)
		case (cur.State == ledger.Claimed || cur.State == ledger.Running) && material:
			// stop → apply → start in this one transaction: no reader sees STOPPED.
			out.Path = store.UpdateRestart
			stopped, ab, err := s.stopTx(ctx, tx, now, cur, actor, summary, summary, deadline)
			if err != nil {
				return err
			}
			out.Abort = ab
			applied, children, err := s.applyPatch(ctx, tx, now, stopped, actor, p)
			if err != nil {
				return err
			}
			out.Children = children
			out.Task, err = s.startTx(ctx, tx, now, applied, actor, "restarted after "+summary)
			return err
		case cur.State == ledger.Claimed || cur.State == ledger.Running:
			out.Path = store.UpdateLive
		case material && (cur.State == ledger.NeedsInput || cur.State == ledger.NeedsReview || cur.State == ledger.Reviewing):
			return fmt.Errorf("task %d is %s: a material edit (%s) needs the task stopped first: %w",
				id, cur.State, strings.Join(p.Fields(), ", "), store.ErrConflict)
		default:
			out.Path = store.UpdateInPlace
		}
		applied, children, err := s.applyPatch(ctx, tx, now, cur, actor, p)
		if err != nil {
			return err
		}
		out.Children = children
		out.Task = applied
		// The edit's own event (issue 13): who changed which fields, and when.
		if err := appendEvent(ctx, tx, store.TaskEvent{TaskID: id, At: now, Actor: actor, From: applied.State,
			To: applied.State, Attempt: applied.Attempts, Reason: summary}); err != nil {
			return err
		}
		if len(p.AddDependsOn)+len(p.RemoveDependsOn) == 0 ||
			!slices.Contains([]ledger.State{ledger.Open, ledger.Waiting, ledger.Blocked}, applied.State) {
			return nil
		}
		to, why, err := depState(ctx, tx, applied.DependsOn, "add_depends_on")
		if err != nil || to == applied.State {
			return err
		}
		out.Task, err = s.moveOne(ctx, tx, now, applied, to, move{actor: actor, reason: summary + " (" + why + ")"})
		return err
	})
	return out, err
}

// applyPatch writes p to cur (read in tx) without changing its state, and
// returns the task as it now is with the children p created.
func (s *Store) applyPatch(ctx context.Context, tx *wtx, now time.Time, cur store.Task, actor string, p store.TaskPatch) (store.Task, []store.Task, error) {
	deps := slices.Clone(cur.DependsOn)
	for _, d := range p.RemoveDependsOn {
		if !slices.Contains(deps, d) {
			return cur, nil, &store.FieldError{Field: "remove_depends_on", Expected: fmt.Sprintf("ids of current dependencies (task %d does not depend on %d)", cur.ID, d)}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM cks_task_deps WHERE task_id = ? AND depends_on = ?`, cur.ID, d); err != nil {
			return cur, nil, fmt.Errorf("sqlite: update task %d: %w", cur.ID, err)
		}
		deps = slices.DeleteFunc(deps, func(x int64) bool { return x == d })
	}
	var added []int64
	for _, d := range p.AddDependsOn {
		if d == cur.ID {
			return cur, nil, &store.FieldError{Field: "add_depends_on", Expected: fmt.Sprintf("ids of other tasks (task %d cannot depend on itself)", d)}
		}
		if !slices.Contains(deps, d) && !slices.Contains(added, d) {
			added = append(added, d)
		}
	}
	if len(added) > 0 {
		if _, _, err := depState(ctx, tx, added, "add_depends_on"); err != nil {
			return cur, nil, err
		}
		var qerr error
		cycle := ledger.Cycle(cur.ID, added, func(id int64) []int64 {
			m, err := depsOf(ctx, tx, []int64{id})
			if err != nil && qerr == nil {
				qerr = err
			}
			return m[id]
		})
		if qerr != nil {
			return cur, nil, qerr
		}
		if cycle != nil {
			return cur, nil, &store.FieldError{Field: "add_depends_on", Expected: fmt.Sprintf("dependencies that close no cycle (this one would: %s)", formatPath(cycle))}
		}
		for _, d := range added {
			if _, err := tx.ExecContext(ctx, `INSERT INTO cks_task_deps (task_id, depends_on) VALUES (?, ?)`, cur.ID, d); err != nil {
				return cur, nil, fmt.Errorf("sqlite: update task %d: dependency %d: %w", cur.ID, d, err)
			}
		}
	}
	for _, c := range p.CancelChildren {
		child, err := getTask(ctx, tx, c)
		if errors.Is(err, store.ErrNotFound) || (err == nil && (child.ParentID == nil || *child.ParentID != cur.ID)) {
			return cur, nil, &store.FieldError{Field: "cancel_children", Expected: fmt.Sprintf("ids of children of task %d (%d is not one)", cur.ID, c)}
		}
		if err != nil {
			return cur, nil, err
		}
		if _, err := s.cancelTx(ctx, tx, now, child, actor, fmt.Sprintf("cancelled by an update of parent %d", cur.ID)); err != nil {
			return cur, nil, fmt.Errorf("cancel_children: %w", err)
		}
	}
	var children []store.Task
	for i, n := range p.AddChildren {
		parent := cur.ID
		n.ParentID = &parent
		if n.CreatedBy == "" {
			n.CreatedBy = actor
		}
		child, created, err := s.enqueueTx(ctx, tx, now, n)
		var fe *store.FieldError
		if errors.As(err, &fe) {
			return cur, nil, &store.FieldError{Field: fmt.Sprintf("add_children[%d].%s", i, fe.Field), Expected: fe.Expected}
		}
		if err != nil {
			return cur, nil, err
		}
		if err := store.CheckChildDedupe(i, cur.ID, child, created); err != nil {
			return cur, nil, err
		}
		children = append(children, child)
	}
	a := &args{}
	q := `UPDATE cks_outbox_tasks SET updated_at = ` + a.add(fmtTime(now))
	for _, f := range []struct {
		col string
		val *string
	}{{"title", p.Title}, {"description", p.Description}, {"acceptance_criteria", p.AcceptanceCriteria}} {
		if f.val != nil {
			q += ", " + f.col + " = " + a.add(*f.val)
		}
	}
	if len(p.Payload) > 0 {
		q += ", payload = " + a.add(string(p.Payload))
	}
	if len(p.Metadata) > 0 {
		q += ", metadata = " + a.add(string(p.Metadata))
	}
	if p.Priority != nil {
		q += ", priority = " + a.add(*p.Priority)
	}
	if p.Material() {
		q += ", revision = revision + 1"
	}
	q += " WHERE task_id = " + a.add(cur.ID)
	if _, err := tx.ExecContext(ctx, q, a.vals...); err != nil {
		return cur, nil, fmt.Errorf("sqlite: update task %d: %w", cur.ID, err)
	}
	t, err := getTask(ctx, tx, cur.ID)
	return t, children, err
}

// formatPath renders a dependency cycle as "1 → 2 → 1".
func formatPath(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, " → ")
}

// GetAbort implements store.TaskControl.
func (s *Store) GetAbort(ctx context.Context, abortID int64) (store.Abort, error) {
	ab, err := scanAbort(s.reader.QueryRowContext(ctx, `SELECT `+abortColumns+` FROM cks_task_aborts WHERE abort_id = ?`, abortID))
	if errors.Is(err, sql.ErrNoRows) {
		return ab, fmt.Errorf("abort %d: %w", abortID, store.ErrNotFound)
	}
	return ab, err
}

// ConfirmAbort implements store.TaskControl.
func (s *Store) ConfirmAbort(ctx context.Context, id int64, token string) (store.Abort, error) {
	if err := store.ValidateText("lease_token", token); err != nil {
		return store.Abort{}, err
	}
	var out store.Abort
	err := s.write(ctx, "confirm abort", func(tx *wtx, now time.Time) error {
		// A repeated confirmation keeps the time of the first.
		ab, err := scanAbort(tx.QueryRowContext(ctx, `UPDATE cks_task_aborts SET outcome = ?,
	resolved_at = CASE WHEN outcome = ? THEN resolved_at ELSE ? END
WHERE abort_id = (SELECT max(abort_id) FROM cks_task_aborts WHERE task_id = ? AND lease_token_hash = ? AND lease_token_hash <> '')
RETURNING `+abortColumns, string(store.AbortConfirmed), string(store.AbortConfirmed), fmtTime(now), id, store.HashLeaseToken(token)))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no abort of task %d for that lease: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		out = ab
		return publish(ctx, tx, store.TopicTaskAborts)
	})
	return out, err
}

// ResolveAbort implements store.TaskControl.
func (s *Store) ResolveAbort(ctx context.Context, abortID int64) (store.Abort, error) {
	var out store.Abort
	err := s.write(ctx, "resolve abort", func(tx *wtx, now time.Time) error {
		ab, err := scanAbort(tx.QueryRowContext(ctx, `UPDATE cks_task_aborts SET outcome = ?, resolved_at = ?
WHERE abort_id = ? AND outcome = ? RETURNING `+abortColumns,
			string(store.AbortUnconfirmed), fmtTime(now), abortID, string(store.AbortPending)))
		if errors.Is(err, sql.ErrNoRows) { // not pending (or no such abort): read it as it is
			out, err = scanAbort(tx.QueryRowContext(ctx, `SELECT `+abortColumns+` FROM cks_task_aborts WHERE abort_id = ?`, abortID))
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("abort %d: %w", abortID, store.ErrNotFound)
			}
			return err
		}
		if err != nil {
			return err
		}
		out = ab
		return publish(ctx, tx, store.TopicTaskAborts)
	})
	return out, err
}

// ExpireAborts implements store.TaskControl.
func (s *Store) ExpireAborts(ctx context.Context, now time.Time) (int, error) {
	now = store.Time(now)
	var n int64
	err := s.write(ctx, "expire aborts", func(tx *wtx, _ time.Time) error {
		res, err := tx.ExecContext(ctx, `UPDATE cks_task_aborts SET outcome = ?, resolved_at = ?
WHERE outcome = ? AND deadline_at <= ?`, string(store.AbortUnconfirmed), fmtTime(now), string(store.AbortPending), fmtTime(now))
		if err != nil {
			return fmt.Errorf("sqlite: expire aborts: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return publish(ctx, tx, store.TopicTaskAborts)
	})
	return int(n), err
}

// LeaseHeld implements store.TaskControl.
func (s *Store) LeaseHeld(ctx context.Context, id int64, token string) (bool, error) {
	var cur string
	err := s.reader.QueryRowContext(ctx, `SELECT lease_token_hash FROM cks_outbox_tasks WHERE task_id = ?`, id).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("task %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: lease of task %d: %w", id, err)
	}
	return token != "" && cur == store.HashLeaseToken(token), nil
}

// RecordDecision implements store.TaskControl.
func (s *Store) RecordDecision(ctx context.Context, id int64, token, kind, text string, derivedFrom int) (store.Decision, error) {
	if err := cmp.Or(store.ValidateText("kind", kind), store.ValidateText("text", text)); err != nil {
		return store.Decision{}, err
	}
	if kind == "" {
		return store.Decision{}, &store.FieldError{Field: "kind", Expected: "a non-empty decision kind"}
	}
	var out store.Decision
	err := s.write(ctx, "record decision", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running)
		if err != nil {
			return err
		}
		out, err = insertDecision(ctx, tx, now, cur, kind, text, derivedFrom)
		return err
	})
	return out, err
}

func insertDecision(ctx context.Context, tx *wtx, now time.Time, cur store.Task, kind, text string, derivedFrom int) (store.Decision, error) {
	if derivedFrom < 1 || derivedFrom > cur.Revision {
		return store.Decision{}, &store.FieldError{Field: "derived_from_revision",
			Expected: fmt.Sprintf("a revision of task %d from 1 to %d (its current one)", cur.ID, cur.Revision)}
	}
	d := store.Decision{TaskID: cur.ID, Attempt: cur.Attempts, Restart: cur.Restarts, Revision: cur.Revision,
		DerivedFromRevision: derivedFrom, Kind: kind, Text: text, Actor: cur.ClaimedBy, CreatedAt: now}
	err := tx.QueryRowContext(ctx, `INSERT INTO cks_task_decisions (task_id, attempt, restart, revision,
	derived_from_revision, kind, text, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING decision_id`,
		d.TaskID, d.Attempt, d.Restart, d.Revision, d.DerivedFromRevision, d.Kind, d.Text, d.Actor, fmtTime(now)).Scan(&d.ID)
	if err != nil {
		return d, fmt.Errorf("sqlite: decision of task %d: %w", cur.ID, err)
	}
	return d, nil
}

func decisionsOf(ctx context.Context, q querier, id int64) ([]store.Decision, error) {
	rows, err := q.QueryContext(ctx, `SELECT decision_id, task_id, attempt, restart, revision, derived_from_revision,
	kind, text, actor, created_at FROM cks_task_decisions WHERE task_id = ? ORDER BY decision_id`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: decisions of task %d: %w", id, err)
	}
	defer rows.Close()
	var out []store.Decision
	for rows.Next() {
		var (
			d  store.Decision
			at string
		)
		if err := rows.Scan(&d.ID, &d.TaskID, &d.Attempt, &d.Restart, &d.Revision, &d.DerivedFromRevision,
			&d.Kind, &d.Text, &d.Actor, &at); err != nil {
			return nil, fmt.Errorf("sqlite: decisions of task %d: %w", id, err)
		}
		if d.CreatedAt, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: decisions of task %d: %w", id, err)
	}
	return out, nil
}

// ReuseWorkspace implements store.TaskControl.
func (s *Store) ReuseWorkspace(ctx context.Context, id int64, token, path string, derivedFrom int) (store.Decision, error) {
	if err := store.ValidateText("path", path); err != nil {
		return store.Decision{}, err
	}
	if path == "" {
		return store.Decision{}, &store.FieldError{Field: "path", Expected: "the path of a workspace an earlier attempt recorded"}
	}
	var out store.Decision
	err := s.write(ctx, "reuse workspace", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM cks_task_evidence WHERE task_id = ? AND kind = ? AND body = ?
AND NOT (restart = ? AND attempt = ?)`, id, store.EvidenceWorkspace, path, cur.Restarts, cur.Attempts).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: workspaces of task %d: %w", id, err)
		}
		if n == 0 {
			return &store.FieldError{Field: "path", Expected: fmt.Sprintf("the path of a workspace an earlier attempt of task %d recorded (none recorded %q)", id, path)}
		}
		if out, err = insertDecision(ctx, tx, now, cur, store.DecisionReuseWorkspace, path, derivedFrom); err != nil {
			return err
		}
		_, err = addEvidence(ctx, tx, now, cur, store.EvidenceWorkspace, path)
		return err
	})
	return out, err
}
