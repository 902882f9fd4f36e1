package cks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
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
	// Spend sums what the attempt reported spending (report_usage).
	Spend *UsageSum `json:"spend,omitempty"`
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

// TaskPatch is the edit of update_task (the store's Update). Nil or empty
// fields are left as they are. Description, AcceptanceCriteria, Payload,
// dependency and child edits are material: they bump the task's revision
// and, on a CLAIMED or RUNNING task, make Update stop the executor, apply
// the edit and start the task again as one operation. Title, Priority and
// Metadata are not: they apply to a running task without stopping it and
// leave the revision alone.
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
	// AttemptTimeout sets the task's attempt timeout (as
	// NewTask.AttemptTimeout). It is not material: a running attempt
	// keeps running, and its deadline is its claim plus the new timeout.
	AttemptTimeout Duration `json:"attempt_timeout,omitempty"`
	// RunAfter and Delay hold the task back from claims until then, as at
	// creation (NewTask.RunAfter, NewTask.Delay, with the same bounds),
	// and only a task no one has claimed (OPEN, WAITING, BLOCKED); a time
	// already past makes it claimable now. Not material.
	RunAfter time.Time `json:"run_after,omitzero"`
	Delay    Duration  `json:"delay,omitempty"`
	// ExpiresAt sets when the task, not completed by then, is cancelled
	// (as NewTask.ExpiresAt, with the same bounds). Not material: a
	// running attempt keeps running until then.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// ConcurrencyKeys replaces the task's concurrency keys ([] removes
	// them). Not material: a running attempt keeps running and is counted
	// under its new keys from the update on.
	ConcurrencyKeys *[]string `json:"concurrency_keys,omitempty"`
	// MaxTokens and MaxCost replace the task's budget (as
	// NewTask.MaxTokens and MaxCost; 0 and "0" remove it). Not material:
	// what the task spent stays, and a raised budget lets a task the
	// budget stopped run again once answered (docs/spend.md).
	MaxTokens *int64  `json:"max_tokens,omitempty"`
	MaxCost   *string `json:"max_cost,omitempty"`
}

// Delays reports whether p sets when the task may be claimed (RunAfter or
// Delay).
func (p TaskPatch) Delays() bool { return !p.RunAfter.IsZero() || p.Delay != "" }

// Material reports whether p changes anything an executor works from.
func (p TaskPatch) Material() bool {
	return p.Description != nil || p.AcceptanceCriteria != nil || len(p.Payload) > 0 ||
		len(p.AddDependsOn) > 0 || len(p.RemoveDependsOn) > 0 || len(p.AddChildren) > 0 || len(p.CancelChildren) > 0
}

// Empty reports whether p changes nothing.
func (p TaskPatch) Empty() bool {
	return !p.Material() && p.Title == nil && p.Priority == nil && len(p.Metadata) == 0 && p.AttemptTimeout == "" && !p.Delays() &&
		p.ExpiresAt.IsZero() && p.ConcurrencyKeys == nil && p.MaxTokens == nil && p.MaxCost == nil
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
	var err error
	if p.Payload, p.Metadata, err = storedJSONFields(p.Payload, p.Metadata); err != nil {
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
	if _, err := ParseAttemptTimeout("attempt_timeout", p.AttemptTimeout); err != nil {
		return p, err
	}
	if p.ConcurrencyKeys != nil {
		keys, err := ValidateConcurrencyKeys("concurrency_keys", *p.ConcurrencyKeys)
		if err != nil {
			return p, err
		}
		p.ConcurrencyKeys = &keys
	}
	if p.Delay != "" && !p.RunAfter.IsZero() {
		return p, fieldError("run_after", "either run_after or delay, not both")
	}
	if _, err := (NewTask{Delay: p.Delay}).DelayDuration(); err != nil {
		return p, err
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
		{"attempt_timeout", p.AttemptTimeout != ""}, {"run_after", !p.RunAfter.IsZero()}, {"delay", p.Delay != ""},
		{"expires_at", !p.ExpiresAt.IsZero()}, {"concurrency_keys", p.ConcurrencyKeys != nil},
		{"max_tokens", p.MaxTokens != nil}, {"max_cost", p.MaxCost != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// TaskStopResult is the outcome of a stop of a task (stop_task).
type TaskStopResult struct {
	Task Task `json:"task"`
	// From is the state the stop moved the task from.
	From TaskState `json:"from"`
	// Abort is the abort request when the task was CLAIMED or RUNNING; its
	// Outcome is definite (confirmed or unconfirmed) when the call waited.
	Abort *Abort `json:"abort,omitempty"`
}

// BulkOutcome is what a bulk operation did to one task.
type BulkOutcome string

// The outcomes of a bulk operation's tasks.
const (
	// BulkDone: the task moved as the operation does.
	BulkDone BulkOutcome = "done"
	// BulkRefused: the ledger refused it (its state does not admit the
	// operation, its dedupe key is taken, no such task); Reason says why
	// and nothing of the task changed.
	BulkRefused BulkOutcome = "refused"
)

// BulkTask is the outcome of a bulk operation for one task.
type BulkTask struct {
	TaskID  int64       `json:"task_id"`
	Outcome BulkOutcome `json:"outcome"`
	// From is the state the task was in, State the one it is in now (the
	// same when refused; both empty for an id that is no task).
	From  TaskState `json:"from,omitempty"`
	State TaskState `json:"state,omitempty"`
	// Reason is why the task was refused.
	Reason string `json:"reason,omitempty"`
	// Abort is, for a stop or a cancel of a CLAIMED or RUNNING task, the
	// abort it requested (a stop that waited has its definite outcome);
	// for a start or a retry, the task's latest abort when its executor
	// never confirmed it (that executor may still be running).
	Abort *Abort `json:"abort,omitempty"`
}

// BulkResult is the answer of a bulk operation: each task's outcome, in
// task id order, and their counts.
type BulkResult struct {
	Action  TaskAction `json:"action"`
	Tasks   []BulkTask `json:"tasks"`
	Done    int        `json:"done"`
	Refused int        `json:"refused"`
	// Pending and Unconfirmed count the tasks whose Abort is pending
	// (abort_pending) or unconfirmed (abort_unconfirmed): executors that
	// may still be running.
	Pending     int `json:"pending,omitempty"`
	Unconfirmed int `json:"unconfirmed,omitempty"`
	// NextCursor, for a selection by filter, is where the next call goes
	// on when more tasks match than this one took (0: none do).
	NextCursor int64 `json:"next_cursor,omitempty"`
}

// Count fills r's counts from its tasks.
func (r *BulkResult) Count() {
	r.Done, r.Refused, r.Pending, r.Unconfirmed = 0, 0, 0, 0
	for _, t := range r.Tasks {
		if t.Outcome == BulkDone {
			r.Done++
		} else {
			r.Refused++
		}
		if t.Abort != nil {
			switch t.Abort.Outcome {
			case AbortPending:
				r.Pending++
			case AbortUnconfirmed:
				r.Unconfirmed++
			}
		}
	}
}
