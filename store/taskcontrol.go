package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// TopicTaskAborts is the change topic of abort requests and confirmations:
// published by Stop, Update (when it restarts a running task) and Cancel of a
// leased task, and by ConfirmAbort and ResolveAbort. Executors watch it to
// learn of an abort without waiting for their next lease heartbeat; stop
// calls watch it for the confirmation.
const TopicTaskAborts = "task_aborts"

// GroupAttempts fills t.Current and t.History from every evidence and
// decision record of t (oldest first) and its aborts: Current is the attempt
// identified by the task's counters (the attempt in progress, or the last
// one; for a NEEDS_INPUT task the paused one), History every other attempt,
// oldest first. Nothing from an aborted attempt is ever Current: an abort
// gives the attempt back and the restart that follows moves Current on.
// Backends call it from GetTask.
func GroupAttempts(t *cks.Task, evidence []cks.Evidence, decisions []cks.Decision, aborts []cks.Abort) {
	type key struct{ restart, attempt int }
	cur := key{t.Restarts, t.Attempts}
	if t.State == "NEEDS_INPUT" {
		cur.attempt++ // RequestInput gave the attempt back; it resumes after Answer
	}
	views := map[key]*cks.AttemptView{}
	view := func(k key) *cks.AttemptView {
		if v := views[k]; v != nil {
			return v
		}
		v := &cks.AttemptView{Restart: k.restart, Attempt: k.attempt}
		views[k] = v
		return v
	}
	view(cur)
	for _, e := range evidence {
		v := view(key{e.Restart, e.Attempt})
		v.Evidence = append(v.Evidence, e)
		if e.Kind == cks.EvidenceWorkspace {
			v.Workspace = e.Body
		}
	}
	for _, d := range decisions {
		v := view(key{d.Restart, d.Attempt})
		v.Decisions = append(v.Decisions, d)
	}
	for _, a := range aborts {
		view(key{a.Restart, a.Attempt}).Aborted = true
	}
	t.Current = views[cur]
	t.History = nil
	for k, v := range views {
		if k != cur {
			t.History = append(t.History, *v)
		}
	}
	slices.SortFunc(t.History, func(a, b cks.AttemptView) int {
		return cmp.Or(cmp.Compare(a.Restart, b.Restart), cmp.Compare(a.Attempt, b.Attempt))
	})
	t.Aborts = aborts
	if len(aborts) > 0 {
		last := aborts[len(aborts)-1]
		t.LastAbort = &last
	}
}

// ValidateDeadline is cks.ValidateDeadline.
func ValidateDeadline(d time.Duration) (time.Duration, error) { return cks.ValidateDeadline(d) }

