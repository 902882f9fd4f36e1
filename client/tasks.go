package client

import (
	"context"
	"errors"
	"time"

	"github.com/cks-dev/cks"
)

// CreateTask enqueues a task. created is false when its dedupe key matched a
// live task, which is returned instead.
func (c *Client) CreateTask(ctx context.Context, n cks.NewTask) (cks.Task, bool, error) {
	out, err := Do(ctx, c, cks.OpCreateTask, n)
	return out.Task, out.Created, err
}

// ListTasks returns one page of tasks (f's states, types, cursor and limit).
func (c *Client) ListTasks(ctx context.Context, f cks.TaskFilter) (cks.TaskPage, error) {
	return Do(ctx, c, cks.OpListTasks, cks.ListTasksInputOf(f))
}

// CountTasks counts the tasks in's filter selects, per state (count_tasks).
func (c *Client) CountTasks(ctx context.Context, in cks.CountTasksInput) (cks.TaskCounts, error) {
	return Do(ctx, c, cks.OpCountTasks, in)
}

// TaskStats reads the ledger's throughput, queue depth and claim latency
// per minute (task_stats).
func (c *Client) TaskStats(ctx context.Context, in cks.TaskStatsInput) (cks.TaskStats, error) {
	return Do(ctx, c, cks.OpTaskStats, in)
}

// UnclaimedTypes is list_unclaimed_types: the task types no worker claims.
func (c *Client) UnclaimedTypes(ctx context.Context, in cks.UnclaimedTypesInput) (cks.UnclaimedTypes, error) {
	return Do(ctx, c, cks.OpListUnclaimedTypes, in)
}

// GetTask returns a task with its events and evidence.
func (c *Client) GetTask(ctx context.Context, id int64) (cks.Task, error) {
	return Do(ctx, c, cks.OpGetTask, cks.TaskInput{TaskID: id})
}

// AnswerTask answers a NEEDS_INPUT task's question, returning it to OPEN.
func (c *Client) AnswerTask(ctx context.Context, id int64, text string) (cks.Task, error) {
	return Do(ctx, c, cks.OpAnswerTask, cks.AnswerTaskInput{TaskID: id, Text: text})
}

// CancelTask cancels a task (terminal).
func (c *Client) CancelTask(ctx context.Context, id int64, reason string) (cks.Task, error) {
	return Do(ctx, c, cks.OpCancelTask, cks.TaskReasonInput{TaskID: id, Reason: reason})
}

// Claim leases up to n OPEN tasks of the given types to worker. Each comes
// with its lease token, which the hub shows only in this answer.
func (c *Client) Claim(ctx context.Context, worker string, types []string, n int, lease time.Duration) ([]cks.ClaimedTask, error) {
	out, err := c.ClaimWithTokens(ctx, worker, types, n, lease)
	return out.Tasks, err
}

// ClaimWithTokens is Claim returning the whole answer: the leased tasks and,
// per task id, the task-scoped agent credential to work it with.
func (c *Client) ClaimWithTokens(ctx context.Context, worker string, types []string, n int, lease time.Duration) (cks.ClaimedTasks, error) {
	return Do(ctx, c, cks.OpClaimTasks, cks.ClaimTasksInput{Worker: worker, Types: types, N: n, LeaseS: lease.Seconds()})
}

// ClaimWith is claim_tasks with its whole input: in.Running claims each
// task straight into RUNNING, for an executor that starts at once and so
// skips MarkRunning (worker.Executor does for a RUNNING task).
func (c *Client) ClaimWith(ctx context.Context, in cks.ClaimTasksInput) (cks.ClaimedTasks, error) {
	return Do(ctx, c, cks.OpClaimTasks, in)
}

// MarkRunning moves a claimed task to RUNNING.
func (c *Client) MarkRunning(ctx context.Context, id int64, leaseToken string) (cks.Task, error) {
	return Do(ctx, c, cks.OpMarkRunning, lease(id, leaseToken))
}

