package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
)

// maxBody bounds every JSON request body.
const maxBody = 1 << 20

// DefaultLease is the lease given to a claim that does not ask for one.
const DefaultLease = 5 * time.Minute

// routeTasks registers the task endpoints. Operator calls: list and show need
// read, create needs create (on /tasks, or /tasks/P for a child of P),
// answer and PATCH (update) need update (answering is an operator edit),
// stop needs stop, start needs start and cancel needs cancel: four separate
// permissions (ADR 0020), so holding stop does not grant start. Executor
// calls: claim needs append on /tasks (it may lease any task); running,
// touch, evidence, decisions, workspace/reuse, abort/confirm, complete, fail
// and request-input need append on the task; review claim, approve and reject
// need update on it. A claim hands back a task-scoped agent credential per
// task (read, append, create on /tasks/ID), which can therefore report on its
// task but never stop, start, update, cancel or review it, and which is bound
// to the claim's lease: it stops authenticating when the lease ends. Lease
// tokens appear in the answers of claim and review claim only.
func (a *API) routeTasks() {
	h := func(pattern, perm, res string, f http.HandlerFunc) { a.route(pattern, perm, res, f) }
	const task = "/tasks/{id}"
	a.addRoute(Route{Pattern: "POST /v1/tasks", Permission: auth.PermCreate, Resource: auth.ResourceTasks,
		handler: http.HandlerFunc(a.createTask), resourceOf: createResource})
	h("GET /v1/tasks", auth.PermRead, auth.ResourceTasks, a.listTasks)
	h("GET /v1/tasks/{id}", auth.PermRead, task, a.getTask)
	h("POST /v1/tasks/{id}/answer", auth.PermUpdate, task, a.answerTask)
	h("POST /v1/tasks/{id}/cancel", auth.PermCancel, task, a.cancelTask)
	h("POST /v1/tasks/{id}/stop", auth.PermStop, task, a.stopTask)
	h("POST /v1/tasks/{id}/start", auth.PermStart, task, a.startTask)
	h("PATCH /v1/tasks/{id}", auth.PermUpdate, task, a.updateTask)
	// Executor endpoints: agents in any language work the ledger over HTTP.
	h("POST /v1/tasks/claim", auth.PermAppend, auth.ResourceTasks, a.claimTasks)
	h("POST /v1/tasks/{id}/running", auth.PermAppend, task, a.markRunning)
	h("POST /v1/tasks/{id}/touch", auth.PermAppend, task, a.touchTask)
	h("POST /v1/tasks/{id}/evidence", auth.PermAppend, task, a.addEvidence)
	h("POST /v1/tasks/{id}/decisions", auth.PermAppend, task, a.recordDecision)
	h("POST /v1/tasks/{id}/workspace/reuse", auth.PermAppend, task, a.reuseWorkspace)
	h("POST /v1/tasks/{id}/abort/confirm", auth.PermAppend, task, a.confirmAbort)
	h("POST /v1/tasks/{id}/complete", auth.PermAppend, task, a.completeTask)
	h("POST /v1/tasks/{id}/fail", auth.PermAppend, task, a.failTask)
	h("POST /v1/tasks/{id}/request-input", auth.PermAppend, task, a.requestInput)
	h("POST /v1/tasks/{id}/review/claim", auth.PermUpdate, task, a.claimReview)
	h("POST /v1/tasks/{id}/review/approve", auth.PermUpdate, task, a.approveReview)
	h("POST /v1/tasks/{id}/review/reject", auth.PermUpdate, task, a.rejectReview)
}

