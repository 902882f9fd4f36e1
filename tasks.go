package cks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Limits on task input, enforced by NewTask.Validate.
const (
	// MaxPriority is the highest priority a task may have; 0 is the lowest.
	MaxPriority = 1000
	// DefaultMaxAttempts is used when NewTask.MaxAttempts is 0.
	DefaultMaxAttempts = 3
	// MaxMaxAttempts bounds NewTask.MaxAttempts.
	MaxMaxAttempts = 100
	// DefaultListLimit is the page size of ListTasks when TaskFilter.Limit is 0.
	DefaultListLimit = 100
	// MaxListLimit bounds TaskFilter.Limit.
	MaxListLimit = 1000
	// MaxDelay is how far ahead a delayed task may be held back
	// (NewTask.Delay, NewTask.RunAfter): a year and a day.
	MaxDelay = 366 * 24 * time.Hour
	// MinAttemptTimeout and MaxAttemptTimeout bound an attempt timeout
	// (NewTask.AttemptTimeout, TaskPatch.AttemptTimeout).
	MinAttemptTimeout = time.Second
	MaxAttemptTimeout = 7 * 24 * time.Hour
)

// TaskState is the lifecycle state of a task (ADR 0020). The twelve states
// are the constants below; the allowed transitions between them and the
// sets over them (terminal, dispatch-excluded, initial) are package
// ledger's.
type TaskState string

// The twelve task states of ADR 0020.
const (
	// TaskOpen tasks are claimable (unless run_after is in the future).
	TaskOpen TaskState = "OPEN"
	// TaskWaiting tasks have a dependency that is not COMPLETED yet.
	TaskWaiting TaskState = "WAITING"
	// TaskBlocked tasks have a dependency that FAILED or was CANCELLED.
	TaskBlocked TaskState = "BLOCKED"
	// TaskClaimed tasks are leased by a worker that has not started yet.
	TaskClaimed TaskState = "CLAIMED"
	// TaskRunning tasks are being executed under a lease.
	TaskRunning TaskState = "RUNNING"
	// TaskNeedsReview tasks finished an attempt and wait for a reviewer.
	TaskNeedsReview TaskState = "NEEDS_REVIEW"
	// TaskNeedsInput tasks are parked until a person answers their question.
	TaskNeedsInput TaskState = "NEEDS_INPUT"
	// TaskReviewing tasks are held by a reviewer.
	TaskReviewing TaskState = "REVIEWING"
	// TaskCompleted is terminal success.
	TaskCompleted TaskState = "COMPLETED"
	// TaskFailed is terminal failure (including the dead letter "max
	// attempts"); only an operator's retry opens it again.
	TaskFailed TaskState = "FAILED"
	// TaskCancelled is terminal abandonment; only an operator's retry opens
	// it again.
	TaskCancelled TaskState = "CANCELLED"
	// TaskStopped tasks are held by an operator (live work, not terminal).
	TaskStopped TaskState = "STOPPED"
)

// TaskAction is an operator verb on a task, named for its operation (stop
// is stop_task): which of them a task admits in its state is the ledger's
// rule (ledger.Actions), read from its transition table; get_task lists
// them (Task.Actions) so that a surface offers what the state allows
// without deciding it. Whether the caller may is its grants' business.
type TaskAction string

// The operator verbs.
const (
	// ActionStop holds the task in STOPPED (stop_task).
	ActionStop TaskAction = "stop"
	// ActionStart releases a STOPPED task (start_task).
	ActionStart TaskAction = "start"
	// ActionCancel cancels the task (cancel_task).
	ActionCancel TaskAction = "cancel"
	// ActionAnswer answers a NEEDS_INPUT task's question (answer_task).
	ActionAnswer TaskAction = "answer"
	// ActionUpdate edits the task (update_task): its title, priority or
	// metadata at least.
	ActionUpdate TaskAction = "update"
	// ActionUpdateMaterial is an update_task edit of a material field
	// (description, criteria, payload, dependencies, children): in place,
	// or stop-apply-start for a task an executor holds.
	ActionUpdateMaterial TaskAction = "update_material"
	// ActionReview leases a NEEDS_REVIEW task for review (claim_review).
	ActionReview TaskAction = "review"
	// ActionRetry gives a FAILED or CANCELLED task a fresh attempt budget
	// and opens it again (retry_task).
	ActionRetry TaskAction = "retry"
)

