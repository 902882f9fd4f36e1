package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/clock"
)

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
	Enqueue(ctx context.Context, n cks.NewTask) (t cks.Task, created bool, err error)
	// EnqueueMany enqueues ns in one transaction, each item by the rule of
	// Enqueue as if enqueued one after another in order (an item whose
	// dedupe key an earlier item took gets that item's task, created
	// false), and returns one CreatedTask per item, in order. It costs a
	// constant number of statements however many items there are (one read
	// serves all their dedupe keys), and publishes TopicTasksReady once. An
	// invalid item, or one whose parent or dependency does not exist, is a
	// FieldError naming it by index (tasks[3].type) and nothing is written.
	// It is the Go API's bulk form for callers that fill a queue (no
	// operation of the table offers it: create_task's permission depends on
	// each item's parent).
	EnqueueMany(ctx context.Context, ns []cks.NewTask) ([]cks.CreatedTask, error)
	// GetTask returns the task with its dependencies, events and evidence.
	GetTask(ctx context.Context, id int64) (cks.Task, error)
	// ListTasks returns one page of tasks (without events and evidence,
	// with LastAbort).
	ListTasks(ctx context.Context, f cks.TaskFilter) (cks.TaskPage, error)
	// CountTasks counts the tasks f selects, with ListTasks' semantics for
	// States, Types and StateChangedBefore; After and Limit are ignored. An
	// unknown state is a FieldError naming state. (The stale_stop_report
	// sweeper counts {States: [STOPPED], StateChangedBefore: now - 24h}.)
	CountTasks(ctx context.Context, f cks.TaskFilter) (int, error)
	// CountTasksByState counts what CountTasks does, per state, in one
	// read: every state f names (every state when it names none) with its
	// count, 0 included, and their total.
	CountTasksByState(ctx context.Context, f cks.TaskFilter) (cks.TaskCounts, error)

	// Claim leases up to n claimable tasks of the given types (any type when
	// types is empty) to worker: state OPEN, run_after passed, not in the
	// dispatch-exclusion set; highest priority first, then oldest. Each gets
	// CLAIMED, claimed_by, claimed_at, a fresh lease token (NewLeaseToken,
	// stored as its hash), lease_expires_at = now+lease and attempts+1. The
	// tasks are returned in that order, each with its plain token.
	Claim(ctx context.Context, worker string, types []string, n int, lease time.Duration) ([]cks.ClaimedTask, error)
	// ClaimWith is Claim with its arguments in p, and the choice of
	// p.Running: each claimed task moves on to RUNNING in the same
	// transaction, with the CLAIMED event and then the RUNNING one that
	// MarkRunning would write (one commit less for an executor that starts
	// at once; worker.Executor skips MarkRunning for a RUNNING task).
	ClaimWith(ctx context.Context, p ClaimParams) ([]cks.ClaimedTask, error)
	// MarkRunning moves a claimed task to RUNNING.
	MarkRunning(ctx context.Context, id int64, leaseToken string) (cks.Task, error)
	// Touch is the lease heartbeat: it renews the lease for the duration given
	// at claim and reports whether the lease is still held (the seed's
	// touch_outbox_task convention). held is false exactly when err wraps
	// ErrLeaseLost (or ErrNotFound, or is the FieldError of a token that is
	// not text), so callers may test either.
	Touch(ctx context.Context, id int64, leaseToken string) (held bool, err error)
	// AddEvidence records evidence for the current attempt and revision.
	AddEvidence(ctx context.Context, id int64, leaseToken, kind, body string) (cks.Evidence, error)
	// Complete ends the attempt successfully: COMPLETED with result, or
	// NEEDS_REVIEW when needsReview. On COMPLETED, dependants whose
	// dependencies are now all COMPLETED move WAITING → OPEN in the same
	// transaction. The lease is revoked.
	Complete(ctx context.Context, id int64, leaseToken string, needsReview bool, result string) (cks.Task, error)
	// Fail ends the attempt unsuccessfully. When retryable and attempts <
	// max_attempts the task goes back to OPEN with run_after = now + backoff
	// with jitter (ledger.Backoff); otherwise it is FAILED (reason "max
	// attempts: …" when retryable but exhausted) and its WAITING dependants
	// become BLOCKED. The lease is revoked.
	Fail(ctx context.Context, id int64, leaseToken string, retryable bool, reason string) (cks.Task, error)
	// RequestInput parks the task in NEEDS_INPUT with question, revoking the
	// lease. It does not burn an attempt: the claim's increment is given back
	// (attempts-1), so the next claim after Answer carries the same attempt
	// number and the evidence recorded before the question stays current.
	RequestInput(ctx context.Context, id int64, leaseToken, question string) (cks.Task, error)
	// Answer records text as the answer to a NEEDS_INPUT task and returns it
	// to OPEN (run_after cleared).
	Answer(ctx context.Context, id int64, actor, text string) (cks.Task, error)
	// ClaimReview moves a NEEDS_REVIEW task to REVIEWING under a fresh lease
	// held by reviewer (attempts unchanged), returned with its plain token
	// as Claim returns it.
	ClaimReview(ctx context.Context, id int64, reviewer string, lease time.Duration) (cks.ClaimedTask, error)
	// Approve ends a review: REVIEWING → COMPLETED (releasing dependants like
	// Complete), recording note.
	Approve(ctx context.Context, id int64, leaseToken, note string) (cks.Task, error)
	// Reject ends a review: REVIEWING → OPEN, recording note as the review.
	Reject(ctx context.Context, id int64, leaseToken, note string) (cks.Task, error)
	// Cancel moves a non-terminal task to CANCELLED (terminal), revoking any
	// lease, so its executor gets ErrLeaseLost on its next call; WAITING
	// dependants become BLOCKED. A CLAIMED or RUNNING task also gets a
	// pending Abort (deadline DefaultAbortDeadline) and TopicTaskAborts is
	// published, so its executor learns of the cancel at once and confirms;
	// Cancel itself does not wait.
	Cancel(ctx context.Context, id int64, actor, reason string) (cks.Task, error)
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

// ClaimParams is one claim (Tasks.ClaimWith).
type ClaimParams struct {
	// Worker holds the leases (claimed_by, the events' actor).
	Worker string
	// Types restricts the claim to these task types; empty means any.
	Types []string
	// N is the most tasks the claim takes.
	N int
	// Lease is each lease's duration (Touch renews it by as much).
	Lease time.Duration
	// Running moves each claimed task on to RUNNING at once, as a
	// MarkRunning right after the claim would, in the claim's transaction.
	Running bool
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
	var fe *cks.FieldError
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
		return &cks.FieldError{Field: "worker", Expected: "a non-empty worker name"}
	case n < 1 || n > cks.MaxListLimit:
		return &cks.FieldError{Field: "n", Expected: fmt.Sprintf("an integer from 1 to %d", cks.MaxListLimit)}
	case lease < time.Millisecond:
		return &cks.FieldError{Field: "lease", Expected: "a positive lease duration of at least 1ms"}
	}
	return nil
}

// SortClaimed orders claimed tasks as a claim picks them: highest priority,
// then oldest, then lowest id (RETURNING gives no order).
func SortClaimed(ts []cks.ClaimedTask) {
	slices.SortFunc(ts, func(x, y cks.ClaimedTask) int {
		if x.Priority != y.Priority {
			return y.Priority - x.Priority
		}
		if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
}
