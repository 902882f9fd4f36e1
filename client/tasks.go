package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
)

// CreateTask enqueues a task. created is false when its dedupe key matched a
// live task, which is returned instead.
func (c *Client) CreateTask(ctx context.Context, n store.NewTask) (store.Task, bool, error) {
	var out api.CreatedTask
	err := c.do(ctx, http.MethodPost, "/v1/tasks", n, &out)
	return out.Task, out.Created, err
}

// ListTasks returns one page of tasks.
func (c *Client) ListTasks(ctx context.Context, f store.TaskFilter) (store.TaskPage, error) {
	q := url.Values{}
	for _, s := range f.States {
		q.Add("state", string(s))
	}
	for _, t := range f.Types {
		q.Add("type", t)
	}
	if f.After > 0 {
		q.Set("cursor", strconv.FormatInt(f.After, 10))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var page store.TaskPage
	path := "/v1/tasks"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	err := c.do(ctx, http.MethodGet, path, nil, &page)
	return page, err
}

// GetTask returns a task with its events and evidence.
func (c *Client) GetTask(ctx context.Context, id int64) (store.Task, error) {
	var t store.Task
	err := c.do(ctx, http.MethodGet, taskPath(id, ""), nil, &t)
	return t, err
}

func taskPath(id int64, action string) string {
	p := "/v1/tasks/" + strconv.FormatInt(id, 10)
	if action != "" {
		p += "/" + action
	}
	return p
}

func (c *Client) taskPost(ctx context.Context, id int64, action string, in any) (store.Task, error) {
	var t store.Task
	err := c.do(ctx, http.MethodPost, taskPath(id, action), in, &t)
	return t, err
}

// AnswerTask answers a NEEDS_INPUT task's question, returning it to OPEN.
func (c *Client) AnswerTask(ctx context.Context, id int64, text string) (store.Task, error) {
	return c.taskPost(ctx, id, "answer", api.AnswerRequest{Text: text})
}

// CancelTask cancels a task (terminal).
func (c *Client) CancelTask(ctx context.Context, id int64, reason string) (store.Task, error) {
	return c.taskPost(ctx, id, "cancel", api.CancelRequest{Reason: reason})
}

// Claim leases up to n OPEN tasks of the given types to worker. Each comes
// with its lease token, which the hub shows only in this answer.
func (c *Client) Claim(ctx context.Context, worker string, types []string, n int, lease time.Duration) ([]store.ClaimedTask, error) {
	var out api.ClaimedTasks
	err := c.do(ctx, http.MethodPost, "/v1/tasks/claim",
		api.ClaimRequest{Worker: worker, Types: types, N: n, LeaseS: lease.Seconds()}, &out)
	return out.Tasks, err
}

// MarkRunning moves a claimed task to RUNNING.
func (c *Client) MarkRunning(ctx context.Context, id int64, leaseToken string) (store.Task, error) {
	return c.taskPost(ctx, id, "running", api.LeaseRequest{LeaseToken: leaseToken})
}

// Touch renews a lease and reports whether it is still held.
func (c *Client) Touch(ctx context.Context, id int64, leaseToken string) (bool, error) {
	var out api.TouchResult
	err := c.do(ctx, http.MethodPost, taskPath(id, "touch"), api.LeaseRequest{LeaseToken: leaseToken}, &out)
	return out.Held, err
}

// AddEvidence records evidence for the current attempt.
func (c *Client) AddEvidence(ctx context.Context, id int64, leaseToken, kind, body string) (store.Evidence, error) {
	var ev store.Evidence
	err := c.do(ctx, http.MethodPost, taskPath(id, "evidence"),
		api.EvidenceRequest{LeaseToken: leaseToken, Kind: kind, Body: body}, &ev)
	return ev, err
}

// Complete ends an attempt successfully (or for review).
func (c *Client) Complete(ctx context.Context, id int64, leaseToken string, needsReview bool, result string) (store.Task, error) {
	return c.taskPost(ctx, id, "complete", api.CompleteRequest{LeaseToken: leaseToken, NeedsReview: needsReview, Result: result})
}

// Fail ends an attempt unsuccessfully.
func (c *Client) Fail(ctx context.Context, id int64, leaseToken string, retryable bool, reason string) (store.Task, error) {
	return c.taskPost(ctx, id, "fail", api.FailRequest{LeaseToken: leaseToken, Retryable: retryable, Reason: reason})
}

// RequestInput parks a task with a question for a person.
func (c *Client) RequestInput(ctx context.Context, id int64, leaseToken, question string) (store.Task, error) {
	return c.taskPost(ctx, id, "request-input", api.InputRequest{LeaseToken: leaseToken, Question: question})
}

// IsLeaseLost reports whether err is the hub's answer to a call with a revoked lease.
func IsLeaseLost(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == "lease_lost"
}

// StopRequest is what StopTask sends. The zero value of Deadline is the
// hub's default (store.DefaultAbortDeadline) and the zero value of NoWait
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
	Patch    store.TaskPatch
	Deadline time.Duration
	NoWait   bool
}