// decode reads a JSON request body into v, refusing unknown fields, trailing
// data and oversized bodies with an error naming what was wrong.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return fmt.Errorf("empty request body: expected a JSON object: %w", store.ErrInvalid)
		case errors.As(err, &te):
			return &store.FieldError{Field: jsonField(te.Field), Expected: "a JSON " + te.Type.String()}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return &store.FieldError{Field: strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`),
				Expected: "no such field (it is not part of this request)"}
		}
		return fmt.Errorf("request body is not valid JSON (%v): %w", err, store.ErrInvalid)
	}
	if dec.More() {
		return fmt.Errorf("request body has data after the JSON object: %w", store.ErrInvalid)
	}
	return nil
}

// jsonField turns the path of a type error into the JSON field name: an
// embedded struct (UpdateRequest's TaskPatch) shows in it under its Go name,
// which is no field of the request, so capitalised segments are dropped
// (every JSON field of this API is lower case).
func jsonField(path string) string {
	var out []string
	for _, seg := range strings.Split(path, ".") {
		if seg != "" && (seg[0] < 'A' || seg[0] > 'Z') {
			out = append(out, seg)
		}
	}
	return strings.Join(out, ".")
}

// taskID parses the {id} path value.
func taskID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, &store.FieldError{Field: "task_id", Expected: fmt.Sprintf("a positive integer, got %q", r.PathValue("id"))}
	}
	return id, nil
}

// actor names the authenticated principal for the event log.
func actor(r *http.Request) string {
	if p, ok := PrincipalFrom(r.Context()); ok {
		return p.Name
	}
	return "unknown"
}

// CreatedTask is the body of POST /v1/tasks.
type CreatedTask struct {
	Task store.Task `json:"task"`
	// Created is false when the dedupe key matched a live task, which is
	// returned (to a caller that may read it; see CreateTask).
	Created bool `json:"created"`
}

// ErrDedupeUnreadable is the answer to a create whose dedupe_key names a
// task the caller may not read: a conflict that names nothing of that task
// (not its id, not its content), so a key cannot be used to read tasks.
var ErrDedupeUnreadable = fmt.Errorf("a task with this dedupe_key already exists (or, with dedupe_once, existed) "+
	"and the caller may not read it; nothing was created: %w", store.ErrConflict)

// CreateTask enqueues n as the authenticated caller in ctx (its created_by
// is the caller's name, actor) for the HTTP API and the MCP tool alike. On a
// dedupe hit the existing task is returned only when the caller may read it
// (read on /tasks/ID); otherwise the error is ErrDedupeUnreadable.
func CreateTask(ctx context.Context, tasks store.Tasks, n store.NewTask, actor string) (store.Task, bool, error) {
	n.CreatedBy = actor
	t, created, err := tasks.Enqueue(ctx, n)
	if err != nil || created {
		return t, created, err
	}
	if err := auth.Require(ctx, auth.PermRead, auth.TaskResource(t.ID)); errors.Is(err, auth.ErrForbidden) {
		return store.Task{}, false, ErrDedupeUnreadable
	} else if err != nil {
		return store.Task{}, false, err
	}
	return t, false, nil
}

func (a *API) createTask(w http.ResponseWriter, r *http.Request) {
	var n store.NewTask
	if err := decode(r, &n); err != nil {
		a.fail(w, r, err)
		return
	}
	t, created, err := CreateTask(r.Context(), a.cfg.Tasks, n, actor(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, CreatedTask{Task: t, Created: created})
}

// ParseTaskFilter reads the query of GET /v1/tasks: state and type (repeatable
// or comma-separated), cursor, limit, and stopped_longer_than (a duration such
// as 24h: STOPPED tasks whose state has not changed for at least that long,
// relative to now).
func ParseTaskFilter(q map[string][]string, now time.Time) (store.TaskFilter, error) {
	var f store.TaskFilter
	if v := first(q["stopped_longer_than"]); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return f, &store.FieldError{Field: "stopped_longer_than", Expected: fmt.Sprintf("a duration such as 24h or 90m, got %q", v)}
		}
		if len(q["state"]) > 0 {
			return f, &store.FieldError{Field: "state", Expected: "no state filter together with stopped_longer_than (it selects STOPPED)"}
		}
		f.States = []store.TaskState{ledger.Stopped}
		f.StateChangedBefore = now.Add(-d)
	}
	for _, s := range splitAll(q["state"]) {
		st := store.TaskState(strings.ToUpper(s))
		if !ledger.Valid(st) {
			return f, &store.FieldError{Field: "state", Expected: fmt.Sprintf("one of %s, got %q", statesList(), s)}
		}
		f.States = append(f.States, st)
	}
	f.Types = splitAll(q["type"])
	var err error
	if f.After, f.Limit, err = parsePage(q); err != nil {
		return f, err
	}
	return f.Validate()
}

// parsePage reads the cursor and limit of a listing's query (0 when absent).
func parsePage(q map[string][]string) (after int64, limit int, err error) {
	for _, name := range []string{"cursor", "limit"} {
		v := first(q[name])
		if v == "" {
			continue
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 0 {
			return 0, 0, &store.FieldError{Field: name, Expected: fmt.Sprintf("a non-negative integer, got %q", v)}
		}
		if name == "cursor" {
			after = n
		} else {
			limit = int(n)
		}
	}
	return after, limit, nil
}

func statesList() string {
	var s []string
	for _, st := range ledger.All {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

func splitAll(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

func first(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	return vals[0]
}

func (a *API) listTasks(w http.ResponseWriter, r *http.Request) {
	f, err := ParseTaskFilter(r.URL.Query(), a.cfg.Clock.Now())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.cfg.Tasks.ListTasks(r.Context(), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if page.Tasks == nil {
		page.Tasks = []store.Task{}
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *API) getTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := a.cfg.Tasks.GetTask(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// taskCall decodes the body into req, parses the task id and runs call,
// answering 200 with what it returns. It is the shape of every per-task POST.
func taskCall[Req, Resp any](a *API, w http.ResponseWriter, r *http.Request, call func(id int64, req Req) (Resp, error)) {
	taskCallStatus(a, w, r, http.StatusOK, call)
}

// taskCallStatus is taskCall answering with status on success.
func taskCallStatus[Req, Resp any](a *API, w http.ResponseWriter, r *http.Request, status int, call func(id int64, req Req) (Resp, error)) {
	id, err := taskID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var req Req
	if err := decode(r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	out, err := call(id, req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, status, out)
}

// AnswerRequest is the body of POST /v1/tasks/{id}/answer.
type AnswerRequest struct {
	Text string `json:"text"`
}

func (a *API) answerTask(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req AnswerRequest) (store.Task, error) {
		if strings.TrimSpace(req.Text) == "" {
			return store.Task{}, &store.FieldError{Field: "text", Expected: "a non-empty answer"}
		}
		return a.cfg.Tasks.Answer(r.Context(), id, actor(r), req.Text)
	})
}

// CancelRequest is the body of POST /v1/tasks/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason"`
}

