// Package ledger holds the rules of the task lifecycle (ADR 0020): the twelve
// task states, which of them are terminal, the allowed-transition table, the
// dispatch-exclusion set and the retry backoff, as pure data and functions;
// and Service, the task ledger itself over a driver.Driver, which routes every state change through check in
// its one transition function, so the table here is the only place a
// transition is allowed and every rule of the lifecycle is written once for
// both dialects. Control adds the operator operations (stop, start, update)
// with the bounded wait for an abort.
//
// Import direction: ledger imports store (for cks.TaskState, the records
// and the sentinel errors) and driver (the primitives); the drivers' schema
// imports ledger for the states its indexes name; store never imports
// ledger.
package ledger

import (
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/config"
)

// All lists the twelve states in lifecycle order.
var All = [...]cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked, cks.TaskClaimed, cks.TaskRunning, cks.TaskNeedsReview, cks.TaskNeedsInput,
	cks.TaskReviewing, cks.TaskCompleted, cks.TaskFailed, cks.TaskCancelled, cks.TaskStopped}

// Terminal lists the states that end a task's work: no agent, sweeper or
// edit moves a task out of them, and a dedupe key is unique among the other
// states. An operator's retry (Retry) is the one way out, of FAILED and
// CANCELLED back to OPEN (or WAITING, BLOCKED); COMPLETED is never left.
var Terminal = [...]cks.TaskState{cks.TaskCompleted, cks.TaskFailed, cks.TaskCancelled}

// DispatchExcluded is the one set of states that every claim query, sweeper
// and reaper skips (ADR 0020: STOPPED inherits NEEDS_INPUT's dispatch
// semantics exactly). Service passes this value to every claim and reclaim
// read of the driver (TestDispatchExclusionSet), and the drivers apply it
// (internal/driver/drivertest).
var DispatchExcluded = [...]cks.TaskState{cks.TaskNeedsInput, cks.TaskStopped}

// Initial lists the states Enqueue may create a task in (the creation event
// has an empty From state).
var Initial = [...]cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked}

// transitions is the allowed-transition table: from → the states it may move
// to. A pair not listed is illegal. It is read-only.
var transitions = map[cks.TaskState][]cks.TaskState{
	// Open → Waiting/Blocked: a dependency added by an update.
	cks.TaskOpen:    {cks.TaskClaimed, cks.TaskWaiting, cks.TaskBlocked, cks.TaskCancelled, cks.TaskStopped},
	cks.TaskWaiting: {cks.TaskOpen, cks.TaskBlocked, cks.TaskCancelled, cks.TaskStopped},
	// A BLOCKED task is re-evaluated only by an operator (update/start of the
	// next issue), which may make it WAITING or OPEN again.
	cks.TaskBlocked: {cks.TaskOpen, cks.TaskWaiting, cks.TaskCancelled, cks.TaskStopped},
	// Claimed/Running: finish, fail or retry (OPEN), park, cancel, stop.
	cks.TaskClaimed:     {cks.TaskRunning, cks.TaskCompleted, cks.TaskNeedsReview, cks.TaskNeedsInput, cks.TaskOpen, cks.TaskFailed, cks.TaskCancelled, cks.TaskStopped},
	cks.TaskRunning:     {cks.TaskCompleted, cks.TaskNeedsReview, cks.TaskNeedsInput, cks.TaskOpen, cks.TaskFailed, cks.TaskCancelled, cks.TaskStopped},
	cks.TaskNeedsReview: {cks.TaskReviewing, cks.TaskCancelled, cks.TaskStopped},
	cks.TaskNeedsInput:  {cks.TaskOpen, cks.TaskWaiting, cks.TaskCancelled, cks.TaskStopped},
	cks.TaskReviewing:   {cks.TaskCompleted, cks.TaskOpen, cks.TaskNeedsReview, cks.TaskCancelled, cks.TaskStopped},
	// start re-evaluates dependencies: OPEN, WAITING when one is unmet,
	// BLOCKED when one failed or was cancelled.
	cks.TaskStopped:   {cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked, cks.TaskCancelled},
	cks.TaskCompleted: nil,
	// retry: a fresh attempt budget, dependencies re-evaluated as start
	// does.
	cks.TaskFailed:    {cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked},
	cks.TaskCancelled: {cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked},
}

// Valid reports whether s is one of the twelve states.
func Valid(s cks.TaskState) bool { return slices.Contains(All[:], s) }

// isTerminal reports whether s is terminal.
func isTerminal(s cks.TaskState) bool { return slices.Contains(Terminal[:], s) }

// isDispatchExcluded reports whether s is in DispatchExcluded.
func isDispatchExcluded(s cks.TaskState) bool { return slices.Contains(DispatchExcluded[:], s) }

// Allowed reports whether the table allows from → to.
func Allowed(from, to cks.TaskState) bool { return slices.Contains(transitions[from], to) }

// check returns nil when from → to is allowed, and otherwise an error wrapping
// cks.ErrConflict that names both states.
func check(from, to cks.TaskState) error {
	if Allowed(from, to) {
		return nil
	}
	return &TransitionError{From: from, To: to}
}

// TransitionError is an illegal transition. It unwraps to cks.ErrConflict.
type TransitionError struct {
	From, To cks.TaskState
}

// Error names both states.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("illegal transition: task is %s, cannot move to %s", e.From, e.To)
}

// Unwrap makes errors.Is(err, cks.ErrConflict) hold.
func (e *TransitionError) Unwrap() error { return cks.ErrConflict }

// Retry backoff bounds (see backoff).
const (
	// BackoffBase is the delay after the first failed attempt when
	// Settings.RetryBackoff is not set (CKS_RETRY_BACKOFF).
	BackoffBase = config.BackoffBase
	// BackoffMax caps the delay before jitter, and bounds
	// Settings.RetryBackoff.
	BackoffMax = config.BackoffMax
	// BackoffJitter is the largest extra fraction added to the base delay.
	BackoffJitter = 0.25
)

// backoff is the delay before a retried task may be claimed again after its
// attempt-th attempt failed: base·2^(attempt-1), capped at BackoffMax, plus
// up to BackoffJitter of itself chosen by r in [0, 1) (the caller passes a
// random number, so this function stays deterministic for tests). base is
// Settings.RetryBackoff: 1 s by default, so 1 s, 2 s, 4 s …; 0 retries at
// once.
func backoff(base time.Duration, attempt int, r float64) time.Duration {
	d := BackoffMax
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 32 && base < BackoffMax {
		if e := base << (attempt - 1); e >= 0 && e < BackoffMax && e>>(attempt-1) == base {
			d = e
		}
	}
	r = min(max(r, 0), 1)
	return d + time.Duration(float64(d)*BackoffJitter*r)
}

// findCycle reports whether giving task id the dependencies deps would close a
// cycle in the dependency graph, whose existing edges dependsOn returns, and
// if so returns one such cycle as a path id → … → id. A new task cannot close
// a cycle (nothing depends on it yet), so Enqueue never meets one; edits of
// an existing task's dependencies must check with this before writing.
func findCycle(id int64, deps []int64, dependsOn func(int64) []int64) []int64 {
	prev := map[int64]int64{}
	queue := make([]int64, 0, len(deps))
	for _, d := range deps {
		if _, seen := prev[d]; !seen {
			prev[d] = id
			queue = append(queue, d)
		}
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == id {
			path := []int64{id}
			for n := prev[id]; n != id; n = prev[n] {
				path = append(path, n)
			}
			path = append(path, id)
			slices.Reverse(path)
			return path
		}
		for _, next := range dependsOn(cur) {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil
}
