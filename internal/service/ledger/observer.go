package ledger

import (
	"context"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Observer is told, after the commit, of the claims and the attempt ends
// that this service's own writes made (issue 43 item 5: the hub's task
// metrics). It sees only this process's writes: on a database several hubs
// serve, each hub's observer sees its own, and the metrics built on it are
// summed across hubs. Its calls must not wait: they run on the path of every
// claim and completion, after the commit and outside any lock of the
// ledger's. A service without one (the default) collects nothing for it.
type Observer interface {
	// Claimed is told of the tasks one claim transaction leased.
	Claimed(claims []Claim)
	// AttemptsEnded is told of the attempts one write transaction ended.
	AttemptsEnded(ends []AttemptEnd)
	// UsageReported is told of a usage report once it is committed.
	UsageReported(u cks.Usage)
}

// Claim is one task a claim leased, as the Observer is told of it.
type Claim struct {
	Type string
	// Wait is the time from the task's enqueue to the claim. A delayed
	// task's delay is in it: the claim clears run_after, so the claimed
	// row no longer says when the task became due.
	Wait time.Duration
	// First is set on a task's first claim (its first attempt, never
	// retried, started again or restarted: attempts 1, restarts 0), the one
	// whose Wait is its wait in the queue. A task given back and claimed
	// again has attempts 1 again, and is First again.
	First bool
}

// AttemptEnd is one attempt a write ended (a move out of CLAIMED or
// RUNNING), as the Observer is told of it.
type AttemptEnd struct {
	Type    string
	Outcome Outcome
	// Took is the attempt's length, from its claim to its end.
	Took time.Duration
}

// Outcome is how an attempt ended: a closed set, so that a metric labelled
// by it stays bounded.
type Outcome string

// The outcomes of an attempt.
const (
	// OutcomeCompleted: Complete, the task COMPLETED.
	OutcomeCompleted Outcome = "completed"
	// OutcomeNeedsReview: Complete asking for a review (NEEDS_REVIEW).
	OutcomeNeedsReview Outcome = "needs_review"
	// OutcomeNeedsInput: the executor asked a question (NEEDS_INPUT).
	OutcomeNeedsInput Outcome = "needs_input"
	// OutcomeFailed: Fail, the task FAILED (not retryable, or its last
	// attempt).
	OutcomeFailed Outcome = "failed"
	// OutcomeRetried: a retryable Fail with attempts left, the task OPEN
	// again after its backoff.
	OutcomeRetried Outcome = "retried"
	// OutcomeTimedOut: the lease reaper ended an attempt past its
	// attempt_timeout (OPEN again, or FAILED at max attempts).
	OutcomeTimedOut Outcome = "timed_out"
	// OutcomeReclaimed: the lease ran out unrenewed, or its executor was
	// known gone (ReleaseExecutor): OPEN again, or FAILED at max attempts.
	OutcomeReclaimed Outcome = "reclaimed"
	// OutcomeGivenBack: the executor gave the task back (GiveBack).
	OutcomeGivenBack Outcome = "given_back"
	// OutcomeCancelled: an operator cancelled the running task.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeStopped: an operator stopped (aborted) the running task.
	OutcomeStopped Outcome = "stopped"
	// OutcomeRequeued: any other move of a running task back to OPEN.
	OutcomeRequeued Outcome = "requeued"
)

// Outcomes lists every Outcome.
var Outcomes = [...]Outcome{OutcomeCompleted, OutcomeNeedsReview, OutcomeNeedsInput, OutcomeFailed, OutcomeRetried,
	OutcomeTimedOut, OutcomeReclaimed, OutcomeGivenBack, OutcomeCancelled, OutcomeStopped, OutcomeRequeued}

// ObserveWith makes the service tell o of its claims and attempt ends.
// Like NoteMovesTo it is called once, before the service is used (the hub
// hands it its metrics); nil tells no one.
func (s *Service) ObserveWith(o Observer) { s.observer = o }

// outcomeOf is how move m, which ends an attempt, ended it: the outcome
// its maker named (move.end), else the one of the state it moves to.
func outcomeOf(m move) Outcome {
	if m.end != "" {
		return m.end
	}
	switch m.to {
	case cks.TaskCompleted:
		return OutcomeCompleted
	case cks.TaskNeedsReview:
		return OutcomeNeedsReview
	case cks.TaskNeedsInput:
		return OutcomeNeedsInput
	case cks.TaskFailed:
		return OutcomeFailed
	case cks.TaskCancelled:
		return OutcomeCancelled
	case cks.TaskStopped:
		return OutcomeStopped
	default:
		return OutcomeRequeued
	}
}

// endsAttempt reports whether a move from from to to ends an attempt: it
// leaves CLAIMED or RUNNING for anything but the start of the attempt.
func endsAttempt(from, to cks.TaskState) bool {
	leased := func(st cks.TaskState) bool { return st == cks.TaskClaimed || st == cks.TaskRunning }
	return leased(from) && !leased(to)
}

// noteEnds keeps, for the Observer, the attempts moves end (transition's,
// at now), when ex is a write's executor that observes.
func noteEnds(ex driver.Executor, now time.Time, moves []move) {
	n, ok := ex.(*notifyOnce)
	if !ok || !n.observe {
		return
	}
	for _, m := range moves {
		if endsAttempt(cks.TaskState(m.row.State), m.to) {
			n.ended = append(n.ended, AttemptEnd{Type: m.row.Type, Outcome: outcomeOf(m), Took: max(now.Sub(m.row.ClaimedAt), 0)})
		}
	}
}

// TaskClaim implements driver.Executor: the rows claimed are kept for the
// Observer when the write observes.
func (n *notifyOnce) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	rows, err := n.Executor.TaskClaim(ctx, p)
	if err != nil || !n.observe {
		return rows, err
	}
	for _, r := range rows {
		n.claimed = append(n.claimed, Claim{Type: r.Type, Wait: max(r.ClaimedAt.Sub(r.CreatedAt), 0),
			First: r.Attempts == 1 && r.Restarts == 0})
	}
	return rows, nil
}

// observed tells the Observer what the committed write, whose executor
// was n, claimed and ended.
func (s *Service) observed(n *notifyOnce) {
	if n == nil {
		return
	}
	if len(n.claimed) > 0 {
		s.observer.Claimed(n.claimed)
	}
	if len(n.ended) > 0 {
		s.observer.AttemptsEnded(n.ended)
	}
}