// Task is one row of cks_outbox_tasks (the outbox of ADR-014/016, which is the
// task ledger of ADR 0020), with its dependencies and, from GetTask, its event
// history and evidence.
type Task struct {
	ID                 int64           `json:"task_id"`
	Type               string          `json:"type"`
	Title              string          `json:"title"`
	Description        string          `json:"description,omitempty"`
	AcceptanceCriteria string          `json:"acceptance_criteria,omitempty"`
	Payload            json.RawMessage `json:"payload"`
	State              TaskState       `json:"state"`
	Priority           int             `json:"priority"`
	// Attempts counts claims that were not given back. It is incremented by a
	// claim and decremented again by RequestInput, so asking a question does not
	// burn an attempt (see Tasks.RequestInput).
	Attempts    int `json:"attempts"`
	MaxAttempts int `json:"max_attempts"`
	// Restarts counts operator restarts (STOPPED → OPEN) and retries
	// (FAILED or CANCELLED → OPEN, which also give a fresh attempt budget:
	// attempts 0); a start never changes attempts.
	Restarts int `json:"restarts"`
	// Revision starts at 1 and is bumped by material edits (see
	// TaskPatch); evidence and decisions record the revision they were
	// made under.
	Revision int `json:"revision"`
	// Metadata is a free-form JSON object for operators (owner, links, …);
	// editing it is not material.
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	ParentID  *int64          `json:"parent_id"`
	DependsOn []int64         `json:"depends_on"`
	DedupeKey string          `json:"dedupe_key,omitempty"`
	CreatedBy string          `json:"created_by,omitempty"`
	// ClaimedBy is the worker (or reviewer) holding the lease; empty when none.
	ClaimedBy string    `json:"claimed_by,omitempty"`
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// The fencing token of the current lease is not part of a task: only
	// the claim that created it returns it (ClaimedTask), so no read of a
	// task can disclose it.
	LeaseExpiresAt time.Time `json:"lease_expires_at,omitzero"`
	// LeaseRenewedAt is the time of the claim or of the last heartbeat.
	LeaseRenewedAt time.Time `json:"lease_renewed_at,omitzero"`
	// RunAfter holds an OPEN task back from claims until that time: a
	// delayed task's (NewTask.RunAfter, NewTask.Delay) or a retry's
	// backoff. A claim clears it.
	RunAfter time.Time `json:"run_after,omitzero"`
	// AttemptTimeout is the longest an attempt may run from its claim
	// (NewTask.AttemptTimeout), as 10m or 1h30m; empty for none.
	AttemptTimeout Duration `json:"attempt_timeout,omitempty"`
	// ConcurrencyKeys are the keys whose limits the claims of the task
	// respect (NewTask.ConcurrencyKeys).
	ConcurrencyKeys []string `json:"concurrency_keys,omitempty"`
	// Traceparent is the W3C traceparent the task was created under
	// (NewTask.Traceparent); empty for none.
	Traceparent string `json:"traceparent,omitempty"`
	// AttemptDeadline is, while an attempt with a timeout runs (CLAIMED,
	// RUNNING), when the lease reaper ends it: ClaimedAt + AttemptTimeout.
	AttemptDeadline time.Time `json:"attempt_deadline,omitzero"`
	// ExpiresAt is when the task, not completed by then, is cancelled
	// (NewTask.ExpiresAt); zero for never.
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Result     string    `json:"result,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	Question   string    `json:"question,omitempty"`
	Answer     string    `json:"answer,omitempty"`
	ReviewNote string    `json:"review_note,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// StateChangedAt is the time of the last state change (set at enqueue
	// and by every transition; other writes such as a heartbeat leave it). Rows
	// written before the column existed got their updated_at as a backfill
	// when the database was upgraded.
	StateChangedAt time.Time `json:"state_changed_at"`
	// LastAbort is the task's most recent abort request, if any; filled by
	// GetTask and ListTasks (so a listing can show an unconfirmed abort).
	LastAbort *Abort `json:"last_abort,omitempty"`
	// Stop is, on a STOPPED task of a listing (ListTasks), the event that
	// stopped it: who, when and why.
	Stop *TaskEvent `json:"stop,omitempty"`
	// Events is the task's history, oldest first; filled by GetTask only.
	Events []TaskEvent `json:"events,omitempty"`
	// Current is what the current attempt recorded (evidence, decisions,
	// workspace); History every earlier attempt, oldest first, including
	// aborted ones. Filled by GetTask only (the ledger groups them by attempt).
	Current *AttemptView  `json:"current,omitempty"`
	History []AttemptView `json:"history,omitempty"`
	// Spend is what the task's attempts reported spending (report_usage)
	// and its budget; get_task fills it for a task with either.
	Spend *TaskSpend `json:"spend,omitempty"`
	// Aborts are the task's abort requests, oldest first; filled by GetTask only.
	Aborts []Abort `json:"aborts,omitempty"`
	// Actions are the operator verbs the task admits in its state (none
	// when it is terminal), in the order of the TaskAction constants;
	// filled by get_task only.
	Actions []TaskAction `json:"actions,omitzero"`
	// ChildIDs are the ids of the task's first MaxChildIDs children, by
	// id, and ChildCount how many it has: a view of a parent stays small
	// however many children it has (list_tasks with parent_id pages them).
	// Filled by GetTask only.
	ChildIDs   []int64 `json:"child_ids,omitempty"`
	ChildCount int     `json:"child_count,omitempty"`
}

