package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
)

// Service is the task ledger over a driver: every rule of the tasks,
// written once for both dialects. Each operation is one driver
// transaction; every state change goes through transition (the
// table's check, the event, TopicTasksReady), every executor call is fenced
// by the hash of its lease token, and the plain token exists only in what
// Claim and ClaimReview return (cks.ClaimedTask). Every string and JSON
// argument is checked (cks.ValidateText, ValidateJSON, through the shared
// validators) before anything is read or written.
type Service struct {
	db    driver.Driver
	clock clock.Clock
	// jitter is the random fraction of a retry's backoff (backoff's r).
	jitter func() float64
	// completer groups the Complete, Fail and Heartbeat calls of this
	// process, claimer its claims.
	completer completer
	claimer   claimer
	// serial is set when the driver's writes run one at a time
	// (driver.SerialWriter): a flush then takes in the calls that queued
	// while it waited for the writer (flush).
	serial bool
	// leasesLiveUntil (Unix ns) is when a lease may next have expired
	// unrenewed, as far as the claim's last probe knows
	// (leaseMayHaveExpired).
	leasesLiveUntil atomic.Int64
	// limitsSeen is set while the claims of this process last found a
	// concurrency limit; limitsUnseenUntil (Unix ns) is until when a probe
	// that found none holds (limitsMayExist).
	limitsSeen        atomic.Bool
	limitsUnseenUntil atomic.Int64
	// rateFreeAt (Unix ns, 0: none) is when a key full at its rate limit
	// next frees a start, as this process's keyed claims last found
	// (noteRateFree): the waiting room's timer.
	rateFreeAt atomic.Int64
	// nextDeadline (Unix ns, 0: none) is the next attempt deadline the
	// last TimeOutAttempts found (NextAttemptDeadline).
	nextDeadline atomic.Int64
	// nextExpiry (Unix ns, 0: none) is the next expiry the last
	// ExpireTasks found (NextExpiry).
	nextExpiry atomic.Int64
	// changes wakes waitAbort; nil in a service that never waits.
	changes Watcher
	// moves is told of every committed write that moved a task; nil: no
	// one is (NoteMovesTo).
	moves MovesNoter
	// observer is told of the claims and attempt ends of the committed
	// writes; nil: no one is (ObserveWith).
	observer Observer
	// tracer is observer when it is a Tracer, else nil (ObserveWith).
	tracer Tracer
	// stats keeps TaskStats' answers for StatsTTL per minute of their
	// step, one read per window.
	stats readCache[StatsWindow, cks.TaskStats]
	// room holds the claims that wait for work (ClaimParams.Wait).
	room waitRoom
	// types keeps UnclaimedTypes' read of the ledger for TypesTTL.
	types readCache[struct{}, typesRead]
	// counts keeps TaskCounts' read for CountsTTL; counted are the types
	// its last read named.
	counts  readCache[struct{}, TaskCounts]
	counted countedTypes
	// settings are the default lease and the retry backoff (Configure).
	settings Settings
	// outputTail bounds each attempt's output, in bytes (0:
	// cks.DefaultOutputTail; tests set less); feed wakes the output's
	// followers.
	outputTail int64
	feed       outputFeed
}

// MovesNoter is told, after the commit, of every write of the ledger that
// created a task, claimed one or moved one to another state (transition) —
// not of a lease renewal or an edit that moves nothing. The process's
// notifier.Coalescer is one: it publishes cks.TopicTasksMoved for them, at
// most once an interval, outside the transactions. Note must not wait: it
// is called on the path of every completion.
type MovesNoter interface{ Note() }

// NoteMovesTo makes the service tell n of its moves (package backend hands
// it the handle's coalesced publisher of cks.TopicTasksMoved). It is called
// once, before the service is used; without it no move is published.
func (s *Service) NoteMovesTo(n MovesNoter) { s.moves = n }

// NewService returns the ledger over db. changes wakes the operator calls
// that wait for an abort's confirmation (StopTask, UpdateTask); nil for a
// ledger that never waits. Of the options it uses the clock
// (driver.WithClock), which tells the time of every write whose time is not
// an argument.
func NewService(db driver.Driver, changes Watcher, opts ...driver.Option) *Service {
	s := &Service{db: db, changes: changes, clock: driver.ApplyOptions(opts).Clock, jitter: mrand.Float64,
		completer: completer{Max: maxFlushes, MaxBatch: maxFinishBatch},
		claimer:   claimer{Max: maxClaims, MaxBatch: maxClaimBatch}, settings: config.DefaultLedger()}
	s.completer.Run, s.claimer.Run = s.flush, s.claimBatch
	if _, ok := db.(driver.SerialWriter); ok {
		// A second flush could only queue behind the first's transaction:
		// the calls gather into the next flush instead (one locking read,
		// one commit for them all).
		s.completer.Max, s.serial = 1, true
	}
	s.room.s = s
	s.stats = readCache[StatsWindow, cks.TaskStats]{read: s.readStats, ttl: StatsWindow.ttl, clone: cloneStats}
	s.types = readCache[struct{}, typesRead]{read: s.readTypes, ttl: func(struct{}) time.Duration { return TypesTTL }}
	s.counts = readCache[struct{}, TaskCounts]{read: s.readCounts, ttl: s.countsTTL, clone: cloneCounts}
	return s
}