// TaskControl is the operator side of the ledger (ADR 0020) and the
// executor calls that go with it. The store operations are single
// transactions; waiting for an abort confirmation is the caller's business
// (package ledger's Control does it with WatchChanges on TopicTaskAborts).
type TaskControl interface {
	// Stop holds task id in STOPPED. For CLAIMED/RUNNING it revokes the
	// lease, gives the attempt back (attempts-1: a stop must not consume the
	// retry budget), records a pending Abort naming the executor with
	// deadline_at = now+deadline, and publishes TopicTaskAborts, all in one
	// transaction; the Abort is returned. For OPEN, WAITING, BLOCKED,
	// NEEDS_INPUT, NEEDS_REVIEW and REVIEWING it only moves the task (a
	// reviewer's lease is revoked without an abort request). A terminal or
	// already STOPPED task is ErrConflict naming its state. reason must be
	// non-empty (FieldError reason); deadline as ValidateDeadline.
	Stop(ctx context.Context, id int64, actor, reason string, deadline time.Duration) (cks.Task, *cks.Abort, error)
	// Start releases a STOPPED task: to OPEN, or WAITING when a dependency
	// is not COMPLETED at this moment, or BLOCKED when one FAILED or was
	// CANCELLED; restarts+1, attempts unchanged, run_after cleared. Any
	// other state is ErrConflict naming it.
	Start(ctx context.Context, id int64, actor, reason string) (cks.Task, error)
	// Update applies p (validated with TaskPatch.Validate) as one
	// operation. STOPPED, OPEN, WAITING, BLOCKED: in place; a dependency
	// edit re-evaluates OPEN/WAITING/BLOCKED as Enqueue would (a STOPPED
	// task is evaluated by Start). CLAIMED/RUNNING with a material patch:
	// stop (as Stop, with an Abort) → apply → start (as Start), one
	// transaction, so no reader sees the task STOPPED; with a non-material
	// patch: live. NEEDS_INPUT, NEEDS_REVIEW, REVIEWING: non-material edits
	// in place, material ones ErrConflict ("stop it first"). Terminal:
	// ErrConflict. Material edits bump revision. A dependency that does not
	// exist or closes a cycle is a FieldError naming add_depends_on; a
	// cancel_children id that is not a child is a FieldError naming
	// cancel_children. Any error changes nothing.
	Update(ctx context.Context, id int64, actor string, p cks.TaskPatch, deadline time.Duration) (cks.UpdateResult, error)

	// GetAbort returns one abort request.
	GetAbort(ctx context.Context, abortID int64) (cks.Abort, error)
	// ConfirmAbort is the executor's confirmation that the work of the
	// revoked lease leaseToken has stopped: the task's abort for that token
	// becomes AbortConfirmed (also after it was declared unconfirmed) and
	// TopicTaskAborts is published. ErrNotFound when no abort names the
	// token (the lease ended some other way: nothing to confirm).
	ConfirmAbort(ctx context.Context, id int64, leaseToken string) (cks.Abort, error)
	// ResolveAbort declares a pending abort unconfirmed (the stop's
	// deadline passed) and publishes TopicTaskAborts; an abort that is no
	// longer pending is returned as it is.
	ResolveAbort(ctx context.Context, abortID int64) (cks.Abort, error)
	// ExpireAborts declares every pending abort whose deadline is at or
	// before now unconfirmed, so an outcome is stored even when the caller
	// that waited for it is gone. It returns how many it resolved.
	ExpireAborts(ctx context.Context, now time.Time) (int, error)
	// LeaseHeld reports, reading only, whether leaseToken is still task id's
	// current lease: the cheap check an executor makes when woken by
	// TopicTaskAborts.
	LeaseHeld(ctx context.Context, id int64, leaseToken string) (bool, error)

	// RecordDecision records a decision of the current attempt, fenced like
	// AddEvidence. kind must be non-empty; derivedFromRevision must be
	// 1..the task's revision (FieldError derived_from_revision).
	RecordDecision(ctx context.Context, id int64, leaseToken, kind, text string, derivedFromRevision int) (cks.Decision, error)
	// ReuseWorkspace records the explicit decision to continue in path, a
	// workspace recorded (EvidenceWorkspace) by an earlier attempt of this
	// task (otherwise FieldError path), and makes it the current attempt's
	// workspace; one transaction, fenced like AddEvidence.
	ReuseWorkspace(ctx context.Context, id int64, leaseToken, path string, derivedFromRevision int) (cks.Decision, error)
}

// CheckChildDedupe is the rule for a dedupe hit among the add_children of an
// Update of task parent: the i-th child found the live task child (created
// false) under its dedupe key. Only a child of parent may be found so — the
// update then adds it again idempotently; a hit on any other task is a
// FieldError naming add_children[i].dedupe_key that says nothing of that
// task (the caller may not be allowed to read it), and the update changes
// nothing.
func CheckChildDedupe(i int, parent int64, child cks.Task, created bool) error {
	if created || (child.ParentID != nil && *child.ParentID == parent) {
		return nil
	}
	return fieldError(fmt.Sprintf("add_children[%d].dedupe_key", i),
		fmt.Sprintf("a key no task but a child of task %d holds", parent))
}

// ValidateStopReason is the one rule of a stop's reason (ADR 0020: a hold
// says why): text a backend stores, and more than white space. Every
// surface passes its FieldError on as it is.
func ValidateStopReason(reason string) error {
	return nonBlank("reason", reason, "a non-empty reason (why the task is held)")
}

// ValidateAnswer is the rule of an answer to a NEEDS_INPUT task's question.
func ValidateAnswer(text string) error { return nonBlank("text", text, "a non-empty answer") }

// ValidateQuestion is the rule of the question that parks a task in
// NEEDS_INPUT.
func ValidateQuestion(question string) error {
	return nonBlank("question", question, "a non-empty question")
}

// nonBlank refuses s, naming field, unless it is stored text that is more
// than white space.
func nonBlank(field, s, expected string) error {
	if err := ValidateText(field, s); err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return fieldError(field, expected)
	}
	return nil
}
