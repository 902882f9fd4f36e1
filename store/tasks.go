package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks/clock"
)

// ErrLeaseLost means an executor call carried a lease token that is no longer
// current: the task was reclaimed, cancelled, parked or completed since the
// token was issued. It wraps ErrConflict, so errors.Is(err, ErrConflict) also
// holds; test for ErrLeaseLost first when the difference matters.
var ErrLeaseLost = fmt.Errorf("lease lost: %w", ErrConflict)

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
)

// TaskState is the lifecycle state of a task. The states, the allowed
// transitions between them and the dispatch-exclusion set are defined in package
// ledger (ADR 0020); store only carries the value.
type TaskState string

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
	// Restarts counts operator restarts (STOPPED → OPEN); never attempts.
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
	// LeaseRenewedAt is the time of the claim or of the last Touch.
	LeaseRenewedAt time.Time `json:"lease_renewed_at,omitzero"`
	// RunAfter holds a retried task back from claims until that time.
	RunAfter   time.Time `json:"run_after,omitzero"`
	Result     string    `json:"result,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	Question   string    `json:"question,omitempty"`
	Answer     string    `json:"answer,omitempty"`
	ReviewNote string    `json:"review_note,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// StateChangedAt is the time of the last state change (set at enqueue
	// and by every transition; other writes such as Touch leave it). Rows
	// written before the column existed got their updated_at as a backfill
	// when the database was upgraded.
	StateChangedAt time.Time `json:"state_changed_at"`
	// LastAbort is the task's most recent abort request, if any; filled by
	// GetTask and ListTasks (so a listing can show an unconfirmed abort).
	LastAbort *Abort `json:"last_abort,omitempty"`
	// Events is the task's history, oldest first; filled by GetTask only.
	Events []TaskEvent `json:"events,omitempty"`
	// Current is what the current attempt recorded (evidence, decisions,
	// workspace); History every earlier attempt, oldest first, including
	// aborted ones. Filled by GetTask only (see GroupAttempts).
	Current *AttemptView  `json:"current,omitempty"`
	History []AttemptView `json:"history,omitempty"`
	// Aborts are the task's abort requests, oldest first; filled by GetTask only.
	Aborts []Abort `json:"aborts,omitempty"`
}

// ClaimedTask is a task as Claim and ClaimReview return it to the claimer:
// the task and the plain fencing token of the lease just created, which the
// claimer passes to every executor call of that lease. The token is shown
// this once: the store keeps only its hash (HashLeaseToken), Task has no
// field for it, and no other call returns it, so nobody but the claimer can
// make the fenced calls of the lease (a reader of the task cannot take it
// over).
type ClaimedTask struct {
	Task
	LeaseToken string `json:"lease_token"`
}

// leaseTokenBytes is the randomness of a lease token.
const leaseTokenBytes = 16

// NewLeaseToken returns a fresh random lease token (hex, 128 bits).
func NewLeaseToken() string {
	b := make([]byte, leaseTokenBytes)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (it aborts the program instead)
	return hex.EncodeToString(b)
}

// HashLeaseToken returns the stored form of a lease token: its SHA-256, hex
// (as bearer tokens are stored). Fenced calls compare hashes, so a database
// read, a backup or a log of the table yields no usable token.
func HashLeaseToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
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

// NewTask is the input of Enqueue.
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
}