// Batch sizes of the sweeps that work through many rows in one transaction.
const (
	reclaimBatch = 500
	expireBatch  = 500
	waitingPage  = 1000
)

// write runs fn in one write transaction with the time of the clock. On
// Postgres the transaction may run again (deadlock, serialization), so fn
// must only assign its results. The topics fn publishes are published once
// each, when fn has succeeded, just before the commit (notifyOnce) — but
// cks.TopicTasksMoved, which is never published in the transaction: once
// it committed, s.moves is told (MovesNoter), and publishes it coalesced.
// Once it committed, s.observer (when set) is told what it claimed and
// which attempts it ended (Observer), as the attempt that committed kept
// them (notifyOnce).
func (s *Service) write(ctx context.Context, fn func(ctx context.Context, ex driver.Executor, now time.Time) error) error {
	return s.writeWith(ctx, driver.TxOptions{}, fn)
}

// writeWith is write with the transaction's options (driver.TxOptions.Single
// for the claim).
func (s *Service) writeWith(ctx context.Context, opts driver.TxOptions, fn func(ctx context.Context, ex driver.Executor, now time.Time) error) error {
	moved := false
	var last *notifyOnce // the executor of the attempt that commits
	err := s.db.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error {
		once := &notifyOnce{Executor: ex, observe: s.observer != nil, trace: s.tracer != nil}
		moved, last = false, once // of the attempt that commits
		// Leases and claims are stamped by the service's clock, which a
		// backend opened on Postgres corrects to the database's: a reaper
		// on another host judges them by the same clock.
		if err := fn(ctx, once, driver.Time(s.clock.Now())); err != nil {
			return err
		}
		for _, topic := range once.topics {
			if topic == cks.TopicTasksMoved {
				moved = true
				continue
			}
			if err := ex.Notify(ctx, topic); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && moved && s.moves != nil {
		s.moves.Note()
	}
	if err == nil && s.observer != nil {
		s.observed(last)
	}
	return err
}

// notifyOnce is the executor of a ledger write: every primitive but Notify
// goes through; Notify only notes the topic, so that a transaction that
// opens many tasks in several steps (a flush that retries one task and
// releases another's dependants, an update adding children, a bulk
// enqueue) publishes each topic once — a notification is a wake-up, and
// delivery waits for the commit anyway. One statement per topic, not per
// step.
type notifyOnce struct {
	driver.Executor
	topics []string
	// observe is set when the service has an Observer: the write then
	// keeps what it claimed (TaskClaim) and the attempts it ended
	// (transition), told once it committed.
	observe bool
	// trace is set when the Observer is a Tracer: the write then keeps
	// the tasks it created too (noteCreated).
	trace   bool
	created []Created
	claimed []Claim
	ended   []AttemptEnd
}

// Notify implements driver.Executor: topic is published at the end of the
// write (once however often it is noted).
func (n *notifyOnce) Notify(_ context.Context, topic string) error {
	if !slices.Contains(n.topics, topic) {
		n.topics = append(n.topics, topic)
	}
	return nil
}

// read runs fn in one read-only snapshot.
func (s *Service) read(ctx context.Context, fn func(ctx context.Context, ex driver.Executor) error) error {
	return s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, fn)
}

// holds reports whether token is the current lease of r: the ledger stores
// only driver.HashLeaseToken of a token, and compares hashes.
func holds(r driver.TaskRow, token string) bool {
	return token != "" && r.LeaseTokenHash != "" && driver.LeaseTokenHashes(r.LeaseTokenHash, token)
}

// leaseLive is the one rule of a live lease: r has a lease and now, by the
// service's clock (the database's on Postgres), is before its
// lease_expires_at. A lease is exactly as long as its claim asked (or the
// default lease, Settings.DefaultLease), renewed by as much by every
// Heartbeat. Every call under a lease needs it live (fence), LeaseHeld reports
// it, and a lease that is not live is the next claim's to take back
// (claimBatch), or the reaper's (ReclaimExpired) if nobody claims.
func leaseLive(r driver.TaskRow, now time.Time) bool {
	return r.LeaseTokenHash != "" && now.Before(r.LeaseExpiresAt)
}

// fence is the check of every call under a lease: token holds r's lease,
// the lease is live at now (leaseLive), and r is in one of states;
// otherwise ErrLeaseLost, saying whether the lease expired.
func fence(r driver.TaskRow, token string, now time.Time, states []cks.TaskState) error {
	switch {
	case !holds(r, token) || !slices.Contains(states, cks.TaskState(r.State)):
		return fmt.Errorf("task %d (now %s): %w", r.ID, r.State, cks.ErrLeaseLost)
	case !leaseLive(r, now):
		return fmt.Errorf("task %d (now %s): its lease expired unrenewed at %s: %w", r.ID, r.State,
			r.LeaseExpiresAt.UTC().Format(time.RFC3339Nano), cks.ErrLeaseLost)
	}
	return nil
}

// strs renders states as the driver's parameters.
func strs(states []cks.TaskState) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = string(st)
	}
	return out
}

