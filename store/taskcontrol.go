package store

import (
	"context"
	"time"

	"github.com/cks-dev/cks"
)

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