// Validate reports the first field of n that Enqueue must refuse, and fills in
// defaults (payload {}, max attempts) on the returned copy.
func (n NewTask) Validate() (NewTask, error) {
	if err := n.validateText(); err != nil {
		return n, err
	}
	switch {
	case n.Type == "":
		return n, fieldError("type", "a non-empty task type")
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

// validateText checks n's strings with ValidateText and its JSON with
// ValidateJSON (once it is valid JSON: Validate says so otherwise).
func (n NewTask) validateText() error {
	for _, f := range []struct{ name, v string }{
		{"type", n.Type}, {"title", n.Title}, {"description", n.Description},
		{"acceptance_criteria", n.AcceptanceCriteria}, {"dedupe_key", n.DedupeKey}, {"created_by", n.CreatedBy},
	} {
		if err := ValidateText(f.name, f.v); err != nil {
			return err
		}
	}
	return validJSONFields(n.Payload, n.Metadata)
}

// validJSONFields is ValidateJSON of a payload and metadata that are valid
// JSON (whether they are is each caller's own check, with its own message).
func validJSONFields(payload, metadata json.RawMessage) error {
	for _, f := range []struct {
		name string
		b    json.RawMessage
	}{{"payload", payload}, {"metadata", metadata}} {
		if len(f.b) > 0 && json.Valid(f.b) {
			if err := ValidateJSON(f.name, f.b); err != nil {
				return err
			}
		}
	}
	return nil
}

// TaskFilter selects a page of ListTasks.
type TaskFilter struct {
	// States and Types restrict the result when non-empty (any of them).
	States []TaskState
	Types  []string
	// StateChangedBefore, when not zero, keeps only tasks whose state last
	// changed at or before it (Task.StateChangedAt <= StateChangedBefore).
	StateChangedBefore time.Time
	// After is the cursor: only tasks with task_id > After are listed.
	After int64
	// Limit is the page size, 1..MaxListLimit; 0 means DefaultListLimit.
	Limit int
}

// Validate reports the first bad field of f (States are checked by the
// backends against package ledger) and returns f with its default limit.
func (f TaskFilter) Validate() (TaskFilter, error) {
	if err := ValidateTexts("type", f.Types); err != nil {
		return f, err
	}
	switch {
	case f.Limit < 0 || f.Limit > MaxListLimit:
		return f, fieldError("limit", fmt.Sprintf("an integer from 1 to %d", MaxListLimit))
	case f.After < 0:
		return f, fieldError("cursor", "a task id")
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	return f, nil
}

// TaskPage is one page of ListTasks, ordered by task_id.
type TaskPage struct {
	Tasks []Task `json:"tasks"`
	// Next is the cursor of the following page (the last task_id of this
	// one), or 0 when this page is the last.
	Next int64 `json:"next_cursor,omitempty"`
}

// Tasks is the task ledger (ADR 0020 with the leased outbox of ADR-014/016).
// Every state change goes through the transition table of package ledger and
// appends a TaskEvent in the same transaction; an illegal change is an error
// wrapping ErrConflict that names the current and the attempted state, and
// changes nothing. Unknown ids are ErrNotFound naming the id. Executor calls
// take (id, leaseToken) and fail with ErrLeaseLost when the token is not the
// task's current one (compared by HashLeaseToken: only hashes are stored). Times come from the store's clock (store.WithClock).
type Tasks interface {
	// Enqueue stores a new task: OPEN, or WAITING when a dependency is not
	// COMPLETED yet, or BLOCKED when one is already FAILED or CANCELLED. When
	// DedupeKey matches a non-terminal task, that task is returned instead,
	// with created false and no error. A missing dependency or parent is a
	// FieldError naming depends_on or parent_id. A new task cannot close a
	// dependency cycle (nothing depends on it yet); dependency edits (next
	// issue) check with ledger.Cycle.
	Enqueue(ctx context.Context, n NewTask) (t Task, created bool, err error)
	// GetTask returns the task with its dependencies, events and evidence.
	GetTask(ctx context.Context, id int64) (Task, error)
	// ListTasks returns one page of tasks (without events and evidence,
	// with LastAbort).
	ListTasks(ctx context.Context, f TaskFilter) (TaskPage, error)
	// CountTasks counts the tasks f selects, with ListTasks' semantics for
	// States, Types and StateChangedBefore; After and Limit are ignored. An
	// unknown state is a FieldError naming state. (The stale_stop_report
	// sweeper counts {States: [STOPPED], StateChangedBefore: now - 24h}.)
	CountTasks(ctx context.Context, f TaskFilter) (int, error)

	// Claim leases up to n claimable tasks of the given types (any type when
	// types is empty) to worker: state OPEN, run_after passed, not in the
	// dispatch-exclusion set; highest priority first, then oldest. Each gets
	// CLAIMED, claimed_by, claimed_at, a fresh lease token (NewLeaseToken,
	// stored as its hash), lease_expires_at = now+lease and attempts+1. The
	// tasks are returned in that order, each with its plain token.
	Claim(ctx context.Context, worker string, types []string, n int, lease time.Duration) ([]ClaimedTask, error)
	// MarkRunning moves a claimed task to RUNNING.
	MarkRunning(ctx context.Context, id int64, leaseToken string) (Task, error)
	// Touch is the lease heartbeat: it renews the lease for the duration given
	// at claim and reports whether the lease is still held (the seed's
	// touch_outbox_task convention). held is false exactly when err wraps
	// ErrLeaseLost (or ErrNotFound, or is the FieldError of a token that is
	// not text), so callers may test either.
	Touch(ctx context.Context, id int64, leaseToken string) (held bool, err error)
	// AddEvidence records evidence for the current attempt and revision.
	AddEvidence(ctx context.Context, id int64, leaseToken, kind, body string) (Evidence, error)
	// Complete ends the attempt successfully: COMPLETED with result, or
	// NEEDS_REVIEW when needsReview. On COMPLETED, dependants whose
	// dependencies are now all COMPLETED move WAITING → OPEN in the same
	// transaction. The lease is revoked.
	Complete(ctx context.Context, id int64, leaseToken string, needsReview bool, result string) (Task, error)
	// Fail ends the attempt unsuccessfully. When retryable and attempts <
	// max_attempts the task goes back to OPEN with run_after = now + backoff
	// with jitter (ledger.Backoff); otherwise it is FAILED (reason "max
	// attempts: …" when retryable but exhausted) and its WAITING dependants
	// become BLOCKED. The lease is revoked.
	Fail(ctx context.Context, id int64, leaseToken string, retryable bool, reason string) (Task, error)
	// RequestInput parks the task in NEEDS_INPUT with question, revoking the
	// lease. It does not burn an attempt: the claim's increment is given back
	// (attempts-1), so the next claim after Answer carries the same attempt
	// number and the evidence recorded before the question stays current.
	RequestInput(ctx context.Context, id int64, leaseToken, question string) (Task, error)
	// Answer records text as the answer to a NEEDS_INPUT task and returns it
	// to OPEN (run_after cleared).
	Answer(ctx context.Context, id int64, actor, text string) (Task, error)
	// ClaimReview moves a NEEDS_REVIEW task to REVIEWING under a fresh lease
	// held by reviewer (attempts unchanged), returned with its plain token
	// as Claim returns it.
	ClaimReview(ctx context.Context, id int64, reviewer string, lease time.Duration) (ClaimedTask, error)
	// Approve ends a review: REVIEWING → COMPLETED (releasing dependants like
	// Complete), recording note.
	Approve(ctx context.Context, id int64, leaseToken, note string) (Task, error)
	// Reject ends a review: REVIEWING → OPEN, recording note as the review.
	Reject(ctx context.Context, id int64, leaseToken, note string) (Task, error)
	// Cancel moves a non-terminal task to CANCELLED (terminal), revoking any
	// lease, so its executor gets ErrLeaseLost on its next call; WAITING
	// dependants become BLOCKED. A CLAIMED or RUNNING task also gets a
	// pending Abort (deadline DefaultAbortDeadline) and TopicTaskAborts is
	// published, so its executor learns of the cancel at once and confirms;
	// Cancel itself does not wait.
	Cancel(ctx context.Context, id int64, actor, reason string) (Task, error)
	// ReclaimExpired reclaims every CLAIMED or RUNNING task whose lease has
	// expired (lease_expires_at <= now) and was not renewed within staleWindow
	// (lease_renewed_at <= now-staleWindow): back to OPEN (the attempt stays
	// counted), or FAILED with reason "max attempts" when attempts reached
	// max_attempts. A REVIEWING task whose review lease is stale in the same
	// sense goes back to NEEDS_REVIEW. It returns how many tasks it reclaimed.
	ReclaimExpired(ctx context.Context, now time.Time, staleWindow time.Duration) (int, error)
	// ReleaseDependencies is the safety net of the dependency_release
	// sweeper for WAITING tasks (Complete, Fail and Cancel already do this
	// work in their own transactions): every WAITING task whose dependencies
	// are all COMPLETED (vacuously, one with none) moves to OPEN, and every
	// WAITING task with a FAILED or CANCELLED dependency moves to BLOCKED
	// with a reason naming that dependency, cascading to its own WAITING
	// dependants as Fail does. Every change goes through the transition
	// table with an event by actor "dependency_release"; dispatch-excluded
	// tasks (ledger.DispatchExcluded) are never touched. One transaction.
	ReleaseDependencies(ctx context.Context) (DependencyRelease, error)
}

// ActorDependencyRelease is the event actor of ReleaseDependencies.
const ActorDependencyRelease = "dependency_release"

// DefaultStaleWindow is the reaper's default: a lease not renewed for five
// minutes is reclaimed.
const DefaultStaleWindow = 5 * time.Minute

// Options are the settings every backend's Open accepts.
type Options struct {
	// Clock tells the time of every write whose time is not an argument.
	Clock clock.Clock
	// ChangePollInterval is the change poll period of a polling backend
	// (see WithChangePollInterval); DefaultChangePollInterval when <= 0.
	ChangePollInterval time.Duration
}

// Option sets one of the Options.
type Option func(*Options)

// WithClock makes the store read the time from c instead of the system clock.
func WithClock(c clock.Clock) Option { return func(o *Options) { o.Clock = c } }

// ApplyOptions returns the Options that opts produce, with defaults for the
// rest (the system clock).
func ApplyOptions(opts []Option) Options {
	o := Options{Clock: clock.System{}}
	for _, f := range opts {
		f(&o)
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.ChangePollInterval <= 0 {
		o.ChangePollInterval = DefaultChangePollInterval
	}
	return o
}

// IsFieldError reports whether err is a FieldError naming field.
func IsFieldError(err error, field string) bool {
	var fe *FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// ValidateClaim reports the first bad argument of a claim: an empty worker, a
// batch size outside 1..MaxListLimit, or a lease shorter than a millisecond.
func ValidateClaim(worker string, n int, lease time.Duration) error {
	if err := ValidateText("worker", worker); err != nil {
		return err
	}
	switch {
	case worker == "":
		return &FieldError{Field: "worker", Expected: "a non-empty worker name"}
	case n < 1 || n > MaxListLimit:
		return &FieldError{Field: "n", Expected: fmt.Sprintf("an integer from 1 to %d", MaxListLimit)}
	case lease < time.Millisecond:
		return &FieldError{Field: "lease", Expected: "a positive lease duration of at least 1ms"}
	}
	return nil
}

// SortClaimed orders claimed tasks as a claim picks them: highest priority,
// then oldest, then lowest id (RETURNING gives no order).
func SortClaimed(ts []ClaimedTask) {
	slices.SortFunc(ts, func(x, y ClaimedTask) int {
		if x.Priority != y.Priority {
			return y.Priority - x.Priority
		}
		if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
}