func (a *API) cancelTask(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req CancelRequest) (store.Task, error) {
		return a.cfg.Tasks.Cancel(r.Context(), id, actor(r), req.Reason)
	})
}

// ClaimRequest is the body of POST /v1/tasks/claim.
type ClaimRequest struct {
	// Worker names the executor instance; default the principal's name.
	Worker string   `json:"worker"`
	Types  []string `json:"types"`
	// N is how many tasks to lease at most (default 1).
	N int `json:"n"`
	// LeaseS is the lease in seconds (default 300).
	LeaseS float64 `json:"lease_s"`
}

// ClaimedTasks is the answer of POST /v1/tasks/claim: the only answer of the
// API that carries lease tokens (each task's lease_token, for the claimer).
type ClaimedTasks struct {
	Tasks []store.ClaimedTask `json:"tasks"`
	// AgentTokens maps each claimed task's id (as a decimal string) to a
	// task-scoped agent credential (read, append, create on /tasks/ID) for
	// the executor to work that task with, bound to the task's new lease (it
	// stops authenticating when the lease ends). A task whose credential
	// could not be issued is absent (the hub logs why); the claim stands
	// regardless.
	AgentTokens map[string]string `json:"agent_tokens"`
}

func (a *API) claimTasks(w http.ResponseWriter, r *http.Request) {
	var req ClaimRequest
	if err := decode(r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Worker == "" {
		req.Worker = actor(r)
	}
	if req.N == 0 {
		req.N = 1
	}
	lease, err := leaseOf(req.LeaseS)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ts, err := a.cfg.Tasks.Claim(r.Context(), req.Worker, req.Types, req.N, lease)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if ts == nil {
		ts = []store.ClaimedTask{}
	}
	toks := make(map[string]string, len(ts))
	for _, t := range ts {
		tok, err := auth.IssueTaskToken(r.Context(), a.cfg.Auth.Principals(), t, req.Worker)
		if err != nil {
			a.cfg.Logger.Error("claim: issue agent token", "task_id", t.ID, "err", err)
			continue
		}
		toks[strconv.FormatInt(t.ID, 10)] = tok
	}
	writeJSON(w, http.StatusOK, ClaimedTasks{Tasks: ts, AgentTokens: toks})
}

func leaseOf(seconds float64) (time.Duration, error) {
	switch {
	case seconds == 0:
		return DefaultLease, nil
	case seconds < 1 || seconds > 24*3600:
		return 0, &store.FieldError{Field: "lease_s", Expected: "a number of seconds from 1 to 86400"}
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// LeaseRequest is the body of executor calls that carry only the lease token.
type LeaseRequest struct {
	LeaseToken string `json:"lease_token"`
}

func (a *API) markRunning(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req LeaseRequest) (store.Task, error) {
		return a.cfg.Tasks.MarkRunning(r.Context(), id, req.LeaseToken)
	})
}

// TouchResult is the answer of POST /v1/tasks/{id}/touch: whether the lease is
// still held (the seed's touch convention: a lost lease is an answer, not an error).
type TouchResult struct {
	Held bool `json:"held"`
}

func (a *API) touchTask(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req LeaseRequest) (TouchResult, error) {
		held, err := a.cfg.Tasks.Touch(r.Context(), id, req.LeaseToken)
		if errors.Is(err, store.ErrLeaseLost) {
			err = nil // a lost lease is the answer held=false, not an error
		}
		return TouchResult{Held: held}, err
	})
}