// notFound is the error of an unknown task id.
func notFound(id int64) error { return fmt.Errorf("task %d: %w", id, cks.ErrNotFound) }

// getRow reads task id locked as asked, or ErrNotFound.
func getRow(ctx context.Context, ex driver.Executor, id int64, lock driver.Lock) (driver.TaskRow, error) {
	rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{id}, Lock: lock})
	if err != nil {
		return driver.TaskRow{}, err
	}
	if len(rows) == 0 {
		return driver.TaskRow{}, notFound(id)
	}
	return rows[0], nil
}

// depsOf returns the dependencies of each of the tasks ids.
func depsOf(ctx context.Context, ex driver.Executor, ids ...int64) (map[int64][]int64, error) {
	edges, err := ex.TaskDepList(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := map[int64][]int64{}
	for _, e := range edges {
		out[e.TaskID] = append(out[e.TaskID], e.DependsOn)
	}
	return out, nil
}

// tasksOf converts rows to tasks with their dependencies.
func tasksOf(ctx context.Context, ex driver.Executor, rows ...driver.TaskRow) ([]cks.Task, error) {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	deps, err := depsOf(ctx, ex, ids...)
	if err != nil {
		return nil, err
	}
	out := make([]cks.Task, len(rows))
	for i, r := range rows {
		out[i] = toTask(r, deps[r.ID])
	}
	return out, nil
}

// taskOf converts one row to a task with its dependencies.
func taskOf(ctx context.Context, ex driver.Executor, r driver.TaskRow) (cks.Task, error) {
	ts, err := tasksOf(ctx, ex, r)
	if err != nil {
		return cks.Task{}, err
	}
	return ts[0], nil
}

// toTask is the read view of a row: everything but the lease token's hash.
func toTask(r driver.TaskRow, deps []int64) cks.Task {
	t := cks.Task{
		ID:                 r.ID,
		Type:               r.Type,
		Title:              r.Title,
		Description:        r.Description,
		AcceptanceCriteria: r.AcceptanceCriteria,
		Payload:            json.RawMessage(r.Payload),
		State:              cks.TaskState(r.State),
		Priority:           r.Priority,
		Attempts:           r.Attempts,
		MaxAttempts:        r.MaxAttempts,
		Restarts:           r.Restarts,
		Revision:           r.Revision,
		Metadata:           json.RawMessage(r.Metadata),
		DependsOn:          deps,
		DedupeKey:          r.DedupeKey,
		CreatedBy:          r.CreatedBy,
		ClaimedBy:          r.ClaimedBy,
		ClaimedAt:          r.ClaimedAt,
		LeaseExpiresAt:     r.LeaseExpiresAt,
		LeaseRenewedAt:     r.LeaseRenewedAt,
		RunAfter:           r.RunAfter,
		Result:             r.Result,
		LastError:          r.LastError,
		Question:           r.Question,
		Answer:             r.Answer,
		ReviewNote:         r.ReviewNote,
		CreatedAt:          r.CreatedAt,
		UpdatedAt:          r.UpdatedAt,
		StateChangedAt:     r.StateChangedAt,
	}
	if r.ParentID != 0 {
		p := r.ParentID
		t.ParentID = &p
	}
	t.ExpiresAt = r.ExpiresAt
	t.ConcurrencyKeys, _ = decodeKeys(r.ConcurrencyKeys) // as the ledger wrote them
	t.Traceparent = r.Traceparent
	if r.AttemptTimeoutMs > 0 {
		d := attemptTimeout(r)
		t.AttemptTimeout = cks.Duration(cks.FormatDuration(d))
		if st := cks.TaskState(r.State); (st == cks.TaskClaimed || st == cks.TaskRunning) && !r.ClaimedAt.IsZero() {
			t.AttemptDeadline = r.ClaimedAt.Add(d)
		}
	}
	return t
}

func toEvent(e driver.TaskEventRow) (cks.TaskEvent, error) {
	changes, err := changesOf(e)
	return cks.TaskEvent{ID: e.EventID, TaskID: e.TaskID, At: e.At, Actor: e.Actor, From: cks.TaskState(e.FromState),
		To: cks.TaskState(e.ToState), Attempt: e.Attempt, Reason: e.Reason, Changes: changes}, err
}

func toEvidence(e driver.EvidenceRow) cks.Evidence {
	return cks.Evidence{ID: e.ID, TaskID: e.TaskID, Attempt: e.Attempt, Restart: e.Restart, Revision: e.Revision,
		Kind: e.Kind, Body: e.Body, Actor: e.Actor, CreatedAt: e.CreatedAt}
}

func toDecision(d driver.DecisionRow) cks.Decision {
	return cks.Decision{ID: d.ID, TaskID: d.TaskID, Attempt: d.Attempt, Restart: d.Restart, Revision: d.Revision,
		DerivedFromRevision: d.DerivedFromRevision, Kind: d.Kind, Text: d.Text, Actor: d.Actor, CreatedAt: d.CreatedAt}
}

func toAbort(a driver.AbortRow) cks.Abort {
	return cks.Abort{ID: a.ID, TaskID: a.TaskID, Executor: a.Executor, Attempt: a.Attempt, Restart: a.Restart,
		RequestedBy: a.RequestedBy, Reason: a.Reason, RequestedAt: a.RequestedAt, DeadlineAt: a.DeadlineAt,
		Outcome: cks.AbortOutcome(a.Outcome), ResolvedAt: a.ResolvedAt}
}

// move is one state change of one task: the row as read (and locked) in
// the transaction — as stored: transition writes narrowly what differs from
// it only in the lifecycle's columns — the state it moves to, what else
// changes with it, and its event.
type move struct {
	row driver.TaskRow
	to  cks.TaskState
	// set changes the other columns of the row.
	set           func(r *driver.TaskRow)
	actor, reason string
	// attempt, when > 0, is the event's attempt; otherwise the row's
	// attempts after the change.
	attempt int
	// changes, when not "", are the event's (editChanges): the move ends
	// an edit that restarted the task.
	changes string
	// end, for a move that ends an attempt, is how it ended when the
	// state it moves to does not say (outcomeOf): a retry, a timeout.
	end Outcome
}

// transition is the one function through which every state change goes.
// It checks each move against the table (check), applies it, and writes the
// rows by primary key with the moves' events (eventOf: one per move but
// the start of an attempt, which the row holds until the attempt's end
// records it): when every move changed only
// the columns of the lifecycle (driver.OnlyMoved) and no event records an
// edit's changes, in one TaskMoveMany that
// writes just those and the events in the same statement; otherwise the
// whole rows (one TaskUpdateMany) and then the events (one
// TaskEventInsertMany). It publishes TopicTasksReady when a task became
// OPEN, all in ex's transaction, and notes TopicTasksMoved (which write
// publishes after the commit, coalesced); state_changed_at and updated_at become
// now. The moves that end an attempt are kept for the Observer when ex
// observes (noteEnds). It returns the rows as written, in the order of moves.
func transition(ctx context.Context, ex driver.Executor, now time.Time, moves []move) ([]driver.TaskRow, error) {
	if len(moves) == 0 {
		return nil, nil
	}
	rows := make([]driver.TaskRow, len(moves))
	events := make([]driver.TaskEventRow, 0, len(moves))
	ready, narrow := false, true
	for i, m := range moves {
		from := cks.TaskState(m.row.State)
		if err := check(from, m.to); err != nil {
			return nil, fmt.Errorf("task %d: %w", m.row.ID, err)
		}
		// The move is made in place in rows: a copy handed to m.set would
		// escape to the heap, one allocation of the whole row per move.
		rows[i] = m.row
		r := &rows[i]
		if m.set != nil {
			m.set(r)
		}
		r.State, r.UpdatedAt, r.StateChangedAt = string(m.to), now, now
		attempt := r.Attempts
		if m.attempt > 0 {
			attempt = m.attempt
		}
		if ev, ok := eventOf(m, from, r, now, attempt); ok {
			events = append(events, ev)
		}
		// A task that had keys and leaves a running attempt frees a
		// place under its limits: the waiting claims are told.
		ready = ready || m.to == cks.TaskOpen || (r.ConcurrencyKeys != "" && holdsKeys(from) && !holdsKeys(m.to))
		// TaskMoveMany writes no event's changes.
		narrow = narrow && driver.OnlyMoved(m.row, *r) && m.changes == ""
	}
	var (
		n   int
		err error
	)
	if narrow {
		// The events go in with the rows; a lost update below rolls both
		// back with the transaction.
		n, err = ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{Rows: rows, Events: events})
	} else {
		n, err = ex.TaskUpdateMany(ctx, rows)
	}
	if err != nil {
		return nil, err
	}
	if n != len(rows) {
		return nil, fmt.Errorf("%d of %d tasks changed concurrently: %w", len(rows)-n, len(rows), cks.ErrConflict)
	}
	if !narrow {
		if err := ex.TaskEventInsertMany(ctx, events); err != nil {
			return nil, err
		}
	}
	if ready {
		if err := ex.Notify(ctx, cks.TopicTasksReady); err != nil {
			return nil, err
		}
	}
	// Noted, not published, by the executor of write (notifyOnce).
	if err := ex.Notify(ctx, cks.TopicTasksMoved); err != nil {
		return nil, err
	}
	noteEnds(ex, now, moves)
	return rows, nil
}

