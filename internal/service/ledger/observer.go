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

// Tracer is an Observer that also traces the tasks (the hub's, when it
// exports OpenTelemetry traces: internal/runtime/telemetry). ObserveWith
// tells a Tracer of the tasks this service creates too, and the claims'
// answers carry the trace context it gives each attempt. A service whose
// Observer is not a Tracer collects nothing for it and answers each claim
// with the task's own traceparent.
type Tracer interface {
	Observer
	// Created is told of the tasks one write created.
	Created(tasks []Created)
	// AttemptTraceparent is the W3C traceparent of the attempt c started:
	// the context its executor works under (cks.ClaimedTask.Traceparent).
	// It is a function of c alone, so that any hub that ends the attempt
	// names the same span.
	AttemptTraceparent(c Claim) string
}

// Created is one task a write created, as a Tracer is told of it.
type Created struct {
	ID   int64
	Type string
	// At is the task's created_at, the time of the write.
	At time.Time
	// Traceparent is the task's (NewTask.Traceparent), "" for none.
	Traceparent string
	CreatedBy   string
	// Keys are the task's concurrency keys as stored (a JSON array, ""
	// for none; ConcurrencyKeys decodes them).
	Keys string
}

// Attempt is the task and attempt a Claim or an AttemptEnd is of: what
// a Tracer names the attempt's span by and labels it with.
type Attempt struct {
	ID int64
	// Attempt is the task's attempts counting this one; Restarts its
	// restarts (an attempt is one of Attempt, Restarts).
	Attempt, Restarts int
	// Agent is who claimed it (claimed_by).
	Agent string
	// ClaimedAt is when the attempt started; CreatedAt the task's.
	ClaimedAt, CreatedAt time.Time
	// Traceparent is the task's, "" for none.
	Traceparent string
	// Keys are the task's concurrency keys as stored (ConcurrencyKeys).
	Keys string
}

// attemptOf is the Attempt of a leased row.
func attemptOf(r *driver.TaskRow) Attempt {
	return Attempt{ID: r.ID, Attempt: r.Attempts, Restarts: r.Restarts, Agent: r.ClaimedBy, ClaimedAt: r.ClaimedAt,
		CreatedAt: r.CreatedAt, Traceparent: r.Traceparent, Keys: r.ConcurrencyKeys}
}

// ConcurrencyKeys decodes keys as a Created, Claim or AttemptEnd holds
// them (nil for none or for text the ledger did not write).
func ConcurrencyKeys(keys string) []string {
	out, _ := decodeKeys(keys)
	return out
}

// Claim is one task a claim leased, as the Observer is told of it.
type Claim struct {
	Attempt
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
	Attempt
	Type    string
	Outcome Outcome
	// Took is the attempt's length, from its claim to its end.
	Took time.Duration
	// Reason is the ending move's reason (a failure's error, a stop's
	// reason), "" for none.
	Reason string
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
func (s *Service) ObserveWith(o Observer) {
	s.observer = o
	s.tracer, _ = o.(Tracer)
}

// claimTraceparent is the traceparent a claim's answer gives the executor
// of row's new attempt (cks.ClaimedTask.Traceparent): its attempt span's
// when the service traces, else the task's own.
func (s *Service) claimTraceparent(r *driver.TaskRow) string {
	if s.tracer == nil {
		return r.Traceparent
	}
	return s.tracer.AttemptTraceparent(Claim{Attempt: attemptOf(r), Type: r.Type})
}

// noteCreated keeps, for the Tracer, the tasks a write created (rows as
// inserted), when ex is a write's executor that traces.
func noteCreated(ex driver.Executor, rows []driver.TaskRow) {
	n, ok := ex.(*notifyOnce)
	if !ok || !n.trace {
		return
	}
	for i := range rows {
		r := &rows[i]
		n.created = append(n.created, Created{ID: r.ID, Type: r.Type, At: r.CreatedAt, Traceparent: r.Traceparent,
			CreatedBy: r.CreatedBy, Keys: r.ConcurrencyKeys})
	}
}

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
			n.ended = append(n.ended, AttemptEnd{Attempt: attemptOf(&m.row), Type: m.row.Type, Outcome: outcomeOf(m),
				Took: max(now.Sub(m.row.ClaimedAt), 0), Reason: m.reason})
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
	for i := range rows {
		r := &rows[i].TaskRow
		n.claimed = append(n.claimed, Claim{Attempt: attemptOf(r), Type: r.Type, Wait: max(r.ClaimedAt.Sub(r.CreatedAt), 0),
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
	if len(n.created) > 0 {
		s.tracer.Created(n.created)
	}
	if len(n.claimed) > 0 {
		s.observer.Claimed(n.claimed)
	}
	if len(n.ended) > 0 {
		s.observer.AttemptsEnded(n.ended)
	}
}