// EvidenceRequest is the body of POST /v1/tasks/{id}/evidence.
type EvidenceRequest struct {
	LeaseToken string `json:"lease_token"`
	Kind       string `json:"kind"`
	Body       string `json:"body"`
}

func (a *API) addEvidence(w http.ResponseWriter, r *http.Request) {
	taskCallStatus(a, w, r, http.StatusCreated, func(id int64, req EvidenceRequest) (store.Evidence, error) {
		return a.cfg.Tasks.AddEvidence(r.Context(), id, req.LeaseToken, req.Kind, req.Body)
	})
}

// CompleteRequest is the body of POST /v1/tasks/{id}/complete.
type CompleteRequest struct {
	LeaseToken  string `json:"lease_token"`
	NeedsReview bool   `json:"needs_review"`
	Result      string `json:"result"`
}

func (a *API) completeTask(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req CompleteRequest) (store.Task, error) {
		return a.cfg.Tasks.Complete(r.Context(), id, req.LeaseToken, req.NeedsReview, req.Result)
	})
}

// FailRequest is the body of POST /v1/tasks/{id}/fail.
type FailRequest struct {
	LeaseToken string `json:"lease_token"`
	Retryable  bool   `json:"retryable"`
	Reason     string `json:"reason"`
}

func (a *API) failTask(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req FailRequest) (store.Task, error) {
		return a.cfg.Tasks.Fail(r.Context(), id, req.LeaseToken, req.Retryable, req.Reason)
	})
}

// InputRequest is the body of POST /v1/tasks/{id}/request-input.
type InputRequest struct {
	LeaseToken string `json:"lease_token"`
	Question   string `json:"question"`
}

func (a *API) requestInput(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req InputRequest) (store.Task, error) {
		if strings.TrimSpace(req.Question) == "" {
			return store.Task{}, &store.FieldError{Field: "question", Expected: "a non-empty question"}
		}
		return a.cfg.Tasks.RequestInput(r.Context(), id, req.LeaseToken, req.Question)
	})
}

// ReviewClaimRequest is the body of POST /v1/tasks/{id}/review/claim.
type ReviewClaimRequest struct {
	Reviewer string  `json:"reviewer"`
	LeaseS   float64 `json:"lease_s"`
}

// claimReview answers the task with the review lease's token (lease_token),
// as a claim does.
func (a *API) claimReview(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req ReviewClaimRequest) (store.ClaimedTask, error) {
		lease, err := leaseOf(req.LeaseS)
		if err != nil {
			return store.ClaimedTask{}, err
		}
		if req.Reviewer == "" {
			req.Reviewer = actor(r)
		}
		return a.cfg.Tasks.ClaimReview(r.Context(), id, req.Reviewer, lease)
	})
}

// ReviewRequest is the body of review approve and reject.
type ReviewRequest struct {
	LeaseToken string `json:"lease_token"`
	Note       string `json:"note"`
}

func (a *API) approveReview(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req ReviewRequest) (store.Task, error) {
		return a.cfg.Tasks.Approve(r.Context(), id, req.LeaseToken, req.Note)
	})
}

func (a *API) rejectReview(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req ReviewRequest) (store.Task, error) {
		return a.cfg.Tasks.Reject(r.Context(), id, req.LeaseToken, req.Note)
	})
}

// StopRequest is the body of POST /v1/tasks/{id}/stop.
type StopRequest struct {
	// Reason is required; it is recorded in the task's events and abort.
	Reason string `json:"reason"`
	// Deadline is how long to wait for the executor of a CLAIMED or RUNNING
	// task to confirm its abort, a Go duration such as "30s" (empty or "0":
	// store.DefaultAbortDeadline).
	Deadline string `json:"deadline,omitempty"`
	// Wait, default true, makes the call wait up to Deadline for the
	// confirmation; false answers at once with the abort abort_pending.
	Wait *bool `json:"wait,omitempty"`
}

// StartRequest is the body of POST /v1/tasks/{id}/start; the body may be empty.
type StartRequest struct {
	Reason string `json:"reason,omitempty"`
}