// moveOne applies one move and returns the row as written.
func moveOne(ctx context.Context, ex driver.Executor, now time.Time, m move) (driver.TaskRow, error) {
	rows, err := transition(ctx, ex, now, []move{m})
	if err != nil {
		return m.row, err
	}
	return rows[0], nil
}

// revoke ends the current lease: the token stops being current, so the
// executor's next call fails with ErrLeaseLost.
func revoke(r *driver.TaskRow) {
	r.LeaseTokenHash, r.LeaseExpiresAt, r.LeaseRenewedAt, r.ClaimedBy = "", time.Time{}, time.Time{}, ""
}

// leased reads and locks task id and checks that token holds its live
// lease (fence) and that it is in one of states; otherwise ErrLeaseLost (or
// ErrNotFound, or the FieldError of a token that is not text).
func leased(ctx context.Context, ex driver.Executor, now time.Time, id int64, token string, states ...cks.TaskState) (driver.TaskRow, error) {
	if err := cks.ValidateText("lease_token", token); err != nil {
		return driver.TaskRow{}, err
	}
	r, err := getRow(ctx, ex, id, driver.LockUpdate)
	if err != nil {
		return r, err
	}
	return r, fence(r, token, now, states)
}

// onTask runs fn on task id, read and locked in one write transaction, and
// returns the task fn's row becomes.
func (s *Service) onTask(ctx context.Context, id int64, fn func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error)) (cks.Task, error) {
	return s.onRow(ctx, func(ctx context.Context, ex driver.Executor, _ time.Time) (driver.TaskRow, error) {
		return getRow(ctx, ex, id, driver.LockUpdate)
	}, fn)
}

