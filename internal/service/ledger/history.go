package ledger

import (
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// A task's history is written per attempt, not per move (issue 27): the
// creation of an OPEN task is its row, a running attempt lives on the row
// (claimed_at, claimed_by, state_changed_at once RUNNING), and the event
// that ends an attempt holds the whole attempt (its ClaimedAt, StartedAt
// and Worker); every other move, and every edit, keeps an event of its own.
// history reads it back as the one event per move it stands for.

// The reasons of the events history synthesises.
const (
	enqueuedReason = "enqueued"
	claimedReason  = "claimed"
	runningReason  = "running"
)

// eventOf is the event transition writes for move m of the task from state
// from, r the row as moved: none for the executor's start of its attempt
// (CLAIMED → RUNNING by the worker, reason runningReason: the row holds it
// until the attempt ends; any other start is an event of its own); the
// attempt's claim and start on the event that ends it (a move out of
// CLAIMED or RUNNING).
func eventOf(m move, from cks.TaskState, r *driver.TaskRow, now time.Time, attempt int) (driver.TaskEventRow, bool) {
	if from == cks.TaskClaimed && m.to == cks.TaskRunning && m.actor == m.row.ClaimedBy &&
		m.reason == runningReason && m.changes == "" && attempt == m.row.Attempts {
		return driver.TaskEventRow{}, false
	}
	ev := driver.TaskEventRow{TaskID: r.ID, At: now, Actor: m.actor, FromState: string(from), ToState: string(m.to),
		Attempt: attempt, Reason: m.reason, Changes: m.changes}
	if from == cks.TaskClaimed || from == cks.TaskRunning {
		ev.ClaimedAt = m.row.ClaimedAt
		if from == cks.TaskRunning {
			ev.StartedAt = m.row.StateChangedAt
		}
		if m.row.ClaimedBy != m.actor {
			ev.Worker = m.row.ClaimedBy
		}
	}
	return ev, true
}

// runAttempt is one attempt as history reads it: from the event that ended it,
// or from the row of a task that runs it now.
type runAttempt struct {
	claimedAt, startedAt time.Time
	worker               string
	n                    int
}

// history is the ordered list of task r's events, one per move and edit
// as the schema before issue 27 recorded them, synthesised from r, its
// event rows (events, in id order) and the attempts they hold. The order
// rests on the states, not on times (moves of one instant are common): an
// attempt's claim goes before the first event of the attempt (one from
// CLAIMED or RUNNING), its start before the first from RUNNING; the events
// of the attempt lie between, the one that ended it holding its claim, or
// r holding the one that runs now. Events recorded before issue 27 (a claim
// or start of their own, a creation of an OPEN task) are read as they are.
func history(r driver.TaskRow, events []driver.TaskEventRow) ([]cks.TaskEvent, error) {
	out := make([]cks.TaskEvent, 0, len(events)+3)
	if len(events) == 0 || events[0].FromState != "" {
		out = append(out, cks.TaskEvent{TaskID: r.ID, At: r.CreatedAt, Actor: r.CreatedBy, To: cks.TaskOpen,
			Reason: enqueuedReason})
	}
	// The attempt that events[i] belongs to: the next event that ended an
	// attempt, else the one r runs.
	attemptOf := func(i int) runAttempt {
		for _, e := range events[i:] {
			if !e.ClaimedAt.IsZero() {
				worker := e.Worker
				if worker == "" {
					worker = e.Actor
				}
				return runAttempt{claimedAt: e.ClaimedAt, startedAt: e.StartedAt, worker: worker, n: e.Attempt}
			}
		}
		a := runAttempt{claimedAt: r.ClaimedAt, worker: r.ClaimedBy, n: r.Attempts}
		if r.State == string(cks.TaskRunning) {
			a.startedAt = r.StateChangedAt
		}
		return a
	}
	claim := func(a runAttempt) cks.TaskEvent {
		return cks.TaskEvent{TaskID: r.ID, At: a.claimedAt, Actor: a.worker, From: cks.TaskOpen, To: cks.TaskClaimed,
			Attempt: a.n, Reason: claimedReason}
	}
	start := func(a runAttempt) cks.TaskEvent {
		return cks.TaskEvent{TaskID: r.ID, At: a.startedAt, Actor: a.worker, From: cks.TaskClaimed, To: cks.TaskRunning,
			Attempt: a.n, Reason: runningReason}
	}
	// open: the current attempt's claim is in out; started: its start too.
	open, started := false, false
	for i, e := range events {
		from, to := cks.TaskState(e.FromState), cks.TaskState(e.ToState)
		switch {
		case from == cks.TaskOpen && to == cks.TaskClaimed: // a claim of its own (before issue 27)
			open, started = true, false
		case from == cks.TaskClaimed && to == cks.TaskRunning: // a start of its own
			started = true
		case from == cks.TaskClaimed || from == cks.TaskRunning:
			var a runAttempt
			if !open || (!started && from == cks.TaskRunning) {
				a = attemptOf(i)
			}
			if !open {
				out = append(out, claim(a))
				open = true
			}
			if !started && from == cks.TaskRunning {
				out = append(out, start(a))
				started = true
			}
			if to != cks.TaskClaimed && to != cks.TaskRunning {
				open, started = false, false
			}
		}
		ev, err := toEvent(e)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	// The attempt r runs now.
	if st := cks.TaskState(r.State); st == cks.TaskClaimed || st == cks.TaskRunning {
		a := attemptOf(len(events))
		if !open {
			out = append(out, claim(a))
		}
		if !started && st == cks.TaskRunning {
			out = append(out, start(a))
		}
	}
	return out, nil
}