// UpdateRequest is the body of PATCH /v1/tasks/{id}: the fields of
// store.TaskPatch, plus the abort deadline and wait of a running task's
// stop → apply → start, as in StopRequest.
type UpdateRequest struct {
	store.TaskPatch
	Deadline string `json:"deadline,omitempty"`
	Wait     *bool  `json:"wait,omitempty"`
}

// abortWait reads the deadline and wait fields of a stop or update.
func abortWait(deadline string, wait *bool) (time.Duration, bool, error) {
	var d time.Duration
	if strings.TrimSpace(deadline) != "" {
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(deadline)); err != nil {
			return 0, false, &store.FieldError{Field: "deadline",
				Expected: fmt.Sprintf("a duration such as 30s or 2m (empty for the default %s), got %q", store.DefaultAbortDeadline, deadline)}
		}
	}
	d, err := store.ValidateDeadline(d)
	return d, wait == nil || *wait, err
}

func (a *API) stopTask(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req StopRequest) (ledger.StopResult, error) {
		if strings.TrimSpace(req.Reason) == "" {
			return ledger.StopResult{}, &store.FieldError{Field: "reason", Expected: "a non-empty reason (why the task is held)"}
		}
		d, wait, err := abortWait(req.Deadline, req.Wait)
		if err != nil {
			return ledger.StopResult{}, err
		}
		if wait {
			a.allowWait(w, d)
		}
		return a.control.Stop(r.Context(), id, actor(r), req.Reason, d, wait)
	})
}

func (a *API) startTask(w http.ResponseWriter, r *http.Request) {
	if err := emptyAsObject(r); err != nil {
		a.fail(w, r, err)
		return
	}
	taskCall(a, w, r, func(id int64, req StartRequest) (store.Task, error) {
		return a.control.Start(r.Context(), id, actor(r), req.Reason)
	})
}

func (a *API) updateTask(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req UpdateRequest) (store.UpdateResult, error) {
		d, wait, err := abortWait(req.Deadline, req.Wait)
		if err != nil {
			return store.UpdateResult{}, err
		}
		if wait {
			a.allowWait(w, d)
		}
		return a.control.Update(r.Context(), id, actor(r), req.TaskPatch, d, wait)
	})
}

// emptyAsObject lets a request without a body (or with only white space)
// stand for {}: the body of calls whose every field is optional.
func emptyAsObject(r *http.Request) error {
	if r.Body == nil {
		r.Body = io.NopCloser(strings.NewReader("{}"))
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("read request body: %w", store.ErrInvalid)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

// DecisionRequest is the body of POST /v1/tasks/{id}/decisions.
type DecisionRequest struct {
	LeaseToken string `json:"lease_token"`
	Kind       string `json:"kind"`
	Text       string `json:"text"`
	// DerivedFromRevision is the task revision the decision was made from
	// (the revision of the task as the executor read it at claim).
	DerivedFromRevision int `json:"derived_from_revision"`
}

func (a *API) recordDecision(w http.ResponseWriter, r *http.Request) {
	taskCallStatus(a, w, r, http.StatusCreated, func(id int64, req DecisionRequest) (store.Decision, error) {
		return a.cfg.Tasks.RecordDecision(r.Context(), id, req.LeaseToken, req.Kind, req.Text, req.DerivedFromRevision)
	})
}

// ReuseWorkspaceRequest is the body of POST /v1/tasks/{id}/workspace/reuse.
type ReuseWorkspaceRequest struct {
	LeaseToken string `json:"lease_token"`
	// Path is a workspace recorded by an earlier attempt of the task.
	Path                string `json:"path"`
	DerivedFromRevision int    `json:"derived_from_revision"`
}

func (a *API) reuseWorkspace(w http.ResponseWriter, r *http.Request) {
	taskCallStatus(a, w, r, http.StatusCreated, func(id int64, req ReuseWorkspaceRequest) (store.Decision, error) {
		return a.cfg.Tasks.ReuseWorkspace(r.Context(), id, req.LeaseToken, req.Path, req.DerivedFromRevision)
	})
}

// confirmAbort is the executor's confirmation that the work of its revoked
// lease has stopped; 404 when no abort names that lease.
func (a *API) confirmAbort(w http.ResponseWriter, r *http.Request) {
	taskCall(a, w, r, func(id int64, req LeaseRequest) (store.Abort, error) {
		if req.LeaseToken == "" {
			return store.Abort{}, &store.FieldError{Field: "lease_token", Expected: "the revoked lease token of the aborted attempt"}
		}
		return a.cfg.Tasks.ConfirmAbort(r.Context(), id, req.LeaseToken)
	})
}
