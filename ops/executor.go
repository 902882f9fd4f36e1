package ops

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/ledger"
)

// The executor operations: agents in any language work the ledger over
// HTTP. A claim (and a review claim) hands back a fresh lease token per task,
// and every other call of that lease carries it; a call with any other token
// is lease_lost and changes nothing. A claim also hands back a task-scoped
// agent credential per task (read, append, create on /tasks/ID) bound to the
// lease, which can report on its task but never stop, start, update, cancel
// or review it. Claim and review claim are Secret: their answers are the only
// ones that carry lease tokens.

// leaseOf reads lease_s: 0 is the ledger's DefaultLease. The bound is the
// ledger's (ValidateClaim, naming lease_s): a number of seconds past it
// (or not a number) is given as -1, which the ledger refuses, rather than
// converted past what a Duration holds.
func leaseOf(seconds float64) time.Duration {
	switch {
	case seconds == 0:
		return ledger.DefaultLease
	case !(seconds >= 0 && seconds <= ledger.MaxLease.Seconds()):
		return -1
	}
	return time.Duration(seconds * float64(time.Second))
}

// ClaimTasks is claim_tasks.
var ClaimTasks = define(cks.OpClaimTasks, &Op[cks.ClaimTasksInput, cks.ClaimedTasks]{
	spec: Spec{
		Title:   "Claim tasks",
		Summary: "lease up to n OPEN tasks, each with its lease token and an agent credential",
		Description: "Lease up to n OPEN tasks of the given types (any type when none), highest priority first, to worker. " +
			"Each comes with a fresh lease_token, shown in this answer only, and agent_tokens holds a task-scoped " +
			"credential per task bound to its lease. Needs append on /tasks.",
		Permission: auth.PermAppend, Resource: auth.ResourceTasks, Surfaces: HTTP, Needs: NeedTasks | NeedPrincipals,
		Secret: true,
	},
	call: func(ctx context.Context, s *Services, in *cks.ClaimTasksInput) (cks.ClaimedTasks, error) {
		worker, n := in.Worker, in.N
		if worker == "" {
			worker = actor(ctx)
		}
		if n == 0 {
			n = 1
		}
		lease := leaseOf(in.LeaseS)
		ts, creds, err := s.Tasks.ClaimCredentialed(ctx, ledger.ClaimParams{Worker: worker, Types: in.Types, N: n, Lease: lease},
			func(ctx context.Context, t cks.ClaimedTask) (string, error) {
				return auth.IssueTaskToken(ctx, s.Principals, t, worker)
			})
		if err != nil {
			return cks.ClaimedTasks{}, err
		}
		if ts == nil {
			ts = []cks.ClaimedTask{}
		}
		toks := make(map[string]string, len(creds))
		for id, tok := range creds {
			toks[strconv.FormatInt(id, 10)] = tok
		}
		return cks.ClaimedTasks{Tasks: ts, AgentTokens: toks}, nil
	},
})

// executorOp declares an executor call on one task: append on the task.
func executorOp[In, Out any](e cks.Endpoint[In, Out], sp Spec, call func(ctx context.Context, s *Services, in *In) (Out, error)) *Op[In, Out] {
	sp.Permission, sp.Resource = auth.PermAppend, taskResource
	sp.Surfaces, sp.Needs = HTTP, NeedTasks
	return define(e, &Op[In, Out]{spec: sp, call: call})
}

// MarkRunning is mark_running.
var MarkRunning = executorOp(cks.OpMarkRunning, Spec{
	Title:   "Mark running",
	Summary: "move a claimed task to RUNNING", Description: "Move a CLAIMED task to RUNNING under its lease.",
}, func(ctx context.Context, s *Services, in *cks.LeaseInput) (cks.Task, error) {
	return s.Tasks.MarkRunning(ctx, in.TaskID, in.LeaseToken)
})

// TouchTask is touch_task.
var TouchTask = executorOp(cks.OpTouchTask, Spec{
	Title:       "Renew lease",
	Summary:     "renew a lease; held false when it is lost",
	Description: "Renew the lease (the lease heartbeat). held is false, not an error, when the lease is lost: stop working on the task.",
}, func(ctx context.Context, s *Services, in *cks.LeaseInput) (cks.TouchResult, error) {
	held, err := s.Tasks.Touch(ctx, in.TaskID, in.LeaseToken)
	if errors.Is(err, cks.ErrLeaseLost) {
		err = nil // a lost lease is the answer held=false, not an error
	}
	return cks.TouchResult{Held: held}, err
})

// AddEvidence is add_evidence.
var AddEvidence = executorOp(cks.OpAddEvidence, Spec{
	Title: "Add evidence", Status: http.StatusCreated,
	Summary: "record evidence of the current attempt", Description: "Record evidence of the current attempt (201).",
}, func(ctx context.Context, s *Services, in *cks.AddEvidenceInput) (cks.Evidence, error) {
	return s.Tasks.AddEvidence(ctx, in.TaskID, in.LeaseToken, in.Kind, in.Body)
})

// RecordDecision is record_decision.
var RecordDecision = executorOp(cks.OpRecordDecision, Spec{
	Title: "Record decision", Status: http.StatusCreated,
	Summary:     "record a decision of the current attempt, with the revision it was derived from",
	Description: "Record a decision of the current attempt with the task revision it was derived from (201).",
}, func(ctx context.Context, s *Services, in *cks.RecordDecisionInput) (cks.Decision, error) {
	return s.Tasks.RecordDecision(ctx, in.TaskID, in.LeaseToken, in.Kind, in.Text, in.DerivedFromRevision)
})

