package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Abort deadlines (ADR 0020 §5): how long a stop waits for the executor of
// a running task to confirm that it has stopped.
const (
	// DefaultAbortDeadline is used when a stop or update names no deadline.
	DefaultAbortDeadline = 30 * time.Second
	// MaxAbortDeadline bounds the deadline a caller may ask for.
	MaxAbortDeadline = 10 * time.Minute
)

// TopicTaskAborts is the change topic of abort requests and confirmations:
// published by Stop, Update (when it restarts a running task) and Cancel of a
// leased task, and by ConfirmAbort and ResolveAbort. Executors watch it to
// learn of an abort without waiting for their next lease heartbeat; stop
// calls watch it for the confirmation.
const TopicTaskAborts = "task_aborts"

// AbortOutcome is the state of an abort request. It is definite once the
// request is resolved: confirmed by the executor, or unconfirmed because the
// deadline passed first.
type AbortOutcome string

// The outcomes of an abort request.
const (
	// AbortPending: requested, not confirmed yet, deadline not passed.
	AbortPending AbortOutcome = "abort_pending"
	// AbortConfirmed: the executor confirmed that its work stopped.
	AbortConfirmed AbortOutcome = "abort_confirmed"
	// AbortUnconfirmed: the deadline passed without a confirmation; the
	// executor named in the request may still be running.
	AbortUnconfirmed AbortOutcome = "abort_unconfirmed"
)

// Abort is one row of cks_task_aborts: the request, made when a stop, an
// update or a cancel revoked a live lease, that the lease's executor abort
// its work, and the outcome of that request.
type Abort struct {
	ID     int64 `json:"abort_id"`
	TaskID int64 `json:"task_id"`
	// The revoked lease is recorded by its token's hash only (never part of
	// an Abort); its executor confirms with the plain token (ConfirmAbort).
	// Executor is the claimed_by of the revoked lease: the worker instance
	// that may still be running while the abort is not confirmed.
	Executor string `json:"executor"`
	// Attempt and Restart identify the aborted attempt (the task's counters
	// at the time of the request).
	Attempt     int          `json:"attempt"`
	Restart     int          `json:"restart"`
	RequestedBy string       `json:"requested_by"`
	Reason      string       `json:"reason"`
	RequestedAt time.Time    `json:"requested_at"`
	DeadlineAt  time.Time    `json:"deadline_at"`
	Outcome     AbortOutcome `json:"outcome"`
	// ResolvedAt is when the outcome became definite; zero while pending.
	// A confirmation that arrives after the deadline still turns an
	// unconfirmed abort into a confirmed one, with this time after DeadlineAt.
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
}

// Decision is one record of cks_task_decisions: a choice an executor made
// while working on an attempt (ADR 0016's decisions: decompose or not, needs
// review, right agent, reuse a workspace), with the task revision it was
// derived from, so a reader can tell a decision made on the current text of
// the task from one made on an earlier revision.
type Decision struct {
	ID      int64 `json:"decision_id"`
	TaskID  int64 `json:"task_id"`
	Attempt int   `json:"attempt"`
	Restart int   `json:"restart"`
	// Revision is the task's revision when the decision was recorded.
	Revision int `json:"revision"`
	// DerivedFromRevision is the revision of the task text the executor
	// read to make the decision (1..Revision).
	DerivedFromRevision int       `json:"derived_from_revision"`
	Kind                string    `json:"kind"`
	Text                string    `json:"text"`
	Actor               string    `json:"actor"`
	CreatedAt           time.Time `json:"created_at"`
}

// Evidence and decision kinds with a meaning to the ledger.
const (
	// EvidenceWorkspace is evidence whose body is the path of the attempt's
	// workspace (a directory or worktree). The latest one of an attempt is
	// its workspace.
	EvidenceWorkspace = "workspace"
	// DecisionReuseWorkspace is the decision, recorded by ReuseWorkspace,
	// to continue in a workspace left by an earlier attempt (ADR 0020 §6:
	// never a silent default).
	DecisionReuseWorkspace = "reuse_workspace"
)

