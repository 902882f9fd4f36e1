package ops

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// The executor operations: agents in any language work the ledger over
// HTTP. A claim (and a review claim) hands back a fresh lease token per task,
// and every other call of that lease carries it; a call with any other token
// is lease_lost and changes nothing. A claim also hands back a task-scoped
// agent credential per task (read, append, create on /tasks/ID) bound to the
// lease, which can report on its task but never stop, start, update, cancel
// or review it. Claim and review claim are Secret: their answers are the only
// ones that carry lease tokens.

// WorkerProtocol is how an agent works a task, told once in full (claim_tasks'
// description and the MCP server's instructions); each other executor call
// says its step.
const WorkerProtocol = "The worker protocol, in order: " +
	"(1) claim_tasks (types, lease_s) leases tasks, each with its revision and a lease_token shown in that answer only; " +
	"(2) mark_running, before the work starts (or claim with running true, which claims straight into RUNNING: then skip it); " +
	"(3) while working: touch_task at least every third of the lease (held false: the lease is gone, stop working; with " +
	"abort_requested also call confirm_abort), add_evidence, and record_decision with derived_from_revision set to the " +
	"claimed task's revision; " +
	"(4) end the attempt with exactly one of complete_task, fail_task or request_input. " +
	"Every call after the claim carries task_id and lease_token; one whose lease is no longer held (stopped, cancelled, " +
	"finished, or expired: lease_s passed since the claim or the last touch_task, by the hub's clock) is a lease_lost " +
	"error and changes nothing, and an expired lease's task may be claimed by the next claim at once. A stopped task that is started again is claimed afresh, " +
	"with a new lease and its new revision: re-derive everything from the task as that claim returns it."

// leaseOf reads lease_s: 0 (omitted) is the ledger's default lease
// (ledger.Settings.DefaultLease, the hub's CKS_STALE_WINDOW). The bound is
// the ledger's (a claim's validation, naming lease_s): a number of seconds past it
// (or not a number) is given as -1, which the ledger refuses, rather than
// converted past what a Duration holds.
func leaseOf(seconds float64) time.Duration {
	switch {
	case seconds == 0:
		return 0
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
		Description: "Lease up to n OPEN tasks of the given types (any type when none), highest priority first, to worker " +
			"(default the caller's name), for lease_s seconds (default the hub's default lease, CKS_STALE_WINDOW: 300 unless set); " +
			"the lease is exactly that long unless touch_task renews it. Each comes with its revision and a fresh lease_token, " +
			"shown in this answer only: keep it, every later call of the attempt needs it. agent_tokens holds a task-scoped " +
			"credential per task (read, append and create on /tasks/ID, bound to the lease) for whatever the executor runs " +
			"to work that task with. running true claims each task straight into RUNNING (its start recorded at the claim), as " +
			"mark_running right after the claim would: for an executor that starts at once, one call less. No OPEN task: tasks " +
			"is empty, at once, or with wait_s (up to 60) the call is held until a task of the types becomes claimable and " +
			"then claims it (a long poll: an idle worker waits without polling, and hears of new work at once), empty when " +
			"wait_s passes. instance_id names the process the claim is for, one this caller reports (report_process): once that " +
			"process is asked to stop, the claim takes nothing and a waiting claim ends at once, with stop_requested true. " +
			"Needs append on /tasks. " + WorkerProtocol,
		Permission: auth.PermAppend, Resource: auth.ResourceTasks, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks | NeedPrincipals,
		Secret: true, Hints: leaseCall,
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
		stopped := cks.ClaimedTasks{Tasks: []cks.ClaimedTask{}, AgentTokens: map[string]string{}, StopRequested: true}
		stop, err := processStop(ctx, s, in)
		if err != nil {
			return cks.ClaimedTasks{}, err
		}
		if stop.requested() {
			return stopped, nil
		}
		defer stop.end()
		toks := map[string]string{}
		ts, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: worker, Types: in.Types, N: n, Lease: lease, Running: in.Running,
			Wait: in.MaxWait(), Interrupt: stop.asked,
			AgentToken: func(id int64, secret string) { toks[strconv.FormatInt(id, 10)] = auth.TaskToken(id, secret) }})
		if err != nil {
			return cks.ClaimedTasks{}, err
		}
		if len(ts) == 0 && stop.requested() {
			return stopped, nil
		}
		if ts == nil {
			ts = []cks.ClaimedTask{}
		}
		return cks.ClaimedTasks{Tasks: ts, AgentTokens: toks}, nil
	},
})