// onLease runs fn on task id fenced by token (leased) in one write
// transaction, and returns the task fn's row becomes.
func (s *Service) onLease(ctx context.Context, id int64, token string, states []cks.TaskState, fn func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error)) (cks.Task, error) {
	return s.onRow(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) (driver.TaskRow, error) {
		return leased(ctx, ex, now, id, token, states...)
	}, fn)
}

// onRow runs fn, in one write transaction, on the row read returns, and
// returns the task fn's row becomes.
func (s *Service) onRow(ctx context.Context, read func(ctx context.Context, ex driver.Executor, now time.Time) (driver.TaskRow, error),
	fn func(ctx context.Context, ex driver.Executor, now time.Time, cur driver.TaskRow) (driver.TaskRow, error)) (cks.Task, error) {
	var out cks.Task
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := read(ctx, ex, now)
		if err != nil {
			return err
		}
		r, err := fn(ctx, ex, now, cur)
		if err != nil {
			return err
		}
		out, err = taskOf(ctx, ex, r)
		return err
	})
	return out, err
}

// wrongState is the conflict of operation op, which needs task r in state
// want; it wraps cks.ErrConflict and names the task, its state and want.
func wrongState(r driver.TaskRow, op string, want cks.TaskState) error {
	return fmt.Errorf("task %d is %s, %s needs %s: %w", r.ID, r.State, op, want, cks.ErrConflict)
}

// isUnique reports whether err is a unique violation of the driver.
func isUnique(err error) bool { return errors.Is(err, driver.ErrUniqueViolation) }