// Touch renews a lease and reports whether it is still held.
func (c *Client) Touch(ctx context.Context, id int64, leaseToken string) (bool, error) {
	out, err := c.Heartbeat(ctx, id, leaseToken)
	return out.Held, err
}

// Heartbeat is Touch with touch_task's whole answer: whether the lease is
// still held and, when it is not, whether an operator's abort names it (a
// stop or update waits for ConfirmAbort). A lost lease is an answer, not an
// error, as the ledger's Heartbeat answers it.
func (c *Client) Heartbeat(ctx context.Context, id int64, leaseToken string) (cks.TouchResult, error) {
	return Do(ctx, c, cks.OpTouchTask, lease(id, leaseToken))
}

// LeaseHeld reports whether the lease is still held. The API has no read
// of a lease alone, so it asks by a heartbeat, which renews the lease when
// it is. With it and Heartbeat a Client is the store of an executor that
// runs claimed tasks over HTTP (the worker package's Store).
func (c *Client) LeaseHeld(ctx context.Context, id int64, leaseToken string) (bool, error) {
	return c.Touch(ctx, id, leaseToken)
}

// AddEvidence records evidence for the current attempt.
func (c *Client) AddEvidence(ctx context.Context, id int64, leaseToken, kind, body string) (cks.Evidence, error) {
	return Do(ctx, c, cks.OpAddEvidence, cks.AddEvidenceInput{LeaseInput: lease(id, leaseToken), Kind: kind, Body: body})
}

// Complete ends an attempt successfully (or for review).
func (c *Client) Complete(ctx context.Context, id int64, leaseToken string, needsReview bool, result string) (cks.Task, error) {
	return Do(ctx, c, cks.OpCompleteTask, cks.CompleteTaskInput{LeaseInput: lease(id, leaseToken), NeedsReview: needsReview, Result: result})
}

// Fail ends an attempt unsuccessfully.
func (c *Client) Fail(ctx context.Context, id int64, leaseToken string, retryable bool, reason string) (cks.Task, error) {
	return Do(ctx, c, cks.OpFailTask, cks.FailTaskInput{LeaseInput: lease(id, leaseToken), Retryable: retryable, Reason: reason})
}

// RequestInput parks a task with a question for a person.
func (c *Client) RequestInput(ctx context.Context, id int64, leaseToken, question string) (cks.Task, error) {
	return Do(ctx, c, cks.OpRequestInput, cks.QuestionInput{LeaseInput: lease(id, leaseToken), Question: question})
}

// lease names task id's lease leaseToken.
func lease(id int64, leaseToken string) cks.LeaseInput {
	return cks.LeaseInput{TaskID: id, LeaseToken: leaseToken}
}

// IsLeaseLost reports whether err is the hub's answer to a call with a revoked lease.
func IsLeaseLost(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == "lease_lost"
}

// StopRequest is what StopTask sends. The zero value of Deadline is the
// hub's default (cks.DefaultAbortDeadline) and the zero value of NoWait
// waits for the executor's confirmation, as the API does.
type StopRequest struct {
	// Reason is required: why the task is held.
	Reason string
	// Deadline bounds the wait for the executor of a CLAIMED or RUNNING
	// task to confirm its abort (0: the default, 30 s).
	Deadline time.Duration
	// NoWait answers at once, with the abort abort_pending.
	NoWait bool
}

// UpdateRequest is what UpdateTask sends: the patch, and the deadline and
// wait (as in StopRequest) of a running task's stop → apply → start.
type UpdateRequest struct {
	Patch    cks.TaskPatch
	Deadline time.Duration
	NoWait   bool
}

// abortWait is the deadline and wait of a stop or update, as sent.
func abortWait(deadline time.Duration, noWait bool) cks.AbortWait {
	var w cks.AbortWait
	if deadline != 0 {
		w.Deadline = cks.Duration(deadline.String())
	}
	if noWait {
		w.Wait = new(false)
	}
	return w
}