// claimStop is what a claim for a process (claim_tasks' instance_id) knows
// of that process's stop request: asked closes once it is made.
type claimStop struct {
	asked chan struct{}
	once  sync.Once
	// end stops the watch and waits for it (a no-op without one).
	end func()
}

func (c *claimStop) requested() bool {
	select {
	case <-c.asked:
		return true
	default:
		return false
	}
}

func (c *claimStop) ask() { c.once.Do(func() { close(c.asked) }) }

// processStop reads whether the process a claim is for was asked to stop
// (liveness.Service.StopRequested, for the caller as its reporter) and,
// for a claim that may wait, watches for the request (cks.TopicAgentStop,
// the row read again at each) until end. A claim for no process knows of
// no stop.
func processStop(ctx context.Context, s *Services, in *cks.ClaimTasksInput) (*claimStop, error) {
	c := &claimStop{asked: make(chan struct{}), end: func() {}}
	if in.InstanceID == "" || s.Liveness == nil {
		return c, nil
	}
	reporter := reporterOf(ctx)
	asked, err := s.Liveness.StopRequested(ctx, reporter, in.InstanceID)
	if err != nil || asked {
		if asked {
			c.ask()
		}
		return c, err
	}
	if in.MaxWait() == 0 || s.Changes == nil {
		return c, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The first call comes once the watch is up: a request made since
		// the read above is heard there.
		_ = s.Changes.WatchChanges(wctx, []string{cks.TopicAgentStop}, func(string) {
			if asked, err := s.Liveness.StopRequested(wctx, reporter, in.InstanceID); err == nil && asked {
				c.ask()
			}
		})
	}()
	c.end = func() { cancel(); <-done }
	return c, nil
}

// leaseCall are the hints of a call under a lease: it changes the task
// (never destructively: it records, or moves the attempt on), and a
// repeat is another change (a second claim, another evidence row) or is
// refused (a move the first call made); leaseRepeat those of one whose
// repeat is answered as the first (a renewal, the second confirmation).
var (
	leaseCall   = Hints{Destructive: new(false), OpenWorld: new(false)}
	leaseRepeat = Hints{Idempotent: true, Destructive: new(false), OpenWorld: new(false)}
)

// executorOp declares an executor call on one task: append on the task,
// over HTTP and MCP.
func executorOp[In, Out any](e cks.Endpoint[In, Out], sp Spec, call func(ctx context.Context, s *Services, in *In) (Out, error)) *Op[In, Out] {
	sp.Permission, sp.Resource = auth.PermAppend, taskResource
	sp.Surfaces, sp.Needs = HTTP|MCP, NeedTasks
	return define(e, &Op[In, Out]{spec: sp, call: call})
}

// MarkRunning is mark_running.
var MarkRunning = executorOp(cks.OpMarkRunning, Spec{
	Title:   "Mark running",
	Summary: "move a claimed task to RUNNING", Hints: leaseCall,
	Description: "Step 2 of the worker protocol (claim_tasks describes it): move the CLAIMED task to RUNNING under its lease, " +
		"once, before the work starts; not needed after a claim with running true (the task is RUNNING already).",
}, func(ctx context.Context, s *Services, in *cks.LeaseInput) (cks.Task, error) {
	return s.Tasks.MarkRunning(ctx, in.TaskID, in.LeaseToken)
})

// TouchTask is touch_task.
var TouchTask = executorOp(cks.OpTouchTask, Spec{
	Title:   "Renew lease",
	Summary: "renew a lease (the heartbeat); held false when it is lost, with abort_requested after a stop",
	Hints:   leaseRepeat,
	Description: "Step 3 of the worker protocol (claim_tasks describes it): renew the lease for its length again (the heartbeat); " +
		"call it at least every third of the lease while working: a lease that ran out is not renewed, it is lost. " +
		"held false (an answer, not an error): the lease is lost, " +
		"stop working on the task and write nothing more; abort_requested true with it: an operator stopped the attempt " +
		"and waits for confirm_abort with this lease token.",
}, func(ctx context.Context, s *Services, in *cks.LeaseInput) (cks.TouchResult, error) {
	return s.Tasks.Heartbeat(ctx, in.TaskID, in.LeaseToken)
})