// ReuseWorkspace is reuse_workspace.
var ReuseWorkspace = executorOp(cks.OpReuseWorkspace, Spec{
	Title: "Reuse workspace", Status: http.StatusCreated,
	Summary:     "continue in a workspace an earlier attempt left (an explicit decision)",
	Description: "Record the explicit decision to continue in a workspace left by an earlier attempt, and make it the current attempt's (201).",
}, func(ctx context.Context, s *Services, in *cks.ReuseWorkspaceInput) (cks.Decision, error) {
	return s.Tasks.ReuseWorkspace(ctx, in.TaskID, in.LeaseToken, in.Path, in.DerivedFromRevision)
})

// ConfirmAbort is confirm_abort.
var ConfirmAbort = executorOp(cks.OpConfirmAbort, Spec{
	Title:   "Confirm abort",
	Summary: "confirm, with the revoked lease token, that the aborted attempt stopped",
	Description: "The executor's confirmation that the work of its revoked lease has stopped; not_found when no abort " +
		"names that lease (it ended some other way).",
}, func(ctx context.Context, s *Services, in *cks.LeaseInput) (cks.Abort, error) {
	if in.LeaseToken == "" {
		return cks.Abort{}, &cks.FieldError{Field: "lease_token", Expected: "the revoked lease token of the aborted attempt"}
	}
	return s.Tasks.ConfirmAbort(ctx, in.TaskID, in.LeaseToken)
})

// CompleteTask is complete_task.
var CompleteTask = executorOp(cks.OpCompleteTask, Spec{
	Title:   "Complete task",
	Summary: "end an attempt successfully (or for review)", Description: "End the attempt: COMPLETED, or NEEDS_REVIEW with needs_review.",
}, func(ctx context.Context, s *Services, in *cks.CompleteTaskInput) (cks.Task, error) {
	return s.Tasks.Complete(ctx, in.TaskID, in.LeaseToken, in.NeedsReview, in.Result)
})

// FailTask is fail_task.
var FailTask = executorOp(cks.OpFailTask, Spec{
	Title:   "Fail task",
	Summary: "end an attempt unsuccessfully", Description: "End the attempt unsuccessfully: FAILED, or OPEN again when retryable and attempts remain.",
}, func(ctx context.Context, s *Services, in *cks.FailTaskInput) (cks.Task, error) {
	return s.Tasks.Fail(ctx, in.TaskID, in.LeaseToken, in.Retryable, in.Reason)
})

// RequestInput is request_input.
var RequestInput = executorOp(cks.OpRequestInput, Spec{
	Title:   "Request input",
	Summary: "park a task with a question for a person (NEEDS_INPUT)", Description: "Park the task in NEEDS_INPUT with a question; the attempt is given back.",
}, func(ctx context.Context, s *Services, in *cks.QuestionInput) (cks.Task, error) {
	return s.Tasks.RequestInput(ctx, in.TaskID, in.LeaseToken, in.Question)
})

// reviewOp declares a review call: update on the task.
func reviewOp[In, Out any](e cks.Endpoint[In, Out], sp Spec, call func(ctx context.Context, s *Services, in *In) (Out, error)) *Op[In, Out] {
	sp.Permission, sp.Resource = auth.PermUpdate, taskResource
	sp.Surfaces, sp.Needs = HTTP, NeedTasks
	return define(e, &Op[In, Out]{spec: sp, call: call})
}

// ClaimReview is claim_review.
var ClaimReview = reviewOp(cks.OpClaimReview, Spec{
	Title: "Claim review", Secret: true,
	Summary:     "lease a NEEDS_REVIEW task for review, with the review lease's token",
	Description: "Lease a NEEDS_REVIEW task for review (REVIEWING); the answer carries the review lease's token, as a claim does.",
}, func(ctx context.Context, s *Services, in *cks.ClaimReviewInput) (cks.ClaimedTask, error) {
	lease := leaseOf(in.LeaseS)
	reviewer := in.Reviewer
	if reviewer == "" {
		reviewer = actor(ctx)
	}
	return s.Tasks.ClaimReview(ctx, in.TaskID, reviewer, lease)
})

// ApproveReview is approve_review.
var ApproveReview = reviewOp(cks.OpApproveReview, Spec{
	Title:   "Approve review",
	Summary: "approve a reviewed task (COMPLETED)", Description: "Approve the reviewed task: COMPLETED.",
}, func(ctx context.Context, s *Services, in *cks.ReviewInput) (cks.Task, error) {
	return s.Tasks.Approve(ctx, in.TaskID, in.LeaseToken, in.Note)
})

// RejectReview is reject_review.
var RejectReview = reviewOp(cks.OpRejectReview, Spec{
	Title:   "Reject review",
	Summary: "reject a reviewed task (OPEN again)", Description: "Reject the reviewed task: OPEN again for another attempt.",
}, func(ctx context.Context, s *Services, in *cks.ReviewInput) (cks.Task, error) {
	return s.Tasks.Reject(ctx, in.TaskID, in.LeaseToken, in.Note)
})
