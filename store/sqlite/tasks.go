package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
)

// taskColumns is the column list every task query reads, in scanTask's order.
const taskColumns = `task_id, type, title, description, acceptance_criteria, payload, state,
	priority, attempts, max_attempts, restarts, revision, parent_id, dedupe_key, created_by,
	claimed_by, claimed_at, lease_expires_at, lease_renewed_at, run_after,
	result, last_error, question, answer, review_note, created_at, updated_at, state_changed_at, metadata`

// revokeLease is the SET fragment that ends the current lease: the token stops
// being current, so the executor's next call fails with ErrLeaseLost.
const revokeLease = `lease_token_hash = '', lease_expires_at = NULL, lease_renewed_at = NULL, claimed_by = ''`

// stateList renders states as a parenthesised SQL list of string literals.
// States are package ledger constants, never user input.
func stateList(states []ledger.State) string {
	q := make([]string, len(states))
	for i, s := range states {
		q[i] = "'" + string(s) + "'"
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// stateLiteral renders one state as an SQL string literal. States are package
// ledger constants, never user input.
func stateLiteral(st ledger.State) string { return "'" + string(st) + "'" }

// terminalSQL is the list of terminal states, for the dedupe index.
func terminalSQL() string { return stateList(ledger.Terminal[:]) }

// excludedSQL is the dispatch-exclusion list every claim and reclaim query
// uses, built from ledger.DispatchExcluded (and nothing else).
func excludedSQL() string { return stateList(ledger.DispatchExcluded[:]) }

// args accumulates positional query arguments; add returns the placeholder.
type args struct{ vals []any }

func (a *args) add(v any) string { a.vals = append(a.vals, v); return "?" }

func (a *args) list(vs []string) string {
	ph := make([]string, len(vs))
	for i, v := range vs {
		ph[i] = a.add(v)
	}
	return "(" + strings.Join(ph, ", ") + ")"
}

// move is one state change applied to every task a predicate selects.
type move struct {
	from, to ledger.State
	// where selects the candidates (alias c), ANDed with c.state = from.
	where func(a *args) string
	// ids, when set instead of where, lists the candidates (a JSON array of
	// task ids), which are looked up by primary key.
	ids string
	// order and limit bound the candidates (claims); limit 0 means all.
	order string
	limit int
	// set holds extra assignments, each starting with ", ".
	set func(a *args) string
	// actor and reason go to the event; attempt, when > 0, replaces the
	// task's attempts after the change as the event's attempt.
	actor, reason string
	attempt       int
}

// transition is the one function through which every state change of this
// backend goes. It checks the ledger's table for from → to, updates every
// selected task still in from, and appends one cks_task_events row per task,
// all in tx; it sets state_changed_at (and updated_at) to now. It returns
// the changed tasks as they now are.
func (s *Store) transition(ctx context.Context, tx *wtx, now time.Time, m move) ([]store.Task, error) {
	if err := ledger.Check(m.from, m.to); err != nil {
		return nil, err
	}
	q, vals := m.statement(now)
	rows, err := tx.QueryContext(ctx, q, vals...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s → %s: %w", m.from, m.to, err)
	}
	out, err := collect(rows, fmt.Sprintf("%s → %s", m.from, m.to), scanTask)
	if err != nil {
		return nil, err
	}
	if m.to == ledger.Open && len(out) > 0 {
		if err := publish(ctx, tx, store.TopicTasksReady); err != nil {
			return nil, err
		}
	}
	for _, t := range out {
		attempt := t.Attempts
		if m.attempt > 0 {
			attempt = m.attempt
		}
		if err := appendEvent(ctx, tx, store.TaskEvent{TaskID: t.ID, At: now, Actor: m.actor,
			From: m.from, To: m.to, Attempt: attempt, Reason: m.reason}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// statement is the UPDATE … RETURNING of transition for m, with its arguments.
func (m move) statement(now time.Time) (string, []any) {
	a := &args{}
	q := "UPDATE cks_outbox_tasks SET state = " + a.add(string(m.to)) + ", updated_at = " + a.add(fmtTime(now)) +
		", state_changed_at = " + a.add(fmtTime(now))
	if m.set != nil {
		q += m.set(a)
	}
	q += " WHERE task_id IN (SELECT c.task_id FROM cks_outbox_tasks c WHERE "
	if m.ids != "" {
		// By primary key. The unary + keeps the planner (which has no
		// statistics) off the state indexes: it would walk every task in
		// from and test each against the list.
		q += "c.task_id IN (SELECT value FROM json_each(" + a.add(m.ids) + ")) AND +c.state = " + stateLiteral(m.from)
	} else {
		// The from state is a literal, not a parameter (it is a ledger
		// constant, checked by transition): SQLite uses a partial index only
		// when the query's WHERE implies its predicate at prepare time, as
		// for idx_outbox_tasks_claim_open.
		q += "c.state = " + stateLiteral(m.from)
		if m.where != nil {
			q += " AND (" + m.where(a) + ")"
		}
	}
	q += " " + m.order
	if m.limit > 0 {
		q += " LIMIT " + a.add(m.limit)
	}
	return q + ") RETURNING " + taskColumns, a.vals
}

// moveOne applies m to the single task cur (read in the same transaction).
func (s *Store) moveOne(ctx context.Context, tx *wtx, now time.Time, cur store.Task, to ledger.State, m move) (store.Task, error) {
	if err := ledger.Check(cur.State, to); err != nil {
		return cur, fmt.Errorf("task %d: %w", cur.ID, err)
	}
	m.from, m.to = cur.State, to
	m.where = func(a *args) string { return "c.task_id = " + a.add(cur.ID) }
	ts, err := s.transition(ctx, tx, now, m)
	if err != nil {
		return cur, fmt.Errorf("task %d: %w", cur.ID, err)
	}
	if len(ts) != 1 {
		return cur, fmt.Errorf("task %d changed concurrently: %w", cur.ID, store.ErrConflict)
	}
	ts[0].DependsOn = cur.DependsOn
	return ts[0], nil
}

func appendEvent(ctx context.Context, tx *wtx, e store.TaskEvent) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO cks_task_events (task_id, at, actor, from_state, to_state, attempt, reason)
VALUES (?, ?, ?, ?, ?, ?, ?)`, e.TaskID, fmtTime(e.At), e.Actor, string(e.From), string(e.To), e.Attempt, e.Reason)
	if err != nil {
		return fmt.Errorf("sqlite: event of task %d: %w", e.TaskID, err)
	}
	return nil
}

// write runs fn in one BEGIN IMMEDIATE transaction on the writer connection
// and commits it when fn succeeds. Statements fn runs through the wtx use the
// store's prepared-statement cache. A failure that is the storage's
// (read-only, full) is classified and remembered for StorageHealth.
func (s *Store) write(ctx context.Context, what string, fn func(tx *wtx, now time.Time) error) (err error) {
	defer func() { err = s.faults.Note(classify(err), store.Time(s.clock.Now())) }()
	tx, err := beginImmediate(ctx, s.writer)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	w := &wtx{Tx: tx, s: s}
	defer func() {
		tx.Rollback() //nolint:errcheck // no-op after commit
		s.prepare(ctx, w.missed)
	}()
	if err := fn(w, store.Time(s.clock.Now())); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	if w.published {
		s.wake()
	}
	return nil
}

// maxCachedStatements bounds the prepared-statement cache (queries with IN
// lists of varying length have many texts).
const maxCachedStatements = 256

// stmtCache holds statements prepared on the writer, by query text. Parsing
// is a large share of a small write's cost, so the hot statements are
// prepared once. A statement is prepared after the transaction that first
// ran it (the writer has one connection, which that transaction held).
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func (s *Store) cached(q string) *sql.Stmt {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return s.cache.stmts[q]
}

func (s *Store) prepare(ctx context.Context, queries []string) {
	for _, q := range queries {
		s.cache.mu.Lock()
		_, have := s.cache.stmts[q]
		full := len(s.cache.stmts) >= maxCachedStatements
		s.cache.mu.Unlock()
		if have || full {
			continue
		}
		st, err := s.writer.PrepareContext(ctx, q)
		if err != nil {
			continue // the query runs unprepared next time too
		}
		s.cache.mu.Lock()
		if s.cache.stmts == nil {
			s.cache.stmts = map[string]*sql.Stmt{}
		}
		if _, have := s.cache.stmts[q]; have {
			st.Close()
		} else {
			s.cache.stmts[q] = st
		}
		s.cache.mu.Unlock()
	}
}

// closeStatements closes every cached statement.
func (s *Store) closeStatements() error {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	var errs []error
	for _, st := range s.cache.stmts {
		errs = append(errs, st.Close())
	}
	s.cache.stmts = nil
	return errors.Join(errs...)
}

// wtx is a write transaction that runs cached statements where it can and
// remembers the queries it ran unprepared.
type wtx struct {
	*sql.Tx
	s      *Store
	missed []string
	// published is set by publish: the commit wakes this handle's watchers.
	published bool
}

func (w *wtx) stmt(ctx context.Context, q string) *sql.Stmt {
	if st := w.s.cached(q); st != nil {
		return w.Tx.StmtContext(ctx, st)
	}
	w.missed = append(w.missed, q)
	return nil
}

// QueryContext runs q in the transaction.
func (w *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := w.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return w.Tx.QueryContext(ctx, q, args...)
}

// QueryRowContext runs q in the transaction.
func (w *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := w.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return w.Tx.QueryRowContext(ctx, q, args...)
}

// ExecContext runs q in the transaction.
func (w *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := w.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return w.Tx.ExecContext(ctx, q, args...)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// getTask reads one task without its history.
func getTask(ctx context.Context, q querier, id int64) (store.Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM cks_outbox_tasks WHERE task_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("task %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return t, err
	}
	deps, err := depsOf(ctx, q, []int64{id})
	if err != nil {
		return t, err
	}
	t.DependsOn = deps[id]
	return t, nil
}

// leased reads task id and checks that token is its current lease token (by
// hash: only the hash is stored) and that it is in one of states; otherwise
// ErrLeaseLost (or ErrNotFound).
func leased(ctx context.Context, q querier, id int64, token string, states ...ledger.State) (store.Task, error) {
	if err := store.ValidateText("lease_token", token); err != nil {
		return store.Task{}, err
	}
	var hash string
	t, err := scanTaskWith(q.QueryRowContext(ctx, `SELECT `+taskColumns+`, lease_token_hash FROM cks_outbox_tasks WHERE task_id = ?`, id), &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("task %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return t, err
	}
	if token == "" || hash != store.HashLeaseToken(token) || !slices.Contains(states, t.State) {
		return t, fmt.Errorf("task %d (now %s): %w", id, t.State, store.ErrLeaseLost)
	}
	deps, err := depsOf(ctx, q, []int64{id})
	if err != nil {
		return t, err
	}
	t.DependsOn = deps[id]
	return t, nil
}

// leaseHashOf returns the hash of task id's current lease token, empty when
// it has no lease.
func leaseHashOf(ctx context.Context, q querier, id int64) (string, error) {
	var hash string
	if err := q.QueryRowContext(ctx, `SELECT lease_token_hash FROM cks_outbox_tasks WHERE task_id = ?`, id).Scan(&hash); err != nil {
		return "", fmt.Errorf("sqlite: lease of task %d: %w", id, err)
	}
	return hash, nil
}

func depsOf(ctx context.Context, q querier, ids []int64) (map[int64][]int64, error) {
	out := map[int64][]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	a := &args{}
	ph := make([]string, len(ids))
	for i, id := range ids {
		ph[i] = a.add(id)
	}
	rows, err := q.QueryContext(ctx, `SELECT task_id, depends_on FROM cks_task_deps WHERE task_id IN (`+
		strings.Join(ph, ", ")+`) ORDER BY task_id, depends_on`, a.vals...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: dependencies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, dep int64
		if err := rows.Scan(&id, &dep); err != nil {
			return nil, fmt.Errorf("sqlite: dependencies: %w", err)
		}
		out[id] = append(out[id], dep)
	}
	return out, rows.Err()
}

// Enqueue implements store.Tasks.
func (s *Store) Enqueue(ctx context.Context, n store.NewTask) (store.Task, bool, error) {
	n, err := n.Validate()
	if err != nil {
		return store.Task{}, false, err
	}
	var (
		out     store.Task
		created bool
	)
	err = s.write(ctx, "enqueue", func(tx *wtx, now time.Time) error {
		var err error
		out, created, err = s.enqueueTx(ctx, tx, now, n)
		return err
	})
	return out, created, err
}

// enqueueTx is Enqueue of the validated n inside tx (also used by Update
// for new children).
func (s *Store) enqueueTx(ctx context.Context, tx *wtx, now time.Time, n store.NewTask) (store.Task, bool, error) {
	if n.DedupeKey != "" {
		var id int64
		err := tx.QueryRowContext(ctx, dedupeSQL(n.DedupeOnce), n.DedupeKey).Scan(&id)
		if err == nil {
			t, err := getTask(ctx, tx, id)
			return t, false, err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return store.Task{}, false, fmt.Errorf("sqlite: enqueue: dedupe: %w", err)
		}
	}
	if n.ParentID != nil {
		if _, err := getTask(ctx, tx, *n.ParentID); errors.Is(err, store.ErrNotFound) {
			return store.Task{}, false, &store.FieldError{Field: "parent_id", Expected: fmt.Sprintf("the id of an existing task (no task %d)", *n.ParentID)}
		} else if err != nil {
			return store.Task{}, false, err
		}
	}
	state, reason, err := depState(ctx, tx, n.DependsOn, "depends_on")
	if err != nil {
		return store.Task{}, false, err
	}
	if state == ledger.Open {
		reason = "enqueued"
	}
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO cks_outbox_tasks (type, title, description,
	acceptance_criteria, payload, state, priority, max_attempts, parent_id, dedupe_key, created_by,
	created_at, updated_at, state_changed_at, metadata)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING task_id`,
		n.Type, n.Title, n.Description, n.AcceptanceCriteria, string(n.Payload), string(state),
		n.Priority, n.MaxAttempts, n.ParentID, n.DedupeKey, n.CreatedBy, fmtTime(now), fmtTime(now), fmtTime(now),
		string(n.Metadata)).Scan(&id)
	if err != nil {
		return store.Task{}, false, fmt.Errorf("sqlite: enqueue: %w", err)
	}
	for _, d := range n.DependsOn {
		if _, err := tx.ExecContext(ctx, `INSERT INTO cks_task_deps (task_id, depends_on) VALUES (?, ?)`, id, d); err != nil {
			return store.Task{}, false, fmt.Errorf("sqlite: enqueue: dependency %d: %w", d, err)
		}
	}
	if err := appendEvent(ctx, tx, store.TaskEvent{TaskID: id, At: now, Actor: n.CreatedBy,
		To: state, Reason: reason}); err != nil {
		return store.Task{}, false, err
	}
	if state == ledger.Open {
		if err := publish(ctx, tx, store.TopicTasksReady); err != nil {
			return store.Task{}, false, err
		}
	}
	// The row is exactly what was inserted: build it instead of reading it back.
	out := store.Task{ID: id, Type: n.Type, Title: n.Title, Description: n.Description,
		AcceptanceCriteria: n.AcceptanceCriteria, Payload: n.Payload, State: state, Priority: n.Priority,
		MaxAttempts: n.MaxAttempts, Revision: 1, ParentID: n.ParentID, DependsOn: n.DependsOn,
		DedupeKey: n.DedupeKey, CreatedBy: n.CreatedBy, CreatedAt: now, UpdatedAt: now, StateChangedAt: now,
		Metadata: n.Metadata}
	if len(out.DependsOn) == 0 {
		out.DependsOn = nil
	}
	if n.ParentID != nil {
		p := *n.ParentID
		out.ParentID = &p
	}
	return out, true, nil
}

// depState is the state a task with dependencies deps belongs in now:
// BLOCKED when one FAILED or was CANCELLED, WAITING when one is not
// COMPLETED, else OPEN, with the reason. A missing dependency is a
// FieldError naming field.
func depState(ctx context.Context, q querier, deps []int64, field string) (ledger.State, string, error) {
	state, reason := ledger.Open, "dependencies complete"
	for _, d := range deps {
		var st string
		err := q.QueryRowContext(ctx, `SELECT state FROM cks_outbox_tasks WHERE task_id = ?`, d).Scan(&st)
		if errors.Is(err, sql.ErrNoRows) {
			return "", "", &store.FieldError{Field: field, Expected: fmt.Sprintf("ids of existing tasks (no task %d)", d)}
		}
		if err != nil {
			return "", "", fmt.Errorf("sqlite: dependency %d: %w", d, err)
		}
		dep := ledger.State(st)
		switch {
		case dep == ledger.Failed || dep == ledger.Cancelled:
			return ledger.Blocked, fmt.Sprintf("dependency %d is %s", d, dep), nil
		case dep != ledger.Completed && state == ledger.Open:
			state, reason = ledger.Waiting, fmt.Sprintf("waiting for dependency %d", d)
		}
	}
	return state, reason, nil
}

// GetTask implements store.Tasks.
func (s *Store) GetTask(ctx context.Context, id int64) (store.Task, error) {
	t, err := getTask(ctx, s.reader, id)
	if err != nil {
		return t, err
	}
	if t.Events, err = eventsOf(ctx, s.reader, id); err != nil {
		return t, err
	}
	evidence, err := evidenceOf(ctx, s.reader, id)
	if err != nil {
		return t, err
	}
	decisions, err := decisionsOf(ctx, s.reader, id)
	if err != nil {
		return t, err
	}
	aborts, err := abortsOf(ctx, s.reader, `task_id = ?`, id)
	if err != nil {
		return t, err
	}
	store.GroupAttempts(&t, evidence, decisions, aborts)
	return t, nil
}

func eventsOf(ctx context.Context, q querier, id int64) ([]store.TaskEvent, error) {
	rows, err := q.QueryContext(ctx, `SELECT event_id, task_id, at, actor, from_state, to_state, attempt, reason
FROM cks_task_events WHERE task_id = ? ORDER BY event_id`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of task %d: %w", id, err)
	}
	defer rows.Close()
	var out []store.TaskEvent
	for rows.Next() {
		var (
			e        store.TaskEvent
			at       string
			from, to string
		)
		if err := rows.Scan(&e.ID, &e.TaskID, &at, &e.Actor, &from, &to, &e.Attempt, &e.Reason); err != nil {
			return nil, fmt.Errorf("sqlite: events of task %d: %w", id, err)
		}
		e.From, e.To = ledger.State(from), ledger.State(to)
		if e.At, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events of task %d: %w", id, err)
	}
	return out, nil
}

func evidenceOf(ctx context.Context, q querier, id int64) ([]store.Evidence, error) {
	rows, err := q.QueryContext(ctx, `SELECT evidence_id, task_id, attempt, restart, revision, kind, body, actor, created_at
FROM cks_task_evidence WHERE task_id = ? ORDER BY evidence_id`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: evidence of task %d: %w", id, err)
	}
	defer rows.Close()
	var out []store.Evidence
	for rows.Next() {
		var (
			e  store.Evidence
			at string
		)
		if err := rows.Scan(&e.ID, &e.TaskID, &e.Attempt, &e.Restart, &e.Revision, &e.Kind, &e.Body, &e.Actor, &at); err != nil {
			return nil, fmt.Errorf("sqlite: evidence of task %d: %w", id, err)
		}
		if e.CreatedAt, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: evidence of task %d: %w", id, err)
	}
	return out, nil
}

// ListTasks implements store.Tasks.
func (s *Store) ListTasks(ctx context.Context, f store.TaskFilter) (store.TaskPage, error) {
	f, err := f.Validate()
	if err != nil {
		return store.TaskPage{}, err
	}
	a := &args{}
	q := `SELECT ` + taskColumns + ` FROM cks_outbox_tasks WHERE task_id > ` + a.add(f.After)
	where, err := filterSQL(a, f) // after the cursor's argument: SQLite's ? are positional
	if err != nil {
		return store.TaskPage{}, err
	}
	q += where + ` ORDER BY task_id LIMIT ` + a.add(f.Limit+1)
	rows, err := s.reader.QueryContext(ctx, q, a.vals...)
	if err != nil {
		return store.TaskPage{}, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	var page store.TaskPage
	if page.Tasks, err = collect(rows, "list tasks", scanTask); err != nil {
		return page, err
	}
	if len(page.Tasks) > f.Limit {
		page.Tasks = page.Tasks[:f.Limit]
		page.Next = page.Tasks[f.Limit-1].ID
	}
	ids := make([]int64, len(page.Tasks))
	for i, t := range page.Tasks {
		ids[i] = t.ID
	}
	deps, err := depsOf(ctx, s.reader, ids)
	if err != nil {
		return page, err
	}
	last, err := lastAborts(ctx, s.reader, ids)
	if err != nil {
		return page, err
	}
	for i := range page.Tasks {
		page.Tasks[i].DependsOn = deps[page.Tasks[i].ID]
		page.Tasks[i].LastAbort = last[page.Tasks[i].ID]
	}
	return page, nil
}

// filterSQL renders the States, Types and StateChangedBefore of f as
// " AND …" conditions (empty when f selects everything).
func filterSQL(a *args, f store.TaskFilter) (string, error) {
	var q string
	if len(f.States) > 0 {
		states := make([]string, len(f.States))
		for i, st := range f.States {
			if !ledger.Valid(st) {
				return "", &store.FieldError{Field: "state", Expected: fmt.Sprintf("one of %v (got %q)", ledger.All, st)}
			}
			states[i] = string(st)
		}
		q += ` AND state IN ` + a.list(states)
	}
	if len(f.Types) > 0 {
		q += ` AND type IN ` + a.list(f.Types)
	}
	if !f.StateChangedBefore.IsZero() {
		q += ` AND state_changed_at <= ` + a.add(fmtTime(f.StateChangedBefore))
	}
	return q, nil
}

// CountTasks implements store.Tasks.
func (s *Store) CountTasks(ctx context.Context, f store.TaskFilter) (int, error) {
	if err := store.ValidateTexts("type", f.Types); err != nil {
		return 0, err
	}
	a := &args{}
	where, err := filterSQL(a, f)
	if err != nil {
		return 0, err
	}
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM cks_outbox_tasks WHERE 1 = 1`+where, a.vals...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count tasks: %w", err)
	}
	return n, nil
}

// claimSQL is the candidate predicate of Claim (alias c): due, of the given
// types, and not dispatch-excluded.
func claimSQL(a *args, now time.Time, types []string) string {
	w := "(c.run_after IS NULL OR c.run_after <= " + a.add(fmtTime(now)) + ") AND c.state NOT IN " + excludedSQL()
	// One type is an equality, served in claim order by idx_outbox_tasks_claim
	// (state, type, priority DESC, created_at, task_id). No type or several use
	// idx_outbox_tasks_claim_open; a type IN list on idx_outbox_tasks_claim
	// would need a temp B-tree to sort.
	switch len(types) {
	case 0:
	case 1:
		w += " AND c.type = " + a.add(types[0])
	default:
		w += " AND c.type IN " + a.list(types)
	}
	return w
}

// reclaimSQL is the candidate predicate of ReclaimExpired (alias c): the
// lease expired and was not renewed within staleWindow; not dispatch-excluded.
func reclaimSQL(a *args, now time.Time, staleWindow time.Duration) string {
	return "c.lease_expires_at <= " + a.add(fmtTime(now)) +
		" AND (c.lease_renewed_at IS NULL OR c.lease_renewed_at <= " + a.add(fmtTime(now.Add(-staleWindow))) + ")" +
		" AND c.state NOT IN " + excludedSQL()
}

// Claim implements store.Tasks. The candidates are picked first (the write
// transaction is immediate, so they stay OPEN), then each gets a token made
// here, of which only the hash reaches the database: one UPDATE sets every
// task's hash from a JSON object keyed by task id.
func (s *Store) Claim(ctx context.Context, worker string, types []string, n int, lease time.Duration) ([]store.ClaimedTask, error) {
	if err := store.ValidateTexts("types", types); err != nil {
		return nil, err
	}
	if err := store.ValidateClaim(worker, n, lease); err != nil {
		return nil, err
	}
	var out []store.ClaimedTask
	err := s.write(ctx, "claim", func(tx *wtx, now time.Time) error {
		out = nil
		q, vals := claimCandidates(now, types, n)
		rows, err := tx.QueryContext(ctx, q, vals...)
		if err != nil {
			return fmt.Errorf("sqlite: claim: %w", err)
		}
		ids, err := collect(rows, "claim", func(sc scanner) (int64, error) {
			var id int64
			return id, sc.Scan(&id)
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		tokens, hashes, idList := leaseTokens(ids)
		ts, err := s.transition(ctx, tx, now, claimMove(worker, now, lease, idList, hashes))
		if err != nil {
			return err
		}
		if err := fillDeps(ctx, tx, ts); err != nil {
			return err
		}
		for _, t := range ts {
			out = append(out, store.ClaimedTask{Task: t, LeaseToken: tokens[t.ID]})
		}
		return nil
	})
	store.SortClaimed(out)
	return out, err
}

// claimCandidates is the query of the ids of the n tasks of types a claim
// at now leases, in claim order, with its arguments. The state literal lets
// SQLite use idx_outbox_tasks_claim_open (see move.statement).
func claimCandidates(now time.Time, types []string, n int) (string, []any) {
	a := &args{}
	q := `SELECT c.task_id FROM cks_outbox_tasks c WHERE c.state = ` + stateLiteral(ledger.Open) + ` AND ` + claimSQL(a, now, types) +
		` ORDER BY c.priority DESC, c.created_at, c.task_id LIMIT ` + a.add(n)
	return q, a.vals
}

// claimMove is Claim's change of the tasks idList names (a JSON array of
// ids) to CLAIMED by worker, each with the hash hashes (a JSON object keyed
// by task id) gives it.
func claimMove(worker string, now time.Time, lease time.Duration, idList, hashes string) move {
	return move{
		from: ledger.Open, to: ledger.Claimed, ids: idList,
		set: func(a *args) string {
			return ", claimed_by = " + a.add(worker) + ", claimed_at = " + a.add(fmtTime(now)) +
				", lease_token_hash = json_extract(" + a.add(hashes) + `, '$."' || task_id || '"')` +
				", lease_expires_at = " + a.add(fmtTime(now.Add(lease))) +
				", lease_renewed_at = " + a.add(fmtTime(now)) + ", lease_ms = " + a.add(lease.Milliseconds()) +
				", attempts = attempts + 1, run_after = NULL"
		},
		actor: worker, reason: "claimed",
	}
}

// leaseTokens makes a fresh lease token per task of ids and returns them by
// id, with the JSON object of their hashes keyed by id and the JSON array of
// the ids (the arguments of Claim's UPDATE).
func leaseTokens(ids []int64) (tokens map[int64]string, hashes, idList string) {
	tokens = make(map[int64]string, len(ids))
	byID := make(map[string]string, len(ids))
	for _, id := range ids {
		tokens[id] = store.NewLeaseToken()
		byID[strconv.FormatInt(id, 10)] = store.HashLeaseToken(tokens[id])
	}
	h, _ := json.Marshal(byID) // a map of strings always marshals
	l, _ := json.Marshal(ids)
	return tokens, string(h), string(l)
}

// fillDeps sets DependsOn of every task in ts.
func fillDeps(ctx context.Context, q querier, ts []store.Task) error {
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	deps, err := depsOf(ctx, q, ids)
	if err != nil {
		return err
	}
	for i := range ts {
		ts[i].DependsOn = deps[ts[i].ID]
	}
	return nil
}

// MarkRunning implements store.Tasks.
func (s *Store) MarkRunning(ctx context.Context, id int64, token string) (store.Task, error) {
	var out store.Task
	err := s.write(ctx, "mark running", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running)
		if err != nil {
			return err
		}
		out, err = s.moveOne(ctx, tx, now, cur, ledger.Running, move{actor: cur.ClaimedBy, reason: "running"})
		return err
	})
	return out, err
}

// Touch implements store.Tasks.
func (s *Store) Touch(ctx context.Context, id int64, token string) (bool, error) {
	err := s.write(ctx, "touch", func(tx *wtx, now time.Time) error {
		if _, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running, ledger.Reviewing); err != nil {
			return err
		}
		var ms int64
		if err := tx.QueryRowContext(ctx, `SELECT lease_ms FROM cks_outbox_tasks WHERE task_id = ?`, id).Scan(&ms); err != nil {
			return fmt.Errorf("sqlite: touch task %d: %w", id, err)
		}
		expires := now.Add(time.Duration(ms) * time.Millisecond)
		_, err := tx.ExecContext(ctx, `UPDATE cks_outbox_tasks SET lease_renewed_at = ?, lease_expires_at = ?, updated_at = ?
WHERE task_id = ?`, fmtTime(now), fmtTime(expires), fmtTime(now), id)
		if err != nil {
			return fmt.Errorf("sqlite: touch task %d: %w", id, err)
		}
		return nil
	})
	return err == nil, err
}

// AddEvidence implements store.Tasks.
func (s *Store) AddEvidence(ctx context.Context, id int64, token, kind, body string) (store.Evidence, error) {
	if err := cmp.Or(store.ValidateText("kind", kind), store.ValidateText("body", body)); err != nil {
		return store.Evidence{}, err
	}
	if kind == "" {
		return store.Evidence{}, &store.FieldError{Field: "kind", Expected: "a non-empty evidence kind"}
	}
	var out store.Evidence
	err := s.write(ctx, "add evidence", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running)
		if err != nil {
			return err
		}
		out, err = addEvidence(ctx, tx, now, cur, kind, body)
		return err
	})
	return out, err
}

// addEvidence records evidence for the current attempt of cur.
func addEvidence(ctx context.Context, tx *wtx, now time.Time, cur store.Task, kind, body string) (store.Evidence, error) {
	e := store.Evidence{TaskID: cur.ID, Attempt: cur.Attempts, Restart: cur.Restarts, Revision: cur.Revision,
		Kind: kind, Body: body, Actor: cur.ClaimedBy, CreatedAt: now}
	err := tx.QueryRowContext(ctx, `INSERT INTO cks_task_evidence (task_id, attempt, restart, revision, kind, body, actor, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING evidence_id`, e.TaskID, e.Attempt, e.Restart, e.Revision, kind, body,
		e.Actor, fmtTime(now)).Scan(&e.ID)
	if err != nil {
		return e, fmt.Errorf("sqlite: evidence of task %d: %w", cur.ID, err)
	}
	return e, nil
}

// Complete implements store.Tasks.
func (s *Store) Complete(ctx context.Context, id int64, token string, needsReview bool, result string) (store.Task, error) {
	if err := store.ValidateText("result", result); err != nil {
		return store.Task{}, err
	}
	var out store.Task
	err := s.write(ctx, "complete", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running)
		if err != nil {
			return err
		}
		to, reason := ledger.Completed, "completed"
		if needsReview {
			to, reason = ledger.NeedsReview, "needs review"
		}
		out, err = s.moveOne(ctx, tx, now, cur, to, move{actor: cur.ClaimedBy, reason: reason,
			set: func(a *args) string { return ", result = " + a.add(result) + ", " + revokeLease }})
		if err != nil || to != ledger.Completed {
			return err
		}
		return s.releaseDependants(ctx, tx, now, id)
	})
	return out, err
}

// releaseDependants moves the WAITING dependants of the just completed task
// id whose dependencies are now all COMPLETED to OPEN.
func (s *Store) releaseDependants(ctx context.Context, tx *wtx, now time.Time, id int64) error {
	_, err := s.transition(ctx, tx, now, move{
		from: ledger.Waiting, to: ledger.Open,
		where: func(a *args) string {
			return "c.task_id IN (SELECT task_id FROM cks_task_deps WHERE depends_on = " + a.add(id) + `)
AND NOT EXISTS (SELECT 1 FROM cks_task_deps d JOIN cks_outbox_tasks p ON p.task_id = d.depends_on
	WHERE d.task_id = c.task_id AND p.state <> ` + a.add(string(ledger.Completed)) + ")"
		},
		actor: "ledger", reason: fmt.Sprintf("dependencies complete (last: %d)", id),
	})
	return err
}

// blockDependants moves the WAITING dependants of task id, which just became
// (or, for ReleaseDependencies, is) FAILED or CANCELLED, to BLOCKED, and so
// on down the dependency graph, with events by actor. It returns how many
// tasks it blocked.
func (s *Store) blockDependants(ctx context.Context, tx *wtx, now time.Time, actor string, id int64, state ledger.State, why string) (int, error) {
	type item struct {
		id     int64
		reason string
	}
	queue := []item{{id, fmt.Sprintf("dependency %d is %s: %s", id, state, why)}}
	n := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		blocked, err := s.transition(ctx, tx, now, move{
			from: ledger.Waiting, to: ledger.Blocked,
			where: func(a *args) string {
				return "c.task_id IN (SELECT task_id FROM cks_task_deps WHERE depends_on = " + a.add(it.id) + ")"
			},
			set:   func(a *args) string { return ", last_error = " + a.add(it.reason) },
			actor: actor, reason: it.reason,
		})
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

// Fail implements store.Tasks.
func (s *Store) Fail(ctx context.Context, id int64, token string, retryable bool, reason string) (store.Task, error) {
	if err := store.ValidateText("reason", reason); err != nil {
		return store.Task{}, err
	}
	var out store.Task
	err := s.write(ctx, "fail", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running)
		if err != nil {
			return err
		}
		if retryable && cur.Attempts < cur.MaxAttempts {
			runAfter := now.Add(ledger.Backoff(cur.Attempts, rand.Float64()))
			out, err = s.moveOne(ctx, tx, now, cur, ledger.Open, move{actor: cur.ClaimedBy, reason: "retry: " + reason,
				set: func(a *args) string {
					return ", last_error = " + a.add(reason) + ", run_after = " + a.add(fmtTime(runAfter)) + ", " + revokeLease
				}})
			return err
		}
		if retryable {
			reason = "max attempts: " + reason
		}
		out, err = s.moveOne(ctx, tx, now, cur, ledger.Failed, move{actor: cur.ClaimedBy, reason: reason,
			set: func(a *args) string { return ", last_error = " + a.add(reason) + ", " + revokeLease }})
		if err != nil {
			return err
		}
		_, err = s.blockDependants(ctx, tx, now, "ledger", id, ledger.Failed, reason)
		return err
	})
	return out, err
}

// RequestInput implements store.Tasks.
func (s *Store) RequestInput(ctx context.Context, id int64, token, question string) (store.Task, error) {
	if err := store.ValidateQuestion(question); err != nil {
		return store.Task{}, err
	}
	var out store.Task
	err := s.write(ctx, "request input", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Claimed, ledger.Running)
		if err != nil {
			return err
		}
		out, err = s.moveOne(ctx, tx, now, cur, ledger.NeedsInput, move{actor: cur.ClaimedBy, reason: question,
			attempt: cur.Attempts,
			set: func(a *args) string {
				return ", question = " + a.add(question) + ", answer = '', attempts = attempts - 1, " + revokeLease
			}})
		return err
	})
	return out, err
}

// Answer implements store.Tasks.
func (s *Store) Answer(ctx context.Context, id int64, actor, text string) (store.Task, error) {
	if err := cmp.Or(store.ValidateText("actor", actor), store.ValidateAnswer(text)); err != nil {
		return store.Task{}, err
	}
	return s.onTask(ctx, "answer", id, func(tx *wtx, now time.Time, cur store.Task) (store.Task, error) {
		if cur.State != ledger.NeedsInput {
			return cur, ledger.WrongState(cur, "answer", ledger.NeedsInput)
		}
		return s.moveOne(ctx, tx, now, cur, ledger.Open, move{actor: actor, reason: "answered: " + text,
			set: func(a *args) string { return ", answer = " + a.add(text) + ", run_after = NULL" }})
	})
}

// ClaimReview implements store.Tasks.
func (s *Store) ClaimReview(ctx context.Context, id int64, reviewer string, lease time.Duration) (store.ClaimedTask, error) {
	if err := store.ValidateText("reviewer", reviewer); err != nil {
		return store.ClaimedTask{}, err
	}
	if err := store.ValidateClaim(reviewer, 1, lease); err != nil {
		return store.ClaimedTask{}, err
	}
	token := store.NewLeaseToken()
	t, err := s.onTask(ctx, "claim review", id, func(tx *wtx, now time.Time, cur store.Task) (store.Task, error) {
		if cur.State != ledger.NeedsReview {
			return cur, ledger.WrongState(cur, "claim review", ledger.NeedsReview)
		}
		return s.moveOne(ctx, tx, now, cur, ledger.Reviewing, move{actor: reviewer, reason: "review claimed",
			set: func(a *args) string {
				return ", claimed_by = " + a.add(reviewer) + ", claimed_at = " + a.add(fmtTime(now)) +
					", lease_token_hash = " + a.add(store.HashLeaseToken(token)) + ", lease_expires_at = " + a.add(fmtTime(now.Add(lease))) +
					", lease_renewed_at = " + a.add(fmtTime(now)) + ", lease_ms = " + a.add(lease.Milliseconds())
			}})
	})
	if err != nil {
		return store.ClaimedTask{}, err
	}
	return store.ClaimedTask{Task: t, LeaseToken: token}, nil
}

// Approve implements store.Tasks.
func (s *Store) Approve(ctx context.Context, id int64, token, note string) (store.Task, error) {
	return s.decideReview(ctx, id, token, true, note)
}

// Reject implements store.Tasks.
func (s *Store) Reject(ctx context.Context, id int64, token, note string) (store.Task, error) {
	return s.decideReview(ctx, id, token, false, note)
}

func (s *Store) decideReview(ctx context.Context, id int64, token string, approve bool, note string) (store.Task, error) {
	if err := store.ValidateText("note", note); err != nil {
		return store.Task{}, err
	}
	var out store.Task
	err := s.write(ctx, "review", func(tx *wtx, now time.Time) error {
		cur, err := leased(ctx, tx, id, token, ledger.Reviewing)
		if err != nil {
			return err
		}
		to, reason := ledger.Open, "review rejected: "+note
		if approve {
			to, reason = ledger.Completed, "review approved: "+note
		}
		out, err = s.moveOne(ctx, tx, now, cur, to, move{actor: cur.ClaimedBy, reason: reason,
			set: func(a *args) string {
				return ", review_note = " + a.add(note) + ", run_after = NULL, " + revokeLease
			}})
		if err != nil || !approve {
			return err
		}
		return s.releaseDependants(ctx, tx, now, id)
	})
	return out, err
}

// onTask runs fn on task id, read (and, where the backend locks, locked) in
// one write transaction, and returns the task fn returns.
func (s *Store) onTask(ctx context.Context, what string, id int64, fn func(tx *wtx, now time.Time, cur store.Task) (store.Task, error)) (store.Task, error) {
	var out store.Task
	err := s.write(ctx, what, func(tx *wtx, now time.Time) error {
		cur, err := getTask(ctx, tx, id)
		if err != nil {
			return err
		}
		out, err = fn(tx, now, cur)
		return err
	})
	return out, err
}

// Cancel implements store.Tasks.
func (s *Store) Cancel(ctx context.Context, id int64, actor, reason string) (store.Task, error) {
	if err := cmp.Or(store.ValidateText("actor", actor), store.ValidateText("reason", reason)); err != nil {
		return store.Task{}, err
	}
	return s.onTask(ctx, "cancel", id, func(tx *wtx, now time.Time, cur store.Task) (store.Task, error) {
		return s.cancelTx(ctx, tx, now, cur, actor, reason)
	})
}

// cancelTx cancels cur: CANCELLED with the lease revoked, an abort request
// when it was CLAIMED or RUNNING, and its WAITING dependants BLOCKED.
func (s *Store) cancelTx(ctx context.Context, tx *wtx, now time.Time, cur store.Task, actor, reason string) (store.Task, error) {
	leased := cur.State == ledger.Claimed || cur.State == ledger.Running
	var hash string
	if leased {
		var err error
		if hash, err = leaseHashOf(ctx, tx, cur.ID); err != nil {
			return cur, err
		}
	}
	out, err := s.moveOne(ctx, tx, now, cur, ledger.Cancelled, move{actor: actor, reason: reason,
		set: func(a *args) string { return ", last_error = " + a.add(reason) + ", " + revokeLease }})
	if err != nil {
		return out, err
	}
	if leased {
		if _, err := insertAbort(ctx, tx, now, cur, hash, actor, "cancelled: "+reason, store.DefaultAbortDeadline); err != nil {
			return out, err
		}
	}
	_, err = s.blockDependants(ctx, tx, now, "ledger", cur.ID, ledger.Cancelled, reason)
	return out, err
}

// ReclaimExpired implements store.Tasks.
func (s *Store) ReclaimExpired(ctx context.Context, now time.Time, staleWindow time.Duration) (int, error) {
	if staleWindow < 0 {
		return 0, &store.FieldError{Field: "stale_window", Expected: "a non-negative duration"}
	}
	now = store.Time(now)
	total := 0
	err := s.write(ctx, "reclaim", func(tx *wtx, _ time.Time) error {
		total = 0
		for _, from := range []ledger.State{ledger.Claimed, ledger.Running} {
			failed, err := s.transition(ctx, tx, now, move{from: from, to: ledger.Failed,
				where: func(a *args) string { return reclaimSQL(a, now, staleWindow) + " AND c.attempts >= c.max_attempts" },
				set: func(a *args) string {
					return ", last_error = " + a.add("max attempts") + ", " + revokeLease
				},
				actor: "reaper", reason: "max attempts"})
			if err != nil {
				return err
			}
			for _, t := range failed {
				if _, err := s.blockDependants(ctx, tx, now, "ledger", t.ID, ledger.Failed, "max attempts"); err != nil {
					return err
				}
			}
			reopened, err := s.transition(ctx, tx, now, move{from: from, to: ledger.Open,
				where: func(a *args) string { return reclaimSQL(a, now, staleWindow) + " AND c.attempts < c.max_attempts" },
				set: func(a *args) string {
					return ", last_error = " + a.add("lease expired") + ", " + revokeLease
				},
				actor: "reaper", reason: "lease expired"})
			if err != nil {
				return err
			}
			total += len(failed) + len(reopened)
		}
		// An abandoned review goes back to the review queue.
		reviews, err := s.transition(ctx, tx, now, move{from: ledger.Reviewing, to: ledger.NeedsReview,
			where: func(a *args) string { return reclaimSQL(a, now, staleWindow) },
			set:   func(a *args) string { return ", " + revokeLease },
			actor: "reaper", reason: "review lease expired"})
		total += len(reviews)
		return err
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// releaseSQL is the candidate predicate of ReleaseDependencies' WAITING →
// OPEN (alias c): no dependency that is not COMPLETED; not dispatch-excluded.
func releaseSQL(a *args) string {
	return "NOT EXISTS (SELECT 1 FROM cks_task_deps d JOIN cks_outbox_tasks p ON p.task_id = d.depends_on" +
		" WHERE d.task_id = c.task_id AND p.state <> " + a.add(string(ledger.Completed)) + ")" +
		" AND c.state NOT IN " + excludedSQL()
}

// deadDepsSQL selects (task_id, state) of every FAILED or CANCELLED task that
// a WAITING, not dispatch-excluded task depends on, in task_id order.
func deadDepsSQL(a *args) string {
	return "SELECT DISTINCT p.task_id, p.state FROM cks_task_deps d" +
		" JOIN cks_outbox_tasks p ON p.task_id = d.depends_on" +
		" JOIN cks_outbox_tasks c ON c.task_id = d.task_id" +
		" WHERE c.state = " + a.add(string(ledger.Waiting)) +
		" AND p.state IN (" + a.add(string(ledger.Failed)) + ", " + a.add(string(ledger.Cancelled)) + ")" +
		" AND c.state NOT IN " + excludedSQL() +
		" ORDER BY p.task_id"
}

// ReleaseDependencies implements store.Tasks.
func (s *Store) ReleaseDependencies(ctx context.Context) (store.DependencyRelease, error) {
	var out store.DependencyRelease
	err := s.write(ctx, "release dependencies", func(tx *wtx, now time.Time) error {
		out = store.DependencyRelease{}
		a := &args{}
		rows, err := tx.QueryContext(ctx, deadDepsSQL(a), a.vals...)
		if err != nil {
			return fmt.Errorf("sqlite: release dependencies: %w", err)
		}
		type dead struct {
			id    int64
			state string
		}
		var deads []dead
		for rows.Next() {
			var d dead
			if err := rows.Scan(&d.id, &d.state); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: release dependencies: %w", err)
			}
			deads = append(deads, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: release dependencies: %w", err)
		}
		for _, d := range deads {
			n, err := s.blockDependants(ctx, tx, now, store.ActorDependencyRelease, d.id, ledger.State(d.state),
				"found by the dependency_release sweeper")
			if err != nil {
				return err
			}
			out.Blocked += n
		}
		released, err := s.transition(ctx, tx, now, move{from: ledger.Waiting, to: ledger.Open,
			where: releaseSQL,
			actor: store.ActorDependencyRelease, reason: "dependencies complete (found by the dependency_release sweeper)"})
		out.Released = len(released)
		return err
	})
	if err != nil {
		return store.DependencyRelease{}, err
	}
	return out, nil
}

// Transition moves task id to state to through the ledger's table, recording
// an event by actor with reason, and nothing else: no lease, dependency or
// attempt effects. It exists for the conformance suite and repair tools;
// the operations of store.Tasks are what callers use.
func (s *Store) Transition(ctx context.Context, id int64, to store.TaskState, actor, reason string) (store.Task, error) {
	return s.onTask(ctx, "transition", id, func(tx *wtx, now time.Time, cur store.Task) (store.Task, error) {
		return s.moveOne(ctx, tx, now, cur, to, move{actor: actor, reason: reason})
	})
}

func scanTask(sc scanner) (store.Task, error) { return scanTaskWith(sc) }

// scanTaskWith scans one row of taskColumns followed by the columns of extra
// (such as the lease hash leased compares, which a Task never carries).
func scanTaskWith(sc scanner, extra ...any) (store.Task, error) {
	var (
		t                                     store.Task
		payload, state                        string
		parent                                sql.NullInt64
		claimedAt, expires, renewed, runAfter sql.NullString
		stateChanged                          sql.NullString
		created, updated, metadata            string
	)
	err := sc.Scan(append([]any{&t.ID, &t.Type, &t.Title, &t.Description, &t.AcceptanceCriteria, &payload, &state,
		&t.Priority, &t.Attempts, &t.MaxAttempts, &t.Restarts, &t.Revision, &parent, &t.DedupeKey, &t.CreatedBy,
		&t.ClaimedBy, &claimedAt, &expires, &renewed, &runAfter,
		&t.Result, &t.LastError, &t.Question, &t.Answer, &t.ReviewNote, &created, &updated, &stateChanged, &metadata}, extra...)...)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return t, err
		}
		return t, fmt.Errorf("sqlite: scan task: %w", err)
	}
	t.Payload = []byte(payload)
	t.Metadata = []byte(metadata)
	t.State = ledger.State(state)
	if parent.Valid {
		p := parent.Int64
		t.ParentID = &p
	}
	for _, f := range []struct {
		src sql.NullString
		dst *time.Time
	}{{claimedAt, &t.ClaimedAt}, {expires, &t.LeaseExpiresAt}, {renewed, &t.LeaseRenewedAt}, {runAfter, &t.RunAfter},
		{stateChanged, &t.StateChangedAt}} {
		if f.src.Valid {
			if *f.dst, err = parseTime(f.src.String); err != nil {
				return t, err
			}
		}
	}
	if t.CreatedAt, err = parseTime(created); err != nil {
		return t, err
	}
	if t.UpdatedAt, err = parseTime(updated); err != nil {
		return t, err
	}
	return t, nil
}

// dedupeSQL finds the task a dedupe key names: the live one, or with once
// (NewTask.DedupeOnce) the live one first, else the latest finished one.
func dedupeSQL(once bool) string {
	if once {
		// dedupe_key <> '' lets the planner use the partial index.
		return `SELECT task_id FROM cks_outbox_tasks WHERE dedupe_key = ? AND dedupe_key <> ''
ORDER BY CASE WHEN state IN ` + terminalSQL() + ` THEN 1 ELSE 0 END, task_id DESC LIMIT 1`
	}
	return `SELECT task_id FROM cks_outbox_tasks WHERE dedupe_key = ? AND state NOT IN ` + terminalSQL()
}