// wire returns the deadline and wait fields of a stop or update body.
func wire(deadline time.Duration, noWait bool) (string, *bool) {
	var d string
	if deadline != 0 {
		d = deadline.String()
	}
	var w *bool
	if noWait {
		w = new(bool)
	}
	return d, w
}

// waitOf is how long the hub may hold a stop or update open.
func waitOf(deadline time.Duration, noWait bool) time.Duration {
	switch {
	case noWait:
		return 0
	case deadline <= 0:
		return store.DefaultAbortDeadline
	}
	return deadline
}

// StopTask holds a task in STOPPED (ADR 0020). For a CLAIMED or RUNNING task
// the result's Abort is the abort request of its executor: confirmed or
// unconfirmed once waited for, abort_pending with NoWait.
func (c *Client) StopTask(ctx context.Context, id int64, req StopRequest) (ledger.StopResult, error) {
	var out ledger.StopResult
	body := api.StopRequest{Reason: req.Reason}
	body.Deadline, body.Wait = wire(req.Deadline, req.NoWait)
	err := c.doLong(ctx, waitOf(req.Deadline, req.NoWait), http.MethodPost, taskPath(id, "stop"), body, &out)
	return out, err
}

// StartTask releases a STOPPED task to OPEN (or WAITING/BLOCKED when its
// dependencies say so).
func (c *Client) StartTask(ctx context.Context, id int64, reason string) (store.Task, error) {
	return c.taskPost(ctx, id, "start", api.StartRequest{Reason: reason})
}

// UpdateTask applies a patch as one operation; the result says which path
// was taken (in_place, live or stop_apply_start) and the abort outcome.
func (c *Client) UpdateTask(ctx context.Context, id int64, req UpdateRequest) (store.UpdateResult, error) {
	var out store.UpdateResult
	body := api.UpdateRequest{TaskPatch: req.Patch}
	body.Deadline, body.Wait = wire(req.Deadline, req.NoWait)
	err := c.doLong(ctx, waitOf(req.Deadline, req.NoWait), http.MethodPatch, taskPath(id, ""), body, &out)
	return out, err
}

// RecordDecision records an executor's decision for the current attempt,
// with the task revision it was derived from.
func (c *Client) RecordDecision(ctx context.Context, id int64, leaseToken, kind, text string, derivedFromRevision int) (store.Decision, error) {
	var d store.Decision
	err := c.do(ctx, http.MethodPost, taskPath(id, "decisions"), api.DecisionRequest{LeaseToken: leaseToken, Kind: kind,
		Text: text, DerivedFromRevision: derivedFromRevision}, &d)
	return d, err
}

// ReuseWorkspace records the explicit decision to continue in a workspace
// left by an earlier attempt of the task.
func (c *Client) ReuseWorkspace(ctx context.Context, id int64, leaseToken, path string, derivedFromRevision int) (store.Decision, error) {
	var d store.Decision
	err := c.do(ctx, http.MethodPost, taskPath(id, "workspace/reuse"), api.ReuseWorkspaceRequest{LeaseToken: leaseToken,
		Path: path, DerivedFromRevision: derivedFromRevision}, &d)
	return d, err
}

// ConfirmAbort confirms, with the revoked lease token, that the aborted
// attempt's work has stopped. A 404 means no abort names that lease.
func (c *Client) ConfirmAbort(ctx context.Context, id int64, leaseToken string) (store.Abort, error) {
	var a store.Abort
	err := c.do(ctx, http.MethodPost, taskPath(id, "abort/confirm"), api.LeaseRequest{LeaseToken: leaseToken}, &a)
	return a, err
}