// StopTask holds a task in STOPPED (ADR 0020). For a CLAIMED or RUNNING task
// the result's Abort is the abort request of its executor: confirmed or
// unconfirmed once waited for, abort_pending with NoWait.
func (c *Client) StopTask(ctx context.Context, id int64, req StopRequest) (cks.TaskStopResult, error) {
	return Do(ctx, c, cks.OpStopTask, cks.StopTaskInput{TaskID: id, Reason: req.Reason, AbortWait: abortWait(req.Deadline, req.NoWait)})
}

// StartTask releases a STOPPED task to OPEN (or WAITING/BLOCKED when its
// dependencies say so).
func (c *Client) StartTask(ctx context.Context, id int64, reason string) (cks.Task, error) {
	return Do(ctx, c, cks.OpStartTask, cks.TaskReasonInput{TaskID: id, Reason: reason})
}

// RetryTask opens a FAILED or CANCELLED task again with a fresh attempt
// budget (OPEN, or WAITING/BLOCKED by its dependencies).
func (c *Client) RetryTask(ctx context.Context, id int64, reason string) (cks.Task, error) {
	return Do(ctx, c, cks.OpRetryTask, cks.TaskReasonInput{TaskID: id, Reason: reason})
}

// UpdateTask applies a patch as one operation; the result says which path
// was taken (in_place, live or stop_apply_start) and the abort outcome.
func (c *Client) UpdateTask(ctx context.Context, id int64, req UpdateRequest) (cks.UpdateResult, error) {
	return Do(ctx, c, cks.OpUpdateTask, cks.UpdateTaskInput{TaskID: id, TaskPatch: req.Patch, AbortWait: abortWait(req.Deadline, req.NoWait)})
}

// RecordDecision records an executor's decision for the current attempt,
// with the task revision it was derived from.
func (c *Client) RecordDecision(ctx context.Context, id int64, leaseToken, kind, text string, derivedFromRevision int) (cks.Decision, error) {
	return Do(ctx, c, cks.OpRecordDecision, cks.RecordDecisionInput{LeaseInput: lease(id, leaseToken), Kind: kind,
		Text: text, DerivedFromRevision: derivedFromRevision})
}

// ReportUsage records what one call of the attempt spent (report_usage),
// fenced by leaseToken; see docs/spend.md.
func (c *Client) ReportUsage(ctx context.Context, id int64, leaseToken string, u cks.UsageInput) (cks.UsageReport, error) {
	in := cks.ReportUsageInput{LeaseInput: lease(id, leaseToken), Model: u.Model, InputTokens: u.InputTokens,
		OutputTokens: u.OutputTokens}
	if u.Cost != 0 {
		in.Cost = u.Cost.String()
	}
	return Do(ctx, c, cks.OpReportUsage, in)
}

// Usage sums what agents reported spending (get_usage).
func (c *Client) Usage(ctx context.Context, in cks.GetUsageInput) (cks.UsageSummary, error) {
	return Do(ctx, c, cks.OpGetUsage, in)
}

// ReuseWorkspace records the explicit decision to continue in a workspace
// left by an earlier attempt of the task.
func (c *Client) ReuseWorkspace(ctx context.Context, id int64, leaseToken, path string, derivedFromRevision int) (cks.Decision, error) {
	return Do(ctx, c, cks.OpReuseWorkspace, cks.ReuseWorkspaceInput{LeaseInput: lease(id, leaseToken),
		Path: path, DerivedFromRevision: derivedFromRevision})
}

// ConfirmAbort confirms, with the revoked lease token, that the aborted
// attempt's work has stopped. A 404 means no abort names that lease.
func (c *Client) ConfirmAbort(ctx context.Context, id int64, leaseToken string) (cks.Abort, error) {
	return Do(ctx, c, cks.OpConfirmAbort, lease(id, leaseToken))
}