// MaxChildIDs bounds the child ids a task view names (Task.ChildIDs).
const MaxChildIDs = 100

// ClaimedTask is a task as Claim and ClaimReview return it to the claimer:
// the task and the plain fencing token of the lease just created, which the
// claimer passes to every executor call of that lease. The token is shown
// this once: the store keeps only its hash (driver.HashLeaseToken), Task has no
// field for it, and no other call returns it, so nobody but the claimer can
// make the fenced calls of the lease (a reader of the task cannot take it
// over).
type ClaimedTask struct {
	Task
	LeaseToken string `json:"lease_token"`
	// Traceparent is the trace context the executor works the attempt
	// under (W3C; an exec agent's command gets it as TRACEPARENT): the
	// attempt's span when the hub exports traces (docs/tracing.md), so
	// the executor's own spans nest under it, else the task's own
	// traceparent (Task.Traceparent, which it shadows in the claim's
	// answer); empty when there is neither.
	Traceparent string `json:"traceparent,omitempty"`
}

// CurrentEvidence returns the evidence of the current attempt only (nil
// unless the task came from GetTask); older attempts' evidence is in History.
func (t Task) CurrentEvidence() []Evidence {
	if t.Current == nil {
		return nil
	}
	return t.Current.Evidence
}

// TaskEvent is one append-only row of cks_task_events: one state change.
// From is empty for the event that records the task's creation.
type TaskEvent struct {
	ID      int64     `json:"event_id"`
	TaskID  int64     `json:"task_id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	From    TaskState `json:"from"`
	To      TaskState `json:"to"`
	Attempt int       `json:"attempt"`
	Reason  string    `json:"reason,omitempty"`
	// Changes are the fields an edit (update_task) changed, each with its
	// old and new value, in the order of TaskPatch.Fields; none on a state
	// change. An edit of a running task that restarted it records them on
	// its start event.
	Changes []FieldChange `json:"changes,omitempty"`
}

// FieldChange is one field an edit changed: its value before and after, as
// JSON (a string for the text fields, a number for priority, the JSON of
// payload and metadata). For add_depends_on, remove_depends_on,
// add_children and cancel_children New lists the tasks added, removed,
// created or cancelled and there is no Old. An event is bounded by its
// edit: it keeps at most as much of an Old value as the larger of New and
// 4 KiB (package ledger's MinOldKept); OldCut says how many bytes of it
// were not kept (a text is cut at a character boundary; a JSON value too
// large is left out whole, Old null).
type FieldChange struct {
	Field  string          `json:"field"`
	Old    json.RawMessage `json:"old,omitempty"`
	New    json.RawMessage `json:"new,omitempty"`
	OldCut int             `json:"old_cut,omitempty"`
}

// Evidence is one record an executor attached to a task during one attempt.
type Evidence struct {
	ID        int64     `json:"evidence_id"`
	TaskID    int64     `json:"task_id"`
	Attempt   int       `json:"attempt"`
	Restart   int       `json:"restart"`
	Revision  int       `json:"revision"`
	Kind      string    `json:"kind"`
	Body      string    `json:"body"`
	Actor     string    `json:"actor"`
	CreatedAt time.Time `json:"created_at"`
}

// NewTask is a task to create: the input of create_task (the store's Enqueue)
// and of each of an update's add_children.
type NewTask struct {
	Type               string `json:"type"`
	Title              string `json:"title"`
	Description        string `json:"description,omitempty"`
	AcceptanceCriteria string `json:"acceptance_criteria,omitempty"`
	// Payload must be a JSON value; empty means {}.
	Payload  json.RawMessage `json:"payload,omitempty"`
	Priority int             `json:"priority"`
	// MaxAttempts is 1..MaxMaxAttempts; 0 means DefaultMaxAttempts.
	MaxAttempts int     `json:"max_attempts,omitempty"`
	ParentID    *int64  `json:"parent_id,omitempty"`
	DependsOn   []int64 `json:"depends_on,omitempty"`
	// DedupeKey, when set, is unique among non-terminal tasks: enqueueing a
	// second task with the key of a live one returns the live one.
	DedupeKey string `json:"dedupe_key,omitempty"`
	// DedupeOnce makes DedupeKey match finished tasks too, so a key is
	// used at most once ever: the task that had it (live first, else the
	// latest) is returned instead. Sweepers use it for keys naming a state
	// that cannot come back (a fork's heads, a premise's hashes), so a
	// sweep that raced the task's completion enqueues nothing.
	DedupeOnce bool `json:"dedupe_once,omitempty"`
	// CreatedBy names who enqueued the task; recorded as the creation
	// event's actor. It is never read from JSON: the surfaces (HTTP, MCP)
	// set it to the authenticated caller, so a request cannot name another
	// creator (a body naming created_by is an unknown field).
	CreatedBy string `json:"-"`
	// Metadata, when set, must be a JSON object; empty means {}.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// RunAfter, when set, makes a delayed task: it is OPEN (or WAITING for
	// its dependencies) with this run_after, and no claim takes it before
	// then. A time already past is now; at most MaxDelay ahead.
	RunAfter time.Time `json:"run_after,omitzero"`
	// Delay is RunAfter as a duration from the enqueue ("10m", "24h"), at
	// most MaxDelay; not with RunAfter.
	Delay Duration `json:"delay,omitempty"`
	// AttemptTimeout, when set ("10m", "2h"), bounds every attempt of the
	// task from its claim: the lease reaper ends an attempt past it as a
	// stop does (lease revoked, abort requested, an exec agent's command
	// killed), and the task is retried, or FAILED once max_attempts are
	// used, with the reason "timed out after 10m". From
	// MinAttemptTimeout to MaxAttemptTimeout.
	AttemptTimeout Duration `json:"attempt_timeout,omitempty"`
	// ExpiresAt, when set, is when the task, not completed by then, is
	// cancelled by the lease reaper with the reason "expired: not
	// completed by TIME" (a running attempt aborted as a cancel's). It
	// must be in the future, after RunAfter, at most MaxDelay ahead.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// ConcurrencyKeys (at most MaxConcurrencyKeys, such as "openai" or
	// "openai:gpt-5") put the task under the limits (set_limit) whose
	// patterns match them: it is not claimed while any of its keys is held
	// by as many CLAIMED or RUNNING tasks as its limit allows.
	ConcurrencyKeys []string `json:"concurrency_keys,omitempty"`
	// MaxTokens and MaxCost are the task's budget (docs/spend.md): when
	// the usage its attempts report reaches either, the task moves to
	// NEEDS_INPUT and its running attempt is aborted. MaxCost is a
	// decimal string in USD ("2.50"); 0 or empty: no budget.
	MaxTokens int64  `json:"max_tokens,omitempty"`
	MaxCost   string `json:"max_cost,omitempty"`
	// Traceparent, when set, is the W3C traceparent of the caller's span
	// (over HTTP also the traceparent header): the task is kept in that
	// trace, and the hub's spans of it (its create, each attempt; when it
	// exports traces) are children of that span. Version 00, lower-case
	// hex (ParseTraceparent).
	Traceparent string `json:"traceparent,omitempty"`
}

// ParseAttemptTimeout is d parsed as an attempt timeout (0 when empty), or
// a FieldError naming field when it is not a duration from
// MinAttemptTimeout to MaxAttemptTimeout.
func ParseAttemptTimeout(field string, d Duration) (time.Duration, error) {
	if d == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil || v < MinAttemptTimeout || v > MaxAttemptTimeout {
		return 0, fieldError(field, fmt.Sprintf("a duration such as 10m or 2h, from %s to %.0fh", MinAttemptTimeout, MaxAttemptTimeout.Hours()))
	}
	return v, nil
}

// DelayDuration is n.Delay parsed (0 when empty), or a FieldError naming
// delay when it is not a duration from 0 to MaxDelay.
func (n NewTask) DelayDuration() (time.Duration, error) {
	if n.Delay == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(string(n.Delay))
	if err != nil || d < 0 || d > MaxDelay {
		return 0, fieldError("delay", fmt.Sprintf("a duration such as 10m or 24h, from 0 to %.0fh", MaxDelay.Hours()))
	}
	return d, nil
}

// Validate reports the first field of n that Enqueue must refuse, and fills in
// defaults (payload {}, max attempts) on the returned copy.
func (n NewTask) Validate() (NewTask, error) {
	if err := n.validateText(); err != nil {
		return n, err
	}
	var err error
	if n.Payload, n.Metadata, err = storedJSONFields(n.Payload, n.Metadata); err != nil {
		return n, err
	}
	if err := ValidateTaskType("type", n.Type); err != nil {
		return n, err
	}
	switch {
	case n.Priority < 0 || n.Priority > MaxPriority:
		return n, fieldError("priority", fmt.Sprintf("an integer from 0 to %d", MaxPriority))
	case n.MaxAttempts < 0 || n.MaxAttempts > MaxMaxAttempts:
		return n, fieldError("max_attempts", fmt.Sprintf("an integer from 1 to %d (0 for the default %d)", MaxMaxAttempts, DefaultMaxAttempts))
	case len(n.Payload) > 0 && !json.Valid(n.Payload):
		return n, fieldError("payload", "a JSON value")
	case n.DedupeOnce && n.DedupeKey == "":
		return n, fieldError("dedupe_once", "a dedupe_key to apply to")
	case len(n.Metadata) > 0 && !isJSONObject(n.Metadata):
		return n, fieldError("metadata", "a JSON object")
	case n.ParentID != nil && *n.ParentID <= 0:
		return n, fieldError("parent_id", "the id of an existing task")
	case n.Delay != "" && !n.RunAfter.IsZero():
		return n, fieldError("run_after", "either run_after or delay, not both")
	}
	if _, err := n.DelayDuration(); err != nil {
		return n, err
	}
	if _, err := ParseAttemptTimeout("attempt_timeout", n.AttemptTimeout); err != nil {
		return n, err
	}
	if n.ConcurrencyKeys, err = ValidateConcurrencyKeys("concurrency_keys", n.ConcurrencyKeys); err != nil {
		return n, err
	}
	if n.Traceparent != "" {
		if _, err := ParseTraceparent("traceparent", n.Traceparent); err != nil {
			return n, err
		}
	}
	seen := map[int64]bool{}
	deps := make([]int64, 0, len(n.DependsOn))
	for _, d := range n.DependsOn {
		if d <= 0 {
			return n, fieldError("depends_on", "ids of existing tasks")
		}
		if !seen[d] {
			seen[d] = true
			deps = append(deps, d)
		}
	}
	n.DependsOn = deps
	if len(n.Payload) == 0 {
		n.Payload = json.RawMessage(`{}`)
	}
	if len(n.Metadata) == 0 {
		n.Metadata = json.RawMessage(`{}`)
	}
	if n.MaxAttempts == 0 {
		n.MaxAttempts = DefaultMaxAttempts
	}
	return n, nil
}

// validateText checks n's strings with ValidateText.
func (n NewTask) validateText() error {
	for _, f := range []struct{ name, v string }{
		{"type", n.Type}, {"title", n.Title}, {"description", n.Description},
		{"acceptance_criteria", n.AcceptanceCriteria}, {"dedupe_key", n.DedupeKey}, {"created_by", n.CreatedBy},
	} {
		if err := ValidateText(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// storedJSONFields is StoredJSON of a payload and metadata that are valid
// JSON (whether they are is each caller's own check, with its own message):
// it returns them in the form every backend stores.
func storedJSONFields(payload, metadata json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	out := [2]json.RawMessage{payload, metadata}
	for i, name := range [2]string{"payload", "metadata"} {
		if len(out[i]) > 0 && json.Valid(out[i]) {
			b, err := StoredJSON(name, out[i])
			if err != nil {
				return payload, metadata, err
			}
			out[i] = b
		}
	}
	return out[0], out[1], nil
}

// TaskFilter selects a page of ListTasks.
type TaskFilter struct {
	// States and Types restrict the result when non-empty (any of them).
	States []TaskState
	Types  []string
	// StateChangedBefore, when not zero, keeps only tasks whose state last
	// changed at or before it (Task.StateChangedAt <= StateChangedBefore).
	StateChangedBefore time.Time
	// CreatedBy, when set, keeps the tasks that principal created.
	CreatedBy string
	// Text, when set, keeps the tasks whose title, description or
	// acceptance criteria contain it, ASCII letters matched in either case
	// (at most MaxSearchText bytes).
	Text string
	// UnconfirmedAbort keeps the tasks whose latest abort request is not
	// confirmed (pending or unconfirmed).
	UnconfirmedAbort bool
	// Sort is the order of the page ("" is TaskSortID).
	Sort TaskSort
	// After is the cursor, the previous page's Next: the tasks after that
	// task in Sort's order; under a sort by a key (updated, priority)
	// AfterKey is the previous page's NextKey, that task's key.
	After    int64
	AfterKey string
	// Limit is the page size, 1..MaxListLimit; 0 means DefaultListLimit.
	Limit int
	// Parent, when not 0, keeps the children of that task.
	Parent int64
}

// TaskSort is the order of a list_tasks page: a key, "-" before it for
// descending; ties go by task_id in the same direction.
type TaskSort string

// The sorts of list_tasks.
const (
	TaskSortID          TaskSort = "id"       // by task_id, oldest first (the default)
	TaskSortIDDesc      TaskSort = "-id"      // newest first
	TaskSortUpdated     TaskSort = "updated"  // by updated_at, least recently changed first
	TaskSortUpdatedDesc TaskSort = "-updated" // most recently changed first
	TaskSortPriority    TaskSort = "priority" // highest priority first, then oldest (claim order)
)

// TaskSorts are the sorts of list_tasks.
var TaskSorts = []TaskSort{TaskSortID, TaskSortIDDesc, TaskSortUpdated, TaskSortUpdatedDesc, TaskSortPriority}

// Keyed reports whether a cursor of sort s carries a key (AfterKey).
func (s TaskSort) Keyed() bool {
	return s == TaskSortUpdated || s == TaskSortUpdatedDesc || s == TaskSortPriority
}

// KeyTime is the layout of the key of a sort by updated_at: fixed width, at
// the stores' precision (microseconds).
const KeyTime = "2006-01-02T15:04:05.000000Z"

// keyOK reports whether key is one a page under sort s answers as its
// next_key: an integer (priority) or a KeyTime (updated, -updated).
func (s TaskSort) keyOK(key string) bool {
	var err error
	switch s {
	case TaskSortPriority:
		_, err = strconv.Atoi(key)
	case TaskSortUpdated, TaskSortUpdatedDesc:
		_, err = time.Parse(KeyTime, key)
	}
	return err == nil
}

// Validate reports the first bad field of f (States are checked by the
// backends against package ledger) and returns f with its default limit.
func (f TaskFilter) Validate() (TaskFilter, error) {
	if err := ValidateTexts("type", f.Types); err != nil {
		return f, err
	}
	if err := ValidateText("q", f.Text); err != nil {
		return f, err
	}
	if err := ValidateText("created_by", f.CreatedBy); err != nil {
		return f, err
	}
	switch {
	case len(f.Text) > MaxSearchText:
		return f, fieldError("q", fmt.Sprintf("a search text of at most %d bytes", MaxSearchText))
	case len(f.CreatedBy) > MaxSearchText:
		return f, fieldError("created_by", fmt.Sprintf("a principal's name of at most %d bytes", MaxSearchText))
	case f.Sort != "" && !slices.Contains(TaskSorts, f.Sort):
		return f, fieldError("sort", fmt.Sprintf("one of %v, got %q", TaskSorts, f.Sort))
	case f.Limit < 0 || f.Limit > MaxListLimit:
		return f, fieldError("limit", fmt.Sprintf("an integer from 1 to %d (0 for the default %d)", MaxListLimit, DefaultListLimit))
	case f.After < 0:
		return f, fieldError("cursor", "a task id")
	case f.AfterKey != "" && !f.Sort.Keyed():
		return f, fieldError("cursor_key", "no key with sort id or -id (the cursor alone pages them)")
	case f.After > 0 && f.Sort.Keyed() && f.AfterKey == "":
		return f, fieldError("cursor_key", fmt.Sprintf("the next_key of the previous page, with its next_cursor, under sort %s", f.Sort))
	case f.AfterKey != "" && f.After == 0:
		return f, fieldError("cursor_key", "a cursor with it: the next_key of the previous page goes with its next_cursor as cursor")
	case f.AfterKey != "" && !f.Sort.keyOK(f.AfterKey):
		return f, fieldError("cursor_key", fmt.Sprintf("the next_key of the previous page under sort %s, got %q", f.Sort, f.AfterKey))
	case f.Parent < 0:
		return f, fieldError("parent_id", "a task id")
	case f.Parent != 0 && (len(f.States) > 0 || len(f.Types) > 0 || !f.StateChangedBefore.IsZero() || f.Text != "" ||
		f.CreatedBy != "" || f.UnconfirmedAbort || f.Sort != "" && f.Sort != TaskSortID):
		return f, fieldError("parent_id", "no other filter and no sort but id with it: a parent's children are paged by id, from cursor")
	}
	if f.Sort == "" {
		f.Sort = TaskSortID
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	return f, nil
}

// TaskPage is one page of ListTasks, in its filter's Sort.
type TaskPage struct {
	Tasks []Task `json:"tasks"`
	// Next is the cursor of the following page (the last task_id of this
	// one), or 0 when this page is the last.
	Next int64 `json:"next_cursor,omitempty"`
	// NextKey, under a sort by a key (updated, -updated, priority), is the
	// key of the task Next names: the following page's cursor_key.
	NextKey string `json:"next_key,omitempty"`
	// Stopped, on a page listed in order stopped_first, is how many of
	// Tasks, at its head, are STOPPED (0 on a later page); nil in any
	// other order.
	Stopped *int `json:"stopped,omitempty"`
	// MoreStopped, on a page listed in order stopped_first, is set when
	// more tasks are STOPPED than its head lists.
	MoreStopped bool `json:"more_stopped,omitempty"`
}