// AddEvidence is add_evidence.
var AddEvidence = executorOp(cks.OpAddEvidence, Spec{
	Title: "Add evidence", Status: http.StatusCreated, Hints: leaseCall,
	Summary: "record evidence of the current attempt",
	Description: "Step 3 of the worker protocol (claim_tasks describes it): record evidence of the current attempt (what was " +
		"found, run or produced; kind workspace names the attempt's workspace path), under its lease (201).",
}, func(ctx context.Context, s *Services, in *cks.AddEvidenceInput) (cks.Evidence, error) {
	return s.Tasks.AddEvidence(ctx, in.TaskID, in.LeaseToken, in.Kind, in.Body)
})

// AppendOutput is append_output.
var AppendOutput = executorOp(cks.OpAppendOutput, Spec{
	Title: "Append output", Status: http.StatusCreated, Hints: leaseCall,
	Summary: "append a chunk of live output to the current attempt (at most 64 KiB of text)",
	Description: "Step 3 of the worker protocol, optional: append a chunk of what the attempt prints (text up to 65536 bytes, " +
		"stream a label such as stdout or stderr) under its lease (201), answering its seq. Each attempt keeps the newest 4 MiB: " +
		"past that its oldest chunks are deleted and a note says how many bytes are gone. Anyone who may read the task reads " +
		"the output with get_output or follows it (GET /v1/tasks/{task_id}/output?follow=1, the resource cks://tasks/{task_id}/output).",
}, func(ctx context.Context, s *Services, in *cks.AppendOutputInput) (cks.OutputAppended, error) {
	return s.Tasks.AppendOutput(ctx, in.TaskID, in.LeaseToken, in.Stream, in.Text)
})

// RecordDecision is record_decision.
var RecordDecision = executorOp(cks.OpRecordDecision, Spec{
	Title: "Record decision", Status: http.StatusCreated, Hints: leaseCall,
	Summary: "record a decision of the current attempt, with the revision it was derived from",
	Description: "Step 3 of the worker protocol (claim_tasks describes it): record a decision of the current attempt with " +
		"derived_from_revision, the revision of the task as the claim returned it, so a decision made on an older text " +
		"of the task shows as such (201). A revision the task never had is an invalid_argument error naming derived_from_revision.",
}, func(ctx context.Context, s *Services, in *cks.RecordDecisionInput) (cks.Decision, error) {
	return s.Tasks.RecordDecision(ctx, in.TaskID, in.LeaseToken, in.Kind, in.Text, in.DerivedFromRevision)
})

// ReuseWorkspace is reuse_workspace.
var ReuseWorkspace = executorOp(cks.OpReuseWorkspace, Spec{
	Title: "Reuse workspace", Status: http.StatusCreated, Hints: leaseCall,
	Summary: "continue in a workspace an earlier attempt left (an explicit decision)",
	Description: "Step 3 of the worker protocol, optional: record the explicit decision to continue in a workspace left by an " +
		"earlier attempt (get_task lists them under history), and make it the current attempt's (201); without it the " +
		"attempt starts with none.",
}, func(ctx context.Context, s *Services, in *cks.ReuseWorkspaceInput) (cks.Decision, error) {
	return s.Tasks.ReuseWorkspace(ctx, in.TaskID, in.LeaseToken, in.Path, in.DerivedFromRevision)
})

// ConfirmAbort is confirm_abort.
var ConfirmAbort = executorOp(cks.OpConfirmAbort, Spec{
	Title:   "Confirm abort",
	Summary: "confirm, with the revoked lease token, that the aborted attempt stopped", Hints: leaseRepeat,
	Description: "The worker protocol's answer to an abort (touch_task said abort_requested): confirm, with the revoked lease " +
		"token, that the work of that attempt has stopped, so the operator's stop_task or update_task knows " +
		"(abort_confirmed). not_found when no abort names that lease (it ended some other way: nothing to confirm); a " +
		"second confirmation changes nothing.",
}, func(ctx context.Context, s *Services, in *cks.LeaseInput) (cks.Abort, error) {
	return s.Tasks.ConfirmAbort(ctx, in.TaskID, in.LeaseToken)
})