// AttemptView groups what one attempt of a task recorded. Attempts are
// identified by (Restart, Attempt): a stop gives the attempt back (it must
// not consume the retry budget) and the start that follows bumps restarts,
// so an aborted attempt and the next one never share an identity.
type AttemptView struct {
	Restart int `json:"restart"`
	Attempt int `json:"attempt"`
	// Aborted is set when a stop, update or cancel aborted this attempt.
	Aborted   bool       `json:"aborted,omitempty"`
	Workspace string     `json:"workspace,omitempty"`
	Evidence  []Evidence `json:"evidence,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
}

// GroupAttempts fills t.Current and t.History from every evidence and
// decision record of t (oldest first) and its aborts: Current is the attempt
// identified by the task's counters (the attempt in progress, or the last
// one; for a NEEDS_INPUT task the paused one), History every other attempt,
// oldest first. Nothing from an aborted attempt is ever Current: an abort
// gives the attempt back and the restart that follows moves Current on.
// Backends call it from GetTask.
func GroupAttempts(t *Task, evidence []Evidence, decisions []Decision, aborts []Abort) {
	type key struct{ restart, attempt int }
	cur := key{t.Restarts, t.Attempts}
	if t.State == "NEEDS_INPUT" {
		cur.attempt++ // RequestInput gave the attempt back; it resumes after Answer
	}
	views := map[key]*AttemptView{}
	view := func(k key) *AttemptView {
		if v := views[k]; v != nil {
			return v
		}
		v := &AttemptView{Restart: k.restart, Attempt: k.attempt}
		views[k] = v
		return v
	}
	view(cur)
	for _, e := range evidence {
		v := view(key{e.Restart, e.Attempt})
		v.Evidence = append(v.Evidence, e)
		if e.Kind == EvidenceWorkspace {
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
	slices.SortFunc(t.History, func(a, b AttemptView) int {
		return cmp.Or(cmp.Compare(a.Restart, b.Restart), cmp.Compare(a.Attempt, b.Attempt))
	})
	t.Aborts = aborts
	if len(aborts) > 0 {
		last := aborts[len(aborts)-1]
		t.LastAbort = &last
	}
}

// Workspaces returns the workspaces recorded by earlier attempts of t (its
// History), oldest first; the candidates of ReuseWorkspace.
func (t Task) Workspaces() []string {
	var out []string
	for _, v := range t.History {
		for _, e := range v.Evidence {
			if e.Kind == EvidenceWorkspace && !slices.Contains(out, e.Body) {
				out = append(out, e.Body)
			}
		}
	}
	return out
}

// TaskPatch is the input of Update. Nil or empty fields are left as they
// are. Description, AcceptanceCriteria, Payload, dependency and child edits
// are material: they bump the task's revision and, on a CLAIMED or RUNNING
// task, make Update stop the executor, apply the edit and start the task
// again as one operation. Title, Priority and Metadata are not: they apply
// to a running task without stopping it and leave the revision alone.
type TaskPatch struct {
	Title              *string         `json:"title,omitempty"`
	Description        *string         `json:"description,omitempty"`
	AcceptanceCriteria *string         `json:"acceptance_criteria,omitempty"`
	Payload            json.RawMessage `json:"payload,omitempty"`
	Priority           *int            `json:"priority,omitempty"`
	// Metadata replaces the task's metadata; it must be a JSON object.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// AddDependsOn and RemoveDependsOn edit the dependency set; an added
	// dependency must exist and must not close a cycle.
	AddDependsOn    []int64 `json:"add_depends_on,omitempty"`
	RemoveDependsOn []int64 `json:"remove_depends_on,omitempty"`
	// AddChildren creates child tasks (parent_id = the task).
	AddChildren []NewTask `json:"add_children,omitempty"`
	// CancelChildren cancels children of the task (ids of its children).
	CancelChildren []int64 `json:"cancel_children,omitempty"`
}

// Material reports whether p changes anything an executor works from.
func (p TaskPatch) Material() bool {
	return p.Description != nil || p.AcceptanceCriteria != nil || len(p.Payload) > 0 ||
		len(p.AddDependsOn) > 0 || len(p.RemoveDependsOn) > 0 || len(p.AddChildren) > 0 || len(p.CancelChildren) > 0
}

// Empty reports whether p changes nothing.
func (p TaskPatch) Empty() bool {
	return !p.Material() && p.Title == nil && p.Priority == nil && len(p.Metadata) == 0
}

// Validate reports the first field of p that Update must refuse, and returns
// p with its child tasks validated (defaults filled in).
func (p TaskPatch) Validate() (TaskPatch, error) {
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", p.Title}, {"description", p.Description}, {"acceptance_criteria", p.AcceptanceCriteria}} {
		if f.v != nil {
			if err := ValidateText(f.name, *f.v); err != nil {
				return p, err
			}
		}
	}
	if err := validJSONFields(p.Payload, p.Metadata); err != nil {
		return p, err
	}
	switch {
	case p.Empty():
		return p, fieldError("patch", "at least one field to change")
	case p.Priority != nil && (*p.Priority < 0 || *p.Priority > MaxPriority):
		return p, fieldError("priority", fmt.Sprintf("an integer from 0 to %d", MaxPriority))
	case len(p.Payload) > 0 && !json.Valid(p.Payload):
		return p, fieldError("payload", "a JSON value")
	case len(p.Metadata) > 0 && !isJSONObject(p.Metadata):
		return p, fieldError("metadata", "a JSON object")
	}
	for _, f := range []struct {
		name string
		ids  []int64
	}{{"add_depends_on", p.AddDependsOn}, {"remove_depends_on", p.RemoveDependsOn}, {"cancel_children", p.CancelChildren}} {
		for _, id := range f.ids {
			if id <= 0 {
				return p, fieldError(f.name, "ids of existing tasks")
			}
		}
	}
	for _, id := range p.AddDependsOn {
		if slices.Contains(p.RemoveDependsOn, id) {
			return p, fieldError("add_depends_on", fmt.Sprintf("ids not also in remove_depends_on (%d is in both)", id))
		}
	}
	children := make([]NewTask, len(p.AddChildren))
	for i, c := range p.AddChildren {
		if c.ParentID != nil {
			return p, fieldError(fmt.Sprintf("add_children[%d].parent_id", i), "no parent_id (the updated task is the parent)")
		}
		v, err := c.Validate()
		if err != nil {
			if fe, ok := err.(*FieldError); ok {
				return p, fieldError(fmt.Sprintf("add_children[%d].%s", i, fe.Field), fe.Expected)
			}
			return p, err
		}
		children[i] = v
	}
	p.AddChildren = children
	return p, nil
}

func isJSONObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Valid(b) && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) && json.Unmarshal(b, &m) == nil
}

// UpdatePath says how Update applied a patch.
type UpdatePath string

// The paths of Update.
const (
	// UpdateInPlace: the task was not running (STOPPED, OPEN, WAITING,
	// BLOCKED, or a non-material edit of a parked task); applied directly.
	UpdateInPlace UpdatePath = "in_place"
	// UpdateLive: the task was running and the edit was not material
	// (title, priority, metadata); applied without stopping it.
	UpdateLive UpdatePath = "live"
	// UpdateRestart: the task was CLAIMED or RUNNING and the edit was
	// material; stop → apply → start ran as one transaction and the
	// executor was asked to abort.
	UpdateRestart UpdatePath = "stop_apply_start"
)

// UpdateResult is the outcome of Update.
type UpdateResult struct {
	Task Task       `json:"task"`
	Path UpdatePath `json:"path"`
	// Abort is the abort request of an UpdateRestart, nil otherwise.
	Abort *Abort `json:"abort,omitempty"`
	// Children are the tasks AddChildren created.
	Children []Task `json:"children,omitempty"`
}

// ValidateDeadline reports a FieldError naming deadline unless d is 0
// (meaning DefaultAbortDeadline) or in 1ms..MaxAbortDeadline, and returns
// the deadline to use.
func ValidateDeadline(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return DefaultAbortDeadline, nil
	case d < time.Millisecond || d > MaxAbortDeadline:
		return 0, fieldError("deadline", fmt.Sprintf("a duration from 1ms to %s (0 for the default %s)", MaxAbortDeadline, DefaultAbortDeadline))
	}
	return d, nil
}

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
	Stop(ctx context.Context, id int64, actor, reason string, deadline time.Duration) (Task, *Abort, error)
	// Start releases a STOPPED task: to OPEN, or WAITING when a dependency
	// is not COMPLETED at this moment, or BLOCKED when one FAILED or was
	// CANCELLED; restarts+1, attempts unchanged, run_after cleared. Any
	// other state is ErrConflict naming it.
	Start(ctx context.Context, id int64, actor, reason string) (Task, error)
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
	Update(ctx context.Context, id int64, actor string, p TaskPatch, deadline time.Duration) (UpdateResult, error)

	// GetAbort returns one abort request.
	GetAbort(ctx context.Context, abortID int64) (Abort, error)
	// ConfirmAbort is the executor's confirmation that the work of the
	// revoked lease leaseToken has stopped: the task's abort for that token
	// becomes AbortConfirmed (also after it was declared unconfirmed) and
	// TopicTaskAborts is published. ErrNotFound when no abort names the
	// token (the lease ended some other way: nothing to confirm).
	ConfirmAbort(ctx context.Context, id int64, leaseToken string) (Abort, error)
	// ResolveAbort declares a pending abort unconfirmed (the stop's
	// deadline passed) and publishes TopicTaskAborts; an abort that is no
	// longer pending is returned as it is.
	ResolveAbort(ctx context.Context, abortID int64) (Abort, error)
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
	RecordDecision(ctx context.Context, id int64, leaseToken, kind, text string, derivedFromRevision int) (Decision, error)
	// ReuseWorkspace records the explicit decision to continue in path, a
	// workspace recorded (EvidenceWorkspace) by an earlier attempt of this
	// task (otherwise FieldError path), and makes it the current attempt's
	// workspace; one transaction, fenced like AddEvidence.
	ReuseWorkspace(ctx context.Context, id int64, leaseToken, path string, derivedFromRevision int) (Decision, error)
}

// Fields names the fields p changes, in a fixed order (for event reasons
// and responses).
func (p TaskPatch) Fields() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"title", p.Title != nil}, {"description", p.Description != nil},
		{"acceptance_criteria", p.AcceptanceCriteria != nil}, {"payload", len(p.Payload) > 0},
		{"priority", p.Priority != nil}, {"metadata", len(p.Metadata) > 0},
		{"add_depends_on", len(p.AddDependsOn) > 0}, {"remove_depends_on", len(p.RemoveDependsOn) > 0},
		{"add_children", len(p.AddChildren) > 0}, {"cancel_children", len(p.CancelChildren) > 0},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// CheckChildDedupe is the rule for a dedupe hit among the add_children of an
// Update of task parent: the i-th child found the live task child (created
// false) under its dedupe key. Only a child of parent may be found so — the
// update then adds it again idempotently; a hit on any other task is a
// FieldError naming add_children[i].dedupe_key that says nothing of that
// task (the caller may not be allowed to read it), and the update changes
// nothing.
func CheckChildDedupe(i int, parent int64, child Task, created bool) error {
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