// CompleteTask is complete_task.
var CompleteTask = executorOp(cks.OpCompleteTask, Spec{
	Title:   "Complete task",
	Summary: "end an attempt successfully (or for review)", Hints: leaseCall,
	Description: "Step 4 of the worker protocol (claim_tasks describes it): end the attempt with its result: COMPLETED, or " +
		"NEEDS_REVIEW with needs_review. The lease ends with it; a lease that is no longer held (the task was stopped, or " +
		"the lease ran out unrenewed) is a lease_lost error and completes nothing.",
}, func(ctx context.Context, s *Services, in *cks.CompleteTaskInput) (cks.Task, error) {
	return s.Tasks.Complete(ctx, in.TaskID, in.LeaseToken, in.NeedsReview, in.Result)
})

// FailTask is fail_task.
var FailTask = executorOp(cks.OpFailTask, Spec{
	Title:   "Fail task",
	Summary: "end an attempt unsuccessfully", Hints: leaseCall,
	Description: "Step 4 of the worker protocol (claim_tasks describes it): end the attempt unsuccessfully with its reason: " +
		"FAILED, or with retryable OPEN again after a backoff while attempts remain.",
}, func(ctx context.Context, s *Services, in *cks.FailTaskInput) (cks.Task, error) {
	return s.Tasks.Fail(ctx, in.TaskID, in.LeaseToken, in.Retryable, in.Reason)
})

// RequestInput is request_input.
var RequestInput = executorOp(cks.OpRequestInput, Spec{
	Title:   "Request input",
	Summary: "park a task with a question for a person (NEEDS_INPUT)", Hints: leaseCall,
	Description: "Step 4 of the worker protocol (claim_tasks describes it): park the task in NEEDS_INPUT with a question for a " +
		"person; the attempt is given back and the lease ends. Once answer_task answers it the task is OPEN again, to be " +
		"claimed afresh with the answer.",
}, func(ctx context.Context, s *Services, in *cks.QuestionInput) (cks.Task, error) {
	return s.Tasks.RequestInput(ctx, in.TaskID, in.LeaseToken, in.Question)
})

// reviewOp declares a review call: update on the task, over HTTP and MCP.
func reviewOp[In, Out any](e cks.Endpoint[In, Out], sp Spec, call func(ctx context.Context, s *Services, in *In) (Out, error)) *Op[In, Out] {
	sp.Permission, sp.Resource = auth.PermUpdate, taskResource
	sp.Surfaces, sp.Needs = HTTP|MCP, NeedTasks
	return define(e, &Op[In, Out]{spec: sp, call: call})
}

// ClaimReview is claim_review.
var ClaimReview = reviewOp(cks.OpClaimReview, Spec{
	Title: "Claim review", Secret: true, Hints: leaseCall,
	Summary: "lease a NEEDS_REVIEW task for review, with the review lease's token",
	Description: "Lease a NEEDS_REVIEW task for review (REVIEWING) for lease_s seconds (default the hub's default lease, " +
		"CKS_STALE_WINDOW: 300 unless set; a review lease that ran out unrenewed is lost, and the next review claim takes it); the answer carries the review " +
		"lease's token, shown in this answer only, as a claim does. End the review with approve_review or reject_review " +
		"under that token.",
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
	Summary: "approve a reviewed task (COMPLETED)", Hints: leaseCall,
	Description: "Approve the task under review (claim_review's lease token): COMPLETED.",
}, func(ctx context.Context, s *Services, in *cks.ReviewInput) (cks.Task, error) {
	return s.Tasks.Approve(ctx, in.TaskID, in.LeaseToken, in.Note)
})

// RejectReview is reject_review.
var RejectReview = reviewOp(cks.OpRejectReview, Spec{
	Title:   "Reject review",
	Summary: "reject a reviewed task (OPEN again)", Hints: leaseCall,
	Description: "Reject the task under review (claim_review's lease token), with a note: OPEN again for another attempt.",
}, func(ctx context.Context, s *Services, in *cks.ReviewInput) (cks.Task, error) {
	return s.Tasks.Reject(ctx, in.TaskID, in.LeaseToken, in.Note)
})
