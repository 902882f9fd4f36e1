// Package driver is the line between the rules of cks and its SQL. A Driver
// is one database (SQLite or Postgres); its Executor offers single-statement
// primitives with params structs, per domain (tasks, knowledge, liveness,
// control, principals), plus transactions and a change listener. The
// primitives decide nothing: which state a task may move to, when a lease is
// lost, what a claim may take — every such rule is Go code in a service
// (ledger, knowledge, liveness, sweeper, auth) that calls them, once, for
// both dialects. A difference between the dialects (placeholders, row locks,
// NOTIFY versus a polled change counter, time encoding) is absorbed inside
// a driver and never shows above this package.
//
// The shape follows River's riverdriver: primitives named Noun + Verb
// (TaskGetMany, TaskUpdateMany, AbortInsert), bulk forms from the start,
// one conformance suite (drivertest) that every driver passes.
//
// A driver is opened by its package: sqlite.Open(ctx, path, opts...) and
// postgres.Open(ctx, url, opts...), which create or upgrade the schema
// (package internal/driver/schema). The options (Option) are one list that
// serves the driver and the services above it: a driver uses
// driver.WithChangePollInterval (the SQLite listener's poll period) and
// driver.WithClock only to date the storage faults Health remembers — no
// primitive reads the time, every time it stores is a parameter.
//
// Opening succeeds on a database that refuses writes as long as its schema
// is current (nothing to create or upgrade): Health then reports it, and
// every write fails with cks.ErrStorageReadOnly.
package driver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Errors a driver returns. Drivers also wrap the storage faults of package
// store (cks.ErrStorageReadOnly, cks.ErrStorageFull) where they apply.
var (
	// ErrNoRows means a primitive that reads one row found none. Services
	// turn it into cks.ErrNotFound naming what they looked for.
	ErrNoRows = errors.New("driver: no rows")
	// ErrUniqueViolation means an insert or update broke a unique index
	// (a dedupe key taken by a concurrent enqueue, a duplicate principal).
	ErrUniqueViolation = errors.New("driver: unique violation")
	// ErrSingle means a transaction that promised one statement
	// (TxOptions.Single) ran a second.
	ErrSingle = errors.New("driver: a second statement in a Single transaction")
)

// Driver is one database.
type Driver interface {
	// Dialect is "sqlite" or "postgres".
	Dialect() string
	// Executor runs primitives outside any transaction (each its own
	// statement; on SQLite reads use the reader pool).
	Executor() Executor
	// WithTx runs fn in one transaction and commits when fn returns nil.
	// SQLite: BEGIN IMMEDIATE on the one writer connection (read-only
	// transactions on the reader pool); Postgres: a pool transaction,
	// READ COMMITTED for writes, REPEATABLE READ for read-only ones, run
	// again (up to a few times) when Postgres aborts it as a deadlock or
	// serialization failure — so fn must only assign its results. The
	// Executor handed to fn is valid only inside fn, and fn writes through
	// it alone: on SQLite a write through the Driver inside a write
	// transaction waits for the one writer connection fn holds.
	WithTx(ctx context.Context, opts TxOptions, fn func(ctx context.Context, ex Executor) error) error
	// Listener returns a new, unconnected listener of change topics. A
	// process makes one (package notifier) and multiplexes it.
	Listener() Listener
	// Health tells, cheaply and without writing, whether the database
	// takes writes (backend.Backend's StorageHealth): an error matching
	// cks.ErrStorageReadOnly when it refuses them (SQLite: the file was
	// opened read-only, which SQLite does when this process may not write
	// the file, its directory or its file system; Postgres: the server runs
	// this driver's transactions read-only — a hot standby, or
	// default_transaction_read_only set — which costs one query); else the
	// storage fault (matching cks.ErrUnavailable) that a write
	// transaction of this driver (WithTx) met within driver.FaultMemory, by
	// the options' clock: no probe tells a full disk without writing, so
	// the last failed write stands for the storage that long; else nil.
	// Any other error means the check itself failed.
	Health(ctx context.Context) error
	// Close releases every connection.
	Close() error
}

// SerialWriter is implemented by a Driver whose write transactions run one
// at a time, whatever its callers do (SQLite: one writer connection and its
// group commit). There a batch of the ledger's run beside another gains
// nothing — the second waits for the first's commit, or joins its
// transaction as one more savepoint — and fragments both: the ledger then
// runs its batches one at a time, and the calls that arrive meanwhile
// gather into the next.
type SerialWriter interface {
	Driver
	// WritesSerially marks the driver; it does nothing.
	WritesSerially()
}

// TxOptions are the options of WithTx.
type TxOptions struct {
	// ReadOnly asks for a consistent read-only snapshot.
	ReadOnly bool
	// Single promises that fn runs one primitive that Postgres carries
	// in one statement (TaskClaim): the Postgres driver then sends that
	// statement alone, as a transaction of its own — no BEGIN, no COMMIT,
	// one round trip where a transaction takes two — and fails a second
	// one with ErrSingle (the first has committed by then: breaking the
	// promise is a bug of the caller, which the error names). SQLite,
	// whose writes share a group commit, runs fn as any transaction.
	Single bool
}

// Executor is every primitive, on a pool or inside a transaction.
type Executor interface {
	TaskExecutor
	KnowledgeExecutor
	LivenessExecutor
	ControlExecutor
	LeaderExecutor
	ScheduleExecutor
	LimitExecutor
	UsageExecutor
	PrincipalExecutor
	SessionExecutor
	// Notify publishes topic, delivered to listeners when (and only if)
	// the surrounding transaction commits. Postgres: pg_notify; SQLite: a
	// bump of the topic's counter in cks_changes, which listeners poll.
	Notify(ctx context.Context, topic string) error
}

// Listener delivers the topics Notify published, from any process on the
// database. It is a wake-up, never data: coalesced or missed notifications
// lose nothing as long as the subscriber re-reads.
type Listener interface {
	// Connect establishes the listener (Postgres: a dedicated connection
	// outside the pool, LISTEN; SQLite: the first read of the counters).
	Connect(ctx context.Context) error
	// WaitForTopics blocks until at least one topic was published since
	// the previous call (or since Connect), and returns them (distinct,
	// sorted), or ctx's error when ctx ends first. Another error means the
	// connection is lost: the caller closes the listener and connects it
	// again, and must assume it missed topics.
	WaitForTopics(ctx context.Context) ([]string, error)
	// Close ends the connection; Connect may be called again after it.
	Close(ctx context.Context) error
}

// Lock is the row lock a read takes inside a transaction. SQLite has one
// writer, so every lock is a no-op there.
type Lock int

// The row locks.
const (
	// LockNone reads without locking.
	LockNone Lock = iota
	// LockUpdate waits for and takes the rows (FOR UPDATE).
	LockUpdate
	// LockUpdateSkip takes the rows no one else holds and skips the rest
	// (FOR UPDATE SKIP LOCKED): claims and reapers.
	LockUpdateSkip
	// LockShare keeps the rows from changing until commit (FOR SHARE):
	// dependency states read by an enqueue.
	LockShare
)

// Times are UTC with microsecond precision (driver.Time) on the way in and
// out of every driver; a zero time.Time stands for SQL NULL.

// TaskRow is one row of cks_outbox_tasks as stored. It is not a read view:
// it carries the hash of the current lease token, which never leaves the
// services.
type TaskRow struct {
	ID                 int64
	Type               string
	Title              string
	Description        string
	AcceptanceCriteria string
	Payload            []byte
	State              string
	Priority           int
	Attempts           int
	MaxAttempts        int
	Restarts           int
	Revision           int
	ParentID           int64 // 0: none
	DedupeKey          string
	CreatedBy          string
	ClaimedBy          string
	ClaimedAt          time.Time
	// LeaseTokenHash is the SHA-256 (hex) of the current lease token; ""
	// when there is no lease.
	LeaseTokenHash string
	LeaseExpiresAt time.Time
	LeaseRenewedAt time.Time
	// LeaseMs is the lease a Heartbeat renews for.
	LeaseMs int64
	// AgentTokenHash is AgentTokenHash of the agent credential the claim
	// issued with the current lease; "" when it issued none. It matches
	// only while LeaseTokenHash is the lease's (AgentTokenHashes), so
	// TaskClaim alone writes it: every other write leaves it as it is (an
	// insert, ""), and a lease that ends ends it.
	AgentTokenHash string
	RunAfter       time.Time
	Result         string
	LastError      string
	Question       string
	Answer         string
	ReviewNote     string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	StateChangedAt time.Time
	Metadata       []byte
	// AttemptTimeoutMs bounds an attempt from its claim (ClaimedAt); 0,
	// none. Set by an insert and by TaskUpdateMany, never by a move.
	AttemptTimeoutMs int64
	// ExpiresAt is when the task, not completed by then, is cancelled;
	// zero, never. Set by an insert and by TaskUpdateMany, never by a move.
	ExpiresAt time.Time
	// ConcurrencyKeys are the task's concurrency keys as a JSON array of
	// strings; "" for none. Set by an insert and by TaskUpdateMany, never
	// by a move.
	ConcurrencyKeys string
	// Traceparent is the W3C traceparent the task was created under; ""
	// for none. Set by an insert, never changed after it.
	Traceparent string
}

// TaskExecutor holds the primitives of the task ledger. Reads that a
// transaction relies on take a Lock; writes address rows by primary key
// (the service read and locked them first), so a bulk write never makes the
// database scan a state's index to find its rows.
type TaskExecutor interface {
	// TaskInsertMany inserts tasks (every column of the row but ID, which
	// it assigns, and AgentTokenHash) and returns them as stored, with their ids, in input
	// order (the stored form of the JSON columns is the database's: Postgres
	// normalises jsonb). A dedupe key taken by a live task is
	// ErrUniqueViolation.
	TaskInsertMany(ctx context.Context, rows []TaskRow) ([]TaskRow, error)
	// TaskChildren returns the ids of the children of task p.Parent after
	// p.After, by id, at most p.Limit of them (the index of parent_id).
	TaskChildren(ctx context.Context, p TaskChildrenParams) ([]int64, error)
	// TaskChildCount counts the children of task parent.
	TaskChildCount(ctx context.Context, parent int64) (int, error)
	// TaskGetMany reads the tasks ids, ordered by id, locked as asked.
	// Unknown ids are absent from the result (no error).
	TaskGetMany(ctx context.Context, p TaskGetManyParams) ([]TaskRow, error)
	// TaskUpdateMany writes every column but ID, Type, CreatedAt,
	// CreatedBy and AgentTokenHash of each row, by ID. It returns how many rows it wrote.
	TaskUpdateMany(ctx context.Context, rows []TaskRow) (int, error)
	// TaskMoveMany writes state moves narrowly: of each of p.Rows, by ID,
	// only the columns a move of the lifecycle changes (those OnlyMoved
	// lets differ: state, attempts, restarts, the claim and lease columns but
	// AgentTokenHash, run_after, result, last_error, question, answer, review_note,
	// updated_at, state_changed_at), and appends p.Events, in order, in the
	// same statement where the dialect allows (Postgres: a data-modifying
	// CTE; SQLite: the same statements in its one writer's transaction).
	// The events are written whether or not their rows exist. It returns
	// how many rows it wrote; zero rows and events is nothing.
	TaskMoveMany(ctx context.Context, p TaskMoveManyParams) (int, error)
	// TaskClaimable reads up to Limit tasks that a claim may take (due, of
	// a type that is not paused), locked with LockUpdateSkip, in claim
	// order (priority descending, then created_at, then id).
	TaskClaimable(ctx context.Context, p TaskClaimableParams) ([]TaskRow, error)
	// TaskClaim leases up to Limit of the tasks TaskClaimable would read,
	// in one statement where the dialect allows (Postgres: an UPDATE of
	// the rows locked SKIP LOCKED; SQLite: the same statements in its one
	// writer's transaction). The i-th row in claim order gets
	// LeaseTokenHashes[i] (so at most len(LeaseTokenHashes) rows are
	// claimed) and the values of p — nothing is decided here — and no
	// event (TaskClaimParams). It returns the rows
	// as written, in claim order, with their dependencies.
	TaskClaim(ctx context.Context, p TaskClaimParams) ([]TaskClaimed, error)
	// TaskLeaseExpired reads up to Limit tasks whose lease expired and was
	// not renewed since RenewedBefore, locked with LockUpdateSkip, by id.
	TaskLeaseExpired(ctx context.Context, p TaskLeaseExpiredParams) ([]TaskRow, error)
	// TaskAttemptsTimed reads, unlocked, up to Limit tasks after task id
	// After, by id, in one of States with a lease and an attempt timeout
	// (attempt_timeout_ms > 0), claimed at or before ClaimedBefore: the
	// attempts the lease reaper checks against their deadlines.
	TaskAttemptsTimed(ctx context.Context, p TaskAttemptsTimedParams) ([]TaskRow, error)
	// TaskExpiring reads, unlocked, the first limit tasks that have an
	// expires_at and are not COMPLETED, FAILED or CANCELLED, by expires_at
	// then id.
	TaskExpiring(ctx context.Context, limit int) ([]TaskRow, error)
	// TaskList reads one page of tasks ordered by id (Limit rows at most),
	// locked as asked.
	TaskList(ctx context.Context, p TaskListParams) ([]TaskRow, error)
	// TaskCount counts the tasks p selects.
	TaskCount(ctx context.Context, p TaskCountParams) (int, error)
	// TaskCountByState counts the tasks p selects per state, in one read:
	// one row per state that has any, ordered by state.
	TaskCountByState(ctx context.Context, p TaskCountParams) ([]TaskStateCount, error)
	// TaskTypesDue returns, per task type that is not paused with OPEN
	// tasks whose run_after is not after now, how many there are and since
	// when the oldest has been OPEN; ordered by type.
	TaskTypesDue(ctx context.Context, now time.Time) ([]TaskTypeDue, error)
	// TaskNextDue returns the earliest run_after after now of an OPEN task,
	// the zero time when no OPEN task waits to become due.
	TaskNextDue(ctx context.Context, now time.Time) (time.Time, error)
	// TaskKeysHeld returns the concurrency keys (TaskRow.ConcurrencyKeys)
	// of every CLAIMED or RUNNING task that has keys, one entry per task.
	TaskKeysHeld(ctx context.Context) ([]string, error)
	// TaskTypesHeld returns the task types of the CLAIMED and RUNNING
	// tasks, ordered.
	TaskTypesHeld(ctx context.Context) ([]string, error)
	// TypePause records r's type as paused and reports whether it did
	// (false: the type was paused already, and its row is left as it is).
	TypePause(ctx context.Context, r PausedTypeRow) (bool, error)
	// TypeResume deletes a type's pause and reports whether there was one.
	TypeResume(ctx context.Context, taskType string) (bool, error)
	// TypePausedGet returns a paused type's row (ErrNoRows when the type
	// is not paused).
	TypePausedGet(ctx context.Context, taskType string) (PausedTypeRow, error)
	// TypePausedList returns every paused type's row, by type.
	TypePausedList(ctx context.Context) ([]PausedTypeRow, error)
	// TaskEventMinutes counts the task events at or after p.Since and
	// before p.Until per minute (of their time, truncated) and transition,
	// ordered by minute, from and to.
	TaskEventMinutes(ctx context.Context, p TaskEventWindowParams) ([]TaskEventMinute, error)
	// TaskClaimWaits returns the claims (events to CLAIMED) of p's window,
	// newest first, at most p.Limit, each with the time its task last
	// became OPEN before it (the claim's own time when it never did).
	TaskClaimWaits(ctx context.Context, p TaskEventWindowParams) ([]TaskClaimWait, error)
	// TaskDedupeFind returns the id of the task p names, or ErrNoRows.
	TaskDedupeFind(ctx context.Context, p TaskDedupeFindParams) (int64, error)
	// TaskDedupeFindMany returns, for each of p.Keys that a task has, the
	// task TaskDedupeFind with IncludeTerminal finds (a live task first,
	// else the newest terminal one) and whether it is terminal, ordered by
	// key: one read serves a batch of enqueues, whichever kind each asks.
	TaskDedupeFindMany(ctx context.Context, p TaskDedupeFindManyParams) ([]TaskDedupeHit, error)

	// TaskDepInsertMany and TaskDepDeleteMany add and remove dependency
	// edges (task depends on dependency). Adding an edge that exists is
	// ErrUniqueViolation; removing one that does not is nothing.
	TaskDepInsertMany(ctx context.Context, deps []TaskDep) error
	TaskDepDeleteMany(ctx context.Context, deps []TaskDep) error
	// TaskDepList returns the dependency edges of the tasks ids (their
	// dependencies), ordered by task then dependency.
	TaskDepList(ctx context.Context, ids []int64) ([]TaskDep, error)
	// TaskDepListAdjacent returns the dependency edges with an end among
	// ids — their dependencies and their dependants' edges to them —
	// ordered by task then dependency, each once: one statement tells a
	// completion the task's own dependencies and whether anything waits
	// for it.
	TaskDepListAdjacent(ctx context.Context, ids []int64) ([]TaskDep, error)
	// TaskDependants reads the tasks in State that depend on any of
	// DependsOn, ordered by id, locked as asked.
	TaskDependants(ctx context.Context, p TaskDependantsParams) ([]TaskRow, error)
	// TaskLockDependencyGraph serialises dependency edits that could
	// together close a cycle (Postgres: a transaction-scoped advisory lock
	// of the schema; SQLite: nothing, its one writer already does).
	TaskLockDependencyGraph(ctx context.Context) error

	// TaskEventInsertMany appends events (append-only table), in order.
	TaskEventInsertMany(ctx context.Context, events []TaskEventRow) error
	// TaskEventList returns the events of task id, oldest first.
	TaskEventList(ctx context.Context, taskID int64) ([]TaskEventRow, error)
	// TaskEventStoppedMany returns the newest event into STOPPED of each
	// of the tasks that has one, ordered by task: who stopped it, when,
	// why (the board's STOPPED rows).
	TaskEventStoppedMany(ctx context.Context, taskIDs []int64) ([]TaskEventRow, error)
	// TaskPurgeCandidates returns the ids of up to p.Limit tasks TaskPurge
	// may delete, by id: in one of p.States, state changed before
	// p.Before, no child, no dependant outside p.States.
	TaskPurgeCandidates(ctx context.Context, p TaskPurgeCandidatesParams) ([]int64, error)
	// TaskPurge deletes those of p.IDs that are still candidates (as
	// TaskPurgeCandidates selects them, at the time of the call) with
	// every row of theirs — dependencies both ways, events, evidence,
	// decisions, aborts, task credentials — lifting the append-only
	// triggers of events and decisions for the statements and restoring
	// them before it returns (call it in a transaction: its DDL and
	// deletes commit together, or not at all). It returns the ids it
	// deleted. The one primitive that deletes tasks (internal/driver/*/internal/dbsqlc/purge.sql).
	TaskPurge(ctx context.Context, p TaskPurgeParams) ([]int64, error)
	// EvidenceInsert and DecisionInsert append one record and return it
	// with its id.
	EvidenceInsert(ctx context.Context, e EvidenceRow) (EvidenceRow, error)
	EvidenceList(ctx context.Context, taskID int64) ([]EvidenceRow, error)
	// OutputAppend appends a chunk of live output to its task (issue 43
	// item 3) and returns it: o's TaskID, Attempt, Restart, Stream, Body,
	// Size and CreatedAt; the row's Seq is the task's next, its ByteOffset
	// where the attempt's output so far ends. The caller holds the task's
	// row locked, so two appends never take one seq.
	OutputAppend(ctx context.Context, o OutputRow) (OutputRow, error)
	// OutputTrim deletes the chunks of an attempt that start before p.Cut
	// and precede p.Before (the note among them), and returns what it
	// deleted.
	OutputTrim(ctx context.Context, p OutputTrimParams) ([]OutputTrimmed, error)
	// OutputNote inserts o as it is: the note of an attempt's dropped
	// bytes (Size 0, Dropped > 0).
	OutputNote(ctx context.Context, o OutputRow) error
	// OutputList returns up to p.Limit chunks of task p.TaskID after seq
	// p.After, in seq order.
	OutputList(ctx context.Context, p OutputListParams) ([]OutputRow, error)
	// OutputHeads returns the newest seq of each of ids that has output.
	OutputHeads(ctx context.Context, ids []int64) ([]OutputHead, error)
	DecisionInsert(ctx context.Context, d DecisionRow) (DecisionRow, error)
	DecisionList(ctx context.Context, taskID int64) ([]DecisionRow, error)

	// AbortInsert records an abort request and returns it with its id.
	AbortInsert(ctx context.Context, a AbortRow) (AbortRow, error)
	// AbortGet reads one abort, locked as asked (ErrNoRows).
	AbortGet(ctx context.Context, p AbortGetParams) (AbortRow, error)
	// AbortGetMany reads the aborts ids, ordered by id, locked as asked.
	// Unknown ids are absent from the result (no error).
	AbortGetMany(ctx context.Context, p AbortGetManyParams) ([]AbortRow, error)
	// AbortFindLatest returns the newest abort of TaskID naming
	// LeaseTokenHash (never one naming no lease), locked as asked
	// (ErrNoRows).
	AbortFindLatest(ctx context.Context, p AbortFindLatestParams) (AbortRow, error)
	// AbortUpdateMany writes Outcome and ResolvedAt of aborts, by ID, and
	// returns how many it wrote.
	AbortUpdateMany(ctx context.Context, aborts []AbortRow) (int, error)
	// AbortList returns the aborts of a task, oldest first.
	AbortList(ctx context.Context, taskID int64) ([]AbortRow, error)
	// AbortLatestMany returns the newest abort of each of the tasks that
	// has one, ordered by task.
	AbortLatestMany(ctx context.Context, taskIDs []int64) ([]AbortRow, error)
	// AbortPendingDue reads up to Limit aborts with Outcome whose deadline
	// is at or before Now, by id, locked with LockUpdateSkip.
	AbortPendingDue(ctx context.Context, p AbortPendingDueParams) ([]AbortRow, error)
}

// TaskChildrenParams selects a page of a task's children.
type TaskChildrenParams struct {
	Parent int64
	After  int64
	Limit  int
}

// TaskGetManyParams selects tasks by id.
type TaskGetManyParams struct {
	IDs  []int64
	Lock Lock
}

// TaskMoveManyParams are the state moves of TaskMoveMany: the rows as
// moved and their events.
type TaskMoveManyParams struct {
	Rows []TaskRow
	// Events carry no Changes: an edit's event is written by
	// TaskEventInsertMany (TaskMoveMany refuses one that has changes, which
	// it would not write).
	Events []TaskEventRow
}

// MoveEventsWithoutChanges is TaskMoveMany's refusal of an event with
// Changes, which it would not write.
func MoveEventsWithoutChanges(events []TaskEventRow) error {
	for _, ev := range events {
		if ev.Changes != "" {
			return fmt.Errorf("task move: the event of task %d has changes, which TaskMoveMany does not write (TaskEventInsertMany does)", ev.TaskID)
		}
	}
	return nil
}

// OnlyMoved reports whether after differs from before only in the columns
// TaskMoveMany writes, so that writing it narrowly loses nothing. It is a
// comparison of columns, not a rule of the lifecycle: a caller that changed
// anything else (a title, the payload) writes the whole row (TaskUpdateMany).
func OnlyMoved(before, after TaskRow) bool {
	return before.ID == after.ID && before.Type == after.Type && before.Title == after.Title &&
		before.Description == after.Description && before.AcceptanceCriteria == after.AcceptanceCriteria &&
		before.Priority == after.Priority && before.MaxAttempts == after.MaxAttempts &&
		before.AttemptTimeoutMs == after.AttemptTimeoutMs && before.ExpiresAt.Equal(after.ExpiresAt) &&
		before.ConcurrencyKeys == after.ConcurrencyKeys && before.Traceparent == after.Traceparent &&
		before.Revision == after.Revision && before.ParentID == after.ParentID &&
		before.DedupeKey == after.DedupeKey && before.CreatedBy == after.CreatedBy &&
		before.AgentTokenHash == after.AgentTokenHash && before.CreatedAt.Equal(after.CreatedAt) &&
		bytes.Equal(before.Payload, after.Payload) && bytes.Equal(before.Metadata, after.Metadata)
}

// TaskClaimableParams selects the tasks a claim may take. The service fills
// the states from package ledger; the driver only filters by them.
type TaskClaimableParams struct {
	// State is the state a claimable task is in (cks.TaskOpen).
	State string
	// Excluded are states never claimed (ledger.DispatchExcluded); a
	// driver applies them even though State already excludes them, so
	// that no claim query can forget the set.
	Excluded []string
	// Types restricts the claim to these task types; empty means any.
	Types []string
	// Now: tasks whose run_after is later are held back.
	Now   time.Time
	Limit int
	// Saturated are concurrency keys at their limit: TaskClaimable skips
	// a task that holds any of them (the keyed claim's read).
	Saturated []string
}

// TaskClaimParams is one claim: the selection of TaskClaimable and what
// every claimed row becomes. The claim takes at most as many rows as it has
// Leases, and the i-th row in claim order gets the i-th lease: the claims
// of several callers of one process go in one statement (ledger's group of
// claims), each row leased to its own caller. Each row is written with
// State To, attempts increased by AttemptsAdded, ClaimedAt =
// LeaseRenewedAt = UpdatedAt = StateChangedAt = Now, its lease's ClaimedBy,
// token hash, ExpiresAt and Ms, and RunAfter (zero: NULL). A claim writes
// no event: a running attempt lives on its task's row, and the event that
// ends it records it whole (TaskEventRow.ClaimedAt).
type TaskClaimParams struct {
	TaskClaimableParams
	Leases        []TaskClaimLease
	To            string
	AttemptsAdded int
	RunAfter      time.Time
	// Then, when its To is set, is a second move every claimed row makes
	// at once (RUNNING, for an executor that starts the task straight
	// away): the row is written with State Then.To instead of To.
	Then TaskClaimThen
	// IDs, when set, are the tasks to claim, in claim order: those the
	// keyed claim chose from its TaskClaimable read in the same
	// transaction (only those still in State are claimed; Types, Now and
	// Saturated are not looked at). Without IDs a claim takes a task with
	// concurrency keys only while no limit exists (cks_limits is empty):
	// a claimer that has not yet learned of a new limit skips keyed tasks
	// rather than overrun it.
	IDs []int64
	// Chosen, when set, are the rows of IDs as TaskClaimable read them in
	// this transaction, in the same order: a driver whose rows cannot have
	// changed since (SQLite's one writer) claims from them without
	// reading them again.
	Chosen []TaskRow
}

// ClaimOrder orders tasks as a claim takes them: the highest priority
// first, then the oldest, then by id.
func ClaimOrder(a, b TaskRow) int {
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// TaskClaimLease is the lease of one claimed row.
type TaskClaimLease struct {
	// TokenHash is the hash of the lease token; the plain token never
	// reaches the database.
	TokenHash string
	// AgentTokenHash is the hash of the agent credential issued with the
	// lease (AgentTokenHash of its secret and TokenHash), "" for none.
	AgentTokenHash string
	ClaimedBy      string
	ExpiresAt      time.Time
	Ms             int64
}

// TaskClaimThen is the second move of a claim (TaskClaimParams.Then).
type TaskClaimThen struct {
	To string
}

// TaskClaimed is a row a claim wrote, with the ids of its dependencies in
// order.
type TaskClaimed struct {
	TaskRow
	DependsOn []int64
}

// TaskLeaseExpiredParams selects leases a reaper reclaims.
type TaskLeaseExpiredParams struct {
	// States are the leased states to look in (CLAIMED, RUNNING, REVIEWING).
	States   []string
	Excluded []string
	// ExpiredAt: lease_expires_at <= ExpiredAt.
	ExpiredAt time.Time
	// RenewedBefore: lease_renewed_at is NULL or <= RenewedBefore.
	RenewedBefore time.Time
	Limit         int
}

// TaskAttemptsTimedParams selects the leased attempts that have a timeout.
type TaskAttemptsTimedParams struct {
	// States are the states of a running attempt (CLAIMED, RUNNING).
	States []string
	// ClaimedBefore: claimed_at <= ClaimedBefore.
	ClaimedBefore time.Time
	// After is the id the page starts after (0: the first page).
	After int64
	Limit int
}

// TaskPurgeCandidatesParams selects old terminal tasks.
type TaskPurgeCandidatesParams struct {
	States []string
	Before time.Time
	Limit  int
}

// TaskPurgeParams names tasks to delete, and the rule they must still
// meet (TaskPurgeCandidatesParams's).
type TaskPurgeParams struct {
	IDs    []int64
	States []string
	Before time.Time
}

// TaskListParams selects a page of tasks.
type TaskListParams struct {
	// States and Types restrict the page when non-empty.
	States []string
	Types  []string
	// StateChangedBefore, when not zero: state_changed_at <= it.
	StateChangedBefore time.Time
	// CreatedBy, when not "", keeps the tasks of that creator.
	CreatedBy string
	// Match, when not "", keeps the tasks whose title, description or
	// acceptance criteria, case-folded, contain it (it is cks.SearchKey of
	// the search; the dialects fold the stored text by the same rule).
	Match string
	// UnconfirmedAbort keeps the tasks whose latest abort is not
	// confirmed (pending or unconfirmed).
	UnconfirmedAbort bool
	// Sort is the order of the page; After is the cursor, the last task of
	// the previous page (0: the first page): its task_id, and for a sort by
	// a key its key (AfterUpdated, AfterPriority).
	Sort          TaskSort
	After         int64
	AfterUpdated  time.Time
	AfterPriority int
	Limit         int
	// Lock locks the rows of the page (LockNone or LockUpdate): the
	// selection of a bulk operation, which then moves them, in id order
	// (Sort TaskSortID).
	Lock Lock
}

// TaskSort is the order of a TaskList page; ties of a key go by task_id.
type TaskSort int

// The orders of TaskList.
const (
	TaskSortID          TaskSort = iota // task_id ascending
	TaskSortIDDesc                      // task_id descending: newest first
	TaskSortUpdated                     // updated_at ascending
	TaskSortUpdatedDesc                 // updated_at descending, task_id descending
	TaskSortPriority                    // priority descending, then task_id ascending
)

// TaskTypeDue is a row of TaskTypesDue.
type TaskTypeDue struct {
	Type string
	// Due counts the type's OPEN tasks due now.
	Due int
	// Since is when the longest-waiting of them became OPEN.
	Since time.Time
}

// TaskCountParams selects the tasks TaskCount and TaskCountByState count.
type TaskCountParams struct {
	States             []string
	Types              []string
	StateChangedBefore time.Time
	// CreatedBy, Match and UnconfirmedAbort are TaskListParams': the
	// counts of a board filtered by them.
	CreatedBy        string
	Match            string
	UnconfirmedAbort bool
}

// ByStateAlone reports whether p selects by state alone (or selects every
// task): the counts the dialects read from their state indexes alone
// (TaskCountByState's unfiltered query), not from the table's rows.
func (p TaskCountParams) ByStateAlone() bool {
	return len(p.Types) == 0 && p.StateChangedBefore.IsZero() && p.CreatedBy == "" && p.Match == "" && !p.UnconfirmedAbort
}

// InStates keeps the counts of rows in states (every row when states is
// empty) and drops the states counted none: the answer of TaskCountByState
// for a selection by state alone, from the count of every state.
func InStates(rows []TaskStateCount, states []string) []TaskStateCount {
	out := rows[:0:0]
	for _, r := range rows {
		if r.Count > 0 && (len(states) == 0 || slices.Contains(states, r.State)) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b TaskStateCount) int { return strings.Compare(a.State, b.State) })
	return out
}

// TaskStateCount is how many tasks TaskCountByState found in one state.
type TaskStateCount struct {
	State string
	Count int
}

// TaskEventWindowParams selects the task events at or after Since and
// before Until; Limit bounds the rows of TaskClaimWaits.
type TaskEventWindowParams struct {
	Since, Until time.Time
	Limit        int
}

// TaskEventMinute is how many task events of one minute moved a task from
// From ("" for a creation) to To.
type TaskEventMinute struct {
	Minute   time.Time
	From, To string
	Count    int
}

// TaskClaimWait is one claim and when its task had become claimable.
type TaskClaimWait struct {
	ClaimedAt, OpenedAt time.Time
}

// TaskDedupeFindParams names a dedupe key lookup.
type TaskDedupeFindParams struct {
	Key string
	// Terminal are the terminal states (ledger.Terminal). Without
	// IncludeTerminal only a task in none of them matches; with it, a live
	// task first, else the newest terminal one.
	Terminal        []string
	IncludeTerminal bool
}

// TaskDedupeFindManyParams names dedupe keys (TaskDedupeFindMany).
type TaskDedupeFindManyParams struct {
	Keys []string
	// Terminal are the terminal states (ledger.Terminal).
	Terminal []string
}

// TaskDedupeHit is the task of one dedupe key.
type TaskDedupeHit struct {
	Key      string
	ID       int64
	Terminal bool
}

// TaskDep is one dependency edge: TaskID depends on DependsOn.
type TaskDep struct {
	TaskID    int64
	DependsOn int64
}

// TaskDependantsParams selects dependants.
type TaskDependantsParams struct {
	DependsOn []int64
	State     string
	Lock      Lock
}

// PausedTypeRow is one row of cks_paused_types: a task type the claims
// skip on every hub until it is resumed (issue 42).
type PausedTypeRow struct {
	Type     string
	PausedBy string
	Reason   string
	PausedAt time.Time
}

// TaskEventRow is one row of cks_task_events.
type TaskEventRow struct {
	EventID   int64
	TaskID    int64
	At        time.Time
	Actor     string
	FromState string // "" for the creation event
	ToState   string
	Attempt   int
	Reason    string
	// Changes is the JSON of an edit's changes (the ledger's: each field's
	// old and new value), "" for an event that changed no field.
	Changes string
	// ClaimedAt, StartedAt and Worker are set on the event that ends an
	// attempt (the ledger's): when it was claimed, when it started (zero:
	// never), and who held it ("" when the event's Actor did). Zero on any
	// other event.
	ClaimedAt time.Time
	StartedAt time.Time
	Worker    string
}

// EvidenceRow is one row of cks_task_evidence.
type EvidenceRow struct {
	ID        int64
	TaskID    int64
	Attempt   int
	Restart   int
	Revision  int
	Kind      string
	Body      string
	Actor     string
	CreatedAt time.Time
}

// OutputRow is one row of cks_task_output: a chunk of an attempt's live
// output, or the note of the bytes its bound dropped (Dropped > 0).
type OutputRow struct {
	ID         int64
	TaskID     int64
	Seq        int64
	Attempt    int
	Restart    int
	Stream     string
	Body       string
	ByteOffset int64
	Size       int
	Dropped    int64
	CreatedAt  time.Time
}

// OutputTrimParams selects the oldest rows of an attempt's output: those
// starting before Cut, of seq below Before.
type OutputTrimParams struct {
	TaskID  int64
	Attempt int
	Restart int
	Cut     int64
	Before  int64
}

// OutputTrimmed is a row OutputTrim deleted.
type OutputTrimmed struct {
	Seq        int64
	ByteOffset int64
	Size       int
	Dropped    int64
}

// OutputListParams pages a task's output by seq.
type OutputListParams struct {
	TaskID int64
	After  int64
	Limit  int
}

// OutputHead is the newest seq of a task's output.
type OutputHead struct {
	TaskID int64
	Seq    int64
}

// DecisionRow is one row of cks_task_decisions.
type DecisionRow struct {
	ID                  int64
	TaskID              int64
	Attempt             int
	Restart             int
	Revision            int
	DerivedFromRevision int
	Kind                string
	Text                string
	Actor               string
	CreatedAt           time.Time
}

// AbortRow is one row of cks_task_aborts.
type AbortRow struct {
	ID             int64
	TaskID         int64
	LeaseTokenHash string
	Executor       string
	Attempt        int
	Restart        int
	RequestedBy    string
	Reason         string
	RequestedAt    time.Time
	DeadlineAt     time.Time
	Outcome        string
	ResolvedAt     time.Time
}

// AbortGetParams names one abort.
type AbortGetParams struct {
	ID   int64
	Lock Lock
}

// AbortGetManyParams selects aborts by id.
type AbortGetManyParams struct {
	IDs  []int64
	Lock Lock
}

// AbortFindLatestParams names the abort of one revoked lease.
type AbortFindLatestParams struct {
	TaskID         int64
	LeaseTokenHash string
	Lock           Lock
}

// AbortPendingDueParams selects aborts past their deadline.
type AbortPendingDueParams struct {
	Outcome string // cks.AbortPending
	Now     time.Time
	Limit   int
}

// ObjectRow is one row of cks_objects as stored. It is not a read view: it
// carries the hash of the current claim token, which never leaves the
// services.
type ObjectRow struct {
	ID            int64
	Kind          string
	Title         string
	Content       []byte // canonical JSON, byte for byte
	ContentHash   string
	CurrentStatus string
	ClaimedBy     string
	// ClaimToken is the SHA-256 (hex) of the current claim token, never
	// the token itself (the column claim_token is named for what it
	// stands for); "" when the object is unclaimed.
	ClaimToken string
	ClaimedAt  time.Time
	Round      int
	// HeadVersion is the number of the latest written version (whose
	// content the row carries). Versions are numbered 1, 2, 3 … within
	// each object, so it is also the object's highest number. Heads counts
	// the head versions (forked when > 1).
	HeadVersion int64
	Heads       int
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// VersionRow is one row of cks_object_versions.
type VersionRow struct {
	// ID is the row's id, assigned by the database; it orders versions
	// across objects and is never shown.
	ID       int64
	ObjectID int64
	// Version is the number within the object (1 for the first version);
	// Parents are numbers of versions of the same object, ascending, empty
	// for a first version.
	Version     int64
	Parents     []int64
	Content     []byte
	ContentHash string
	Author      string
	CreatedAt   time.Time
	IsHead      bool
}

// ForkRow is an object with more than one head version.
type ForkRow struct {
	ObjectID int64
	// Heads are the numbers of its head versions, ascending.
	Heads []int64
}

// EdgeRow is one row of cks_edges.
type EdgeRow struct {
	ID           int64
	Src          int64
	Dst          int64
	BaseType     string
	SemanticType string
	Weight       *float64 // nil: NULL
	CreatedAt    time.Time
}

// TransitionRow is one row of cks_transition_log.
type TransitionRow struct {
	Seq             int64
	ObjectID        int64
	TS              time.Time
	Agent           string
	Action          string
	TransitionedTo  string
	ReasoningNodeID int64 // 0: none
	ContentHash     string
	Round           int
}

// TransitionPurgeCandidatesParams selects old transition-log rows of
// objects in a final status.
type TransitionPurgeCandidatesParams struct {
	Statuses []string
	Before   time.Time
	Limit    int
}

// TransitionPurgeParams names log rows to delete, and the rule they must
// still meet (TransitionPurgeCandidatesParams's).
type TransitionPurgeParams struct {
	Seqs     []int64
	Statuses []string
	Before   time.Time
}

// KnowledgeExecutor holds the primitives of the knowledge store (ADR-007).
// Objects are locked for update FOR NO KEY UPDATE on Postgres: no object
// write changes its key, so rows that reference an object (edges, versions,
// log entries, whose foreign keys take KEY SHARE) can be inserted while a
// writer holds it, and never deadlock with it.
type KnowledgeExecutor interface {
	// ObjectInsertMany inserts objects (every column of the row but ID,
	// which it assigns) and returns their ids in input order. An object's
	// first version is the caller's to insert (VersionInsertMany), in the
	// same transaction.
	ObjectInsertMany(ctx context.Context, rows []ObjectRow) ([]int64, error)
	// ObjectGetMany reads the objects ids, ordered by id, locked as asked
	// (LockNone or LockUpdate). Unknown ids are absent from the result.
	ObjectGetMany(ctx context.Context, p ObjectGetManyParams) ([]ObjectRow, error)
	// ObjectExistMany returns which of ids name an object, ascending, each
	// once; it reads no content.
	ObjectExistMany(ctx context.Context, ids []int64) ([]int64, error)
	// ObjectUpdateMany writes, by ID, the columns a claim, a transition or
	// a version write changes: status, claimed_by, claim_token_hash,
	// claimed_at, round, head_version, heads and updated_at, and content
	// and content_hash when Content is not nil (a claim or a status change
	// need not send the content back). It returns how many rows it wrote.
	ObjectUpdateMany(ctx context.Context, rows []ObjectRow) (int, error)
	// ObjectList reads up to Limit objects with id > After, ascending.
	ObjectList(ctx context.Context, p ObjectListParams) ([]ObjectRow, error)
	// ObjectClaimable reads up to Limit unclaimed objects (claimed_by '')
	// of Status, ascending by id, locked with LockUpdateSkip.
	ObjectClaimable(ctx context.Context, p ObjectClaimableParams) ([]ObjectRow, error)
	// ObjectClaimedBefore reads the claimed objects whose claimed_at is at
	// or before Before, ascending by id, locked with LockUpdateSkip.
	ObjectClaimedBefore(ctx context.Context, p ObjectClaimedBeforeParams) ([]ObjectRow, error)
	// ForkList reads up to Limit objects with more than one head and
	// id > After, ascending, each with its heads read in the same
	// statement.
	ForkList(ctx context.Context, p ForkListParams) ([]ForkRow, error)

	// VersionInsertMany appends versions (every column but ID) and returns
	// their row ids in input order. (ObjectID, Version) is unique: a second
	// version of one number is ErrUniqueViolation.
	VersionInsertMany(ctx context.Context, rows []VersionRow) ([]int64, error)
	// VersionList reads the versions of an object (only its heads when
	// HeadsOnly), ascending by number.
	VersionList(ctx context.Context, p VersionListParams) ([]VersionRow, error)
	// VersionUnsetHeads clears is_head of those of Versions (numbers) of
	// ObjectID that are heads, and returns how many it changed.
	VersionUnsetHeads(ctx context.Context, p VersionUnsetHeadsParams) (int, error)

	// EdgeInsertMany writes edges (every column but ID) and returns their
	// ids in input order.
	EdgeInsertMany(ctx context.Context, rows []EdgeRow) ([]int64, error)
	// EdgeListOfMany returns every edge from or to any of the objects
	// objectIDs, each once, ascending by id.
	EdgeListOfMany(ctx context.Context, objectIDs []int64) ([]EdgeRow, error)
	// EdgeList reads up to Limit edges with id > After, ascending.
	EdgeList(ctx context.Context, p EdgeListParams) ([]EdgeRow, error)

	// TransitionInsertMany appends log entries (every column but Seq, which
	// grows in input order; append-only table).
	TransitionInsertMany(ctx context.Context, rows []TransitionRow) error
	// TransitionListMany returns the logs of the objects objectIDs,
	// ascending by object, each oldest (lowest seq) first.
	TransitionListMany(ctx context.Context, objectIDs []int64) ([]TransitionRow, error)
	// TransitionPurgeCandidates returns up to p.Limit log rows
	// TransitionPurge may delete, oldest seq first: older than p.Before,
	// of an object in one of p.Statuses last changed before p.Before.
	TransitionPurgeCandidates(ctx context.Context, p TransitionPurgeCandidatesParams) ([]TransitionRow, error)
	// TransitionPurge deletes those of p.Seqs that are still candidates,
	// lifting the log's append-only triggers for the statement and
	// restoring them before it returns, in one transaction; it returns
	// the seqs it deleted. The one primitive that deletes log rows.
	TransitionPurge(ctx context.Context, p TransitionPurgeParams) ([]int64, error)
}

// ObjectGetManyParams selects objects by id.
type ObjectGetManyParams struct {
	IDs  []int64
	Lock Lock
}

// ObjectListParams selects a page of objects. Empty Kinds or Statuses
// restrict nothing.
type ObjectListParams struct {
	Kinds    []string
	Statuses []string
	// Unclaimed keeps only objects with no claim (claimed_by '').
	Unclaimed bool
	// Match, when set, keeps only objects whose title or content, lower-
	// cased, contains it (the caller lower-cases it too).
	Match string
	After int64
	Limit int
}

// ObjectClaimableParams selects objects a claim may take.
type ObjectClaimableParams struct {
	Status string
	Limit  int
}

// ObjectClaimedBeforeParams selects claims to release as stale.
type ObjectClaimedBeforeParams struct {
	Before time.Time
}

// ForkListParams selects a page of forked objects.
type ForkListParams struct {
	After int64
	Limit int
}

// VersionListParams selects the versions of one object.
type VersionListParams struct {
	ObjectID  int64
	HeadsOnly bool
}

// VersionUnsetHeadsParams names versions of one object, by number.
type VersionUnsetHeadsParams struct {
	ObjectID int64
	Versions []int64
}

// EdgeListParams selects a page of edges.
type EdgeListParams struct {
	After int64
	Limit int
}

// LivenessRow is one row of cks_agent_liveness (ADR-014).
type LivenessRow struct {
	InstanceID        string
	ProcessKind       string
	Hostname          string
	PID               int
	LivenessIntervalS float64
	StartedAt         time.Time
	LastHeartbeatAt   time.Time
	CurrentTaskID     int64 // 0: idle
	CurrentTaskType   string
	DesiredState      string
	// ExitedAt is when the instance exited gracefully; zero while it runs.
	ExitedAt time.Time
	// TaskTypes are the task types the instance claims, a JSON array as
	// the liveness service writes it; "" for none.
	TaskTypes string
	// AliveUntil is until when the TTL rule reads the instance alive; zero
	// once it exited (and for rows written before the column existed and
	// not backfilled).
	AliveUntil time.Time
	// ReportedBy is the id of the principal that reports the instance
	// over report_process; "" for a process on the database.
	ReportedBy string
}

// LivenessKindCount is how many instances of a kind ever reported.
type LivenessKindCount struct {
	ProcessKind string
	Count       int
}

// LivenessPageParams selects a page of instances, newest-started first
// (started_at descending, then instance_id in byte order).
type LivenessPageParams struct {
	// Kinds restricts the page when non-empty.
	Kinds []string
	// StoppedOnly keeps only the instances not alive at Now (no
	// alive_until, or one before Now).
	StoppedOnly bool
	Now         time.Time
	// AfterStartedAt and AfterInstanceID are the cursor, the last row of
	// the previous page; a zero AfterStartedAt is the first page.
	AfterStartedAt  time.Time
	AfterInstanceID string
	Limit           int
}

// LivenessAliveParams selects a page of the instances alive at Now
// (alive_until >= Now), in LivenessPage's order.
type LivenessAliveParams struct {
	Now             time.Time
	Kinds           []string
	AfterStartedAt  time.Time
	AfterInstanceID string
	Limit           int
}

// LivenessPruneParams selects old history to delete.
type LivenessPruneParams struct {
	// Before: instances whose last heartbeat (their exit, for one that
	// exited) is before it and that are not alive at Now.
	Before time.Time
	Now    time.Time
	// Limit bounds the rows one call deletes.
	Limit int
}

// LivenessExecutor holds the primitives of process liveness.
type LivenessExecutor interface {
	// LivenessUpsert inserts the row or updates every column except
	// StartedAt, DesiredState and ReportedBy, and reports whether it did:
	// a row whose ReportedBy differs from r's is left as it is (false).
	LivenessUpsert(ctx context.Context, r LivenessRow) (bool, error)
	// LivenessList returns every row, newest-started first.
	LivenessList(ctx context.Context) ([]LivenessRow, error)
	// LivenessGet returns one instance (ErrNoRows).
	LivenessGet(ctx context.Context, instanceID string) (LivenessRow, error)
	// LivenessLatest returns the most recently started instance of a kind
	// (ErrNoRows).
	LivenessLatest(ctx context.Context, kind string) (LivenessRow, error)
	// LivenessSetDesiredState sets desired_state of an instance and reports
	// whether the row exists; it never touches last_heartbeat_at.
	LivenessSetDesiredState(ctx context.Context, instanceID, state string) (bool, error)
	// LivenessPage returns one page of the history (idx_agent_liveness_started).
	LivenessPage(ctx context.Context, p LivenessPageParams) ([]LivenessRow, error)
	// LivenessAlive returns one page of the alive instances
	// (idx_agent_liveness_alive: the history is not read).
	LivenessAlive(ctx context.Context, p LivenessAliveParams) ([]LivenessRow, error)
	// LivenessCountByKind counts the rows of each kind (one row a kind
	// that has any, by kind): an index-only read, for the metrics.
	LivenessCountByKind(ctx context.Context) ([]LivenessKindCount, error)
	// LivenessPrune deletes up to p.Limit rows p selects and returns how
	// many it deleted.
	LivenessPrune(ctx context.Context, p LivenessPruneParams) (int, error)
}

// ControlExecutor holds the primitives of sweeper control (ADR-015).
type ControlExecutor interface {
	// SweeperControlUpsert records a sweeper's override.
	SweeperControlUpsert(ctx context.Context, id string, running bool, at time.Time) error
	// SweeperControlGet returns the override (ErrNoRows when none).
	SweeperControlGet(ctx context.Context, id string) (bool, error)
	// SweeperPassInsert records one completed pass (every column of the
	// row but PassID, which it assigns).
	SweeperPassInsert(ctx context.Context, r SweeperPassRow) error
	// SweeperPassRecent returns the newest Limit passes of one sweeper,
	// newest first (idx_sweeper_passes_agent).
	SweeperPassRecent(ctx context.Context, p SweeperPassRecentParams) ([]SweeperPassRow, error)
	// SweeperPassPrune deletes up to Limit passes that started before
	// Before and returns how many.
	SweeperPassPrune(ctx context.Context, p SweeperPassPruneParams) (int, error)
	// SweeperPassTrim deletes up to Limit passes of one sweeper older than
	// its newest Keep and returns how many.
	SweeperPassTrim(ctx context.Context, p SweeperPassTrimParams) (int, error)
}

// SweeperPassRow is one row of cks_sweeper_passes: a completed pass of a
// sweeper, on the hub that ran it.
type SweeperPassRow struct {
	PassID      int64
	AgentID     string
	HubID       string
	StartedAt   time.Time
	DurationMS  float64
	ResultCount int
	// Error is the pass's error, "" when it succeeded.
	Error string
	// Details is the JSON of the pass's details, "" when it had none.
	Details string
}

// SweeperPassRecentParams selects the newest passes of a sweeper.
type SweeperPassRecentParams struct {
	AgentID string
	Limit   int
}

// SweeperPassPruneParams selects old passes to delete.
type SweeperPassPruneParams struct {
	Before time.Time
	Limit  int
}

// SweeperPassTrimParams selects the passes of a sweeper beyond its newest
// Keep.
type SweeperPassTrimParams struct {
	AgentID string
	Keep    int
	Limit   int
}

// LeaderRow is one row of cks_leaders: who holds a leadership and until when.
type LeaderRow struct {
	Name      string
	LeaderID  string
	ElectedAt time.Time
	ExpiresAt time.Time
}

// LeaderElectParams is one election attempt of LeaderID for leadership Name.
type LeaderElectParams struct {
	Name     string
	LeaderID string
	// TTL is how long the leadership holds without a renewal.
	TTL time.Duration
	// Now is the election's time on SQLite, whose hubs share one host's clock.
	// Postgres ignores it and uses its own (now()): hubs on several hosts then
	// judge every lease by one clock, and a host whose clock runs ahead cannot
	// take over a leadership early.
	Now time.Time
}

// LeaderExecutor holds the primitives of leader election among the hubs on
// one database (issue 26): one row per leadership, taken by an upsert that
// succeeds only when nobody holds it, its lease ran out, or the caller holds
// it already (a renewal).
type LeaderExecutor interface {
	// LeaderElect takes or renews the leadership p names; it answers the
	// held row, or ErrNoRows when another holder's lease has not run out.
	LeaderElect(ctx context.Context, p LeaderElectParams) (LeaderRow, error)
	// LeaderResign gives the leadership up if leaderID holds it, and
	// reports whether it did.
	LeaderResign(ctx context.Context, name, leaderID string) (bool, error)
	// LeaderGet returns the holder whose lease has not run out at now
	// (SQLite; Postgres: at its own clock), or ErrNoRows.
	LeaderGet(ctx context.Context, name string, now time.Time) (LeaderRow, error)
}

// ScheduleRow is one row of cks_schedules (issue 42): a schedule, its task
// template as JSON (Task) and the mark of its fires.
type ScheduleRow struct {
	Name      string
	Cron      string
	TimeZone  string
	Misfire   string
	Task      string
	Paused    bool
	PausedBy  string
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
	// LastSlot is the latest slot fired or skipped; zero (NULL) before
	// the first.
	LastSlot time.Time
	// LastFiredAt and LastTaskID are the last fire; zero before the first.
	LastFiredAt time.Time
	LastTaskID  int64
}

// ScheduleGetParams reads one schedule, locked as asked.
type ScheduleGetParams struct {
	Name string
	Lock Lock
}

// ScheduleExecutor holds the primitives of schedules (issue 42).
type ScheduleExecutor interface {
	// ScheduleInsert stores a new schedule (ErrUniqueViolation when its
	// name is taken).
	ScheduleInsert(ctx context.Context, r ScheduleRow) error
	// ScheduleGet returns the schedule p names (none when there is no
	// such schedule), locked as asked.
	ScheduleGet(ctx context.Context, p ScheduleGetParams) ([]ScheduleRow, error)
	// ScheduleList returns every schedule, by name.
	ScheduleList(ctx context.Context) ([]ScheduleRow, error)
	// ScheduleUpdate writes the columns that change after creation
	// (paused, paused_by, updated_at, last_slot, last_fired_at,
	// last_task_id) of the schedule r names, and reports how many rows
	// it wrote.
	ScheduleUpdate(ctx context.Context, r ScheduleRow) (int, error)
	// ScheduleDelete deletes the schedule name and reports how many rows
	// it deleted.
	ScheduleDelete(ctx context.Context, name string) (int, error)
}

// LimitRow is one row of cks_limits (issue 42): a concurrency limit.
type LimitRow struct {
	Name       string
	Pattern    string
	MaxRunning int
	CreatedBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Starts and IntervalMs are a rate limit (0, 0: none).
	Starts     int
	IntervalMs int64
	// MaxTokens and MaxCostNanos per window of WindowMs are a spend
	// budget (0, 0, 0: none).
	MaxTokens    int64
	MaxCostNanos int64
	WindowMs     int64
}

// KeyStartRow is one claim of a task for one of its rate-limited keys.
type KeyStartRow struct {
	Key       string
	StartedAt time.Time
}

// LimitListParams reads every limit, locked as asked (LockNone, or
// LockUpdate: the keyed claim's turn).
type LimitListParams struct {
	Lock Lock
}

// LimitExecutor holds the primitives of concurrency limits (issue 42).
type LimitExecutor interface {
	// LimitPut stores r, or replaces the pattern, cap and UpdatedAt of
	// the limit of its name (CreatedBy and CreatedAt stay);
	// ErrUniqueViolation when another limit has its pattern.
	LimitPut(ctx context.Context, r LimitRow) error
	// LimitDelete deletes the limit name and reports how many rows it
	// deleted.
	LimitDelete(ctx context.Context, name string) (int, error)
	// LimitList returns every limit, by name, locked as p asks.
	LimitList(ctx context.Context, p LimitListParams) ([]LimitRow, error)
	// KeyStartInsertMany records a claim at startedAt for each of keys.
	KeyStartInsertMany(ctx context.Context, keys []string, startedAt time.Time) error
	// KeyStartsSince returns the starts after since, oldest first.
	KeyStartsSince(ctx context.Context, since time.Time) ([]KeyStartRow, error)
	// KeyStartsPrune deletes the starts at or before before and reports
	// how many.
	KeyStartsPrune(ctx context.Context, before time.Time) (int, error)
}

// UsageRow is one row of cks_usage: what one report_usage said an
// attempt spent. CostNanos is the cost in billionths of Currency's unit.
type UsageRow struct {
	ID              int64
	TaskID          int64
	Attempt         int
	Restart         int
	Type            string
	ConcurrencyKeys string
	Model           string
	InputTokens     int64
	OutputTokens    int64
	CostNanos       int64
	Currency        string
	Agent           string
	Principal       string
	ReportedAt      time.Time
}

// UsageOfTaskParams pages a task's reports: those after usage id After,
// at most Limit.
type UsageOfTaskParams struct {
	TaskID int64
	After  int64
	Limit  int
}

// UsagePageParams pages the reports before Until in the order of their
// time: those after (AfterAt, AfterID), at most Limit.
type UsagePageParams struct {
	AfterAt time.Time
	AfterID int64
	Until   time.Time
	Limit   int
}

// TaskSpendRow is one row of cks_task_spend: a task's budget (0: none)
// and what its attempts reported spending.
type TaskSpendRow struct {
	TaskID       int64
	MaxTokens    int64
	MaxCostNanos int64
	InputTokens  int64
	OutputTokens int64
	CostNanos    int64
	Reports      int64
}

// KeySpendRow is one row of cks_key_spend: what the tasks holding Key
// reported spending in the window of WindowMs starting at WindowStart.
type KeySpendRow struct {
	WindowMs    int64
	WindowStart time.Time
	Key         string
	Tokens      int64
	CostNanos   int64
}

// KeySpendInParams names one window of one length.
type KeySpendInParams struct {
	WindowMs    int64
	WindowStart time.Time
}

// UsageExecutor holds the primitives of usage and spend (issue 43).
type UsageExecutor interface {
	// KeySpendAdd adds r's tokens and cost to its key's window.
	KeySpendAdd(ctx context.Context, r KeySpendRow) error
	// KeySpendIn returns every key's spend in the window p names.
	KeySpendIn(ctx context.Context, p KeySpendInParams) ([]KeySpendRow, error)
	// KeySpendPrune deletes the windows starting before before and
	// reports how many rows it deleted.
	KeySpendPrune(ctx context.Context, before time.Time) (int, error)
	// UsageInsert records r and returns it with its id.
	UsageInsert(ctx context.Context, r UsageRow) (UsageRow, error)
	// UsageOfTask returns a page of a task's reports, oldest first.
	UsageOfTask(ctx context.Context, p UsageOfTaskParams) ([]UsageRow, error)
	// UsagePage returns a page of the reports of a window, in time order.
	UsagePage(ctx context.Context, p UsagePageParams) ([]UsageRow, error)
	// TaskSpendGet returns the task's spend row (none when it has none).
	TaskSpendGet(ctx context.Context, taskID int64) ([]TaskSpendRow, error)
	// TaskSpendPut stores r, replacing the task's row.
	TaskSpendPut(ctx context.Context, r TaskSpendRow) error
}

// PrincipalRow is one row of cks_principals.
type PrincipalRow struct {
	ID        string
	Name      string
	TokenHash string
	CreatedAt time.Time
	// TaskID and LeaseTokenHash bind a task-scoped credential to the
	// lease it was issued with (0 and "" for an unbound principal).
	TaskID         int64
	LeaseTokenHash string
}

// TaskCredentialRow is what authenticates a task's agent token, from its
// task's row (PrincipalTaskCredential).
type TaskCredentialRow struct {
	LeaseTokenHash string
	AgentTokenHash string
	ClaimedBy      string
	ClaimedAt      time.Time
}

// GrantRow is one row of cks_grants.
type GrantRow struct {
	PrincipalID string
	Resource    string
	Permission  string
}

// PrincipalAuthRow is a principal with its grants, as authentication
// reads them (PrincipalAuth).
type PrincipalAuthRow struct {
	PrincipalRow
	// Grants are ordered by resource, permission (as GrantList's).
	Grants []GrantRow
}

// PrincipalExecutor holds the primitives of principals and grants.
type PrincipalExecutor interface {
	// PrincipalInsert inserts a principal (ErrUniqueViolation on a
	// duplicate id or token hash).
	PrincipalInsert(ctx context.Context, p PrincipalRow) error
	// GrantInsertMany adds grants, ignoring ones the principal has.
	GrantInsertMany(ctx context.Context, grants []GrantRow) error
	// PrincipalByTokenHash reads the principal of a token hash (ErrNoRows).
	// A principal bound to a lease is returned only while that lease is
	// the task's current one (the task has a lease and its hash equals the
	// binding), so a task credential dies with its lease.
	PrincipalByTokenHash(ctx context.Context, tokenHash string) (PrincipalRow, error)
	// PrincipalAuth is PrincipalByTokenHash with the principal's grants,
	// read together (on Postgres in one statement: an authenticated
	// request is one read, not two).
	PrincipalAuth(ctx context.Context, tokenHash string) (PrincipalAuthRow, error)
	// PrincipalTaskCredential reads what authenticates task taskID's agent
	// token: the task's lease and agent credential hashes and its claimer
	// (ErrNoRows for no such task). The rule that they match is
	// driver.AgentTokenHashes, applied by the caller.
	PrincipalTaskCredential(ctx context.Context, taskID int64) (TaskCredentialRow, error)
	// PrincipalGet reads a principal by id (ErrNoRows), bound or not.
	PrincipalGet(ctx context.Context, id string) (PrincipalRow, error)
	// GrantList returns a principal's grants ordered by resource, permission.
	GrantList(ctx context.Context, principalID string) ([]GrantRow, error)
	// PrincipalList returns every principal, oldest first (ties by id).
	PrincipalList(ctx context.Context) ([]PrincipalRow, error)
	// GrantListAll returns every grant, ordered by principal, resource,
	// permission.
	GrantListAll(ctx context.Context) ([]GrantRow, error)
	// PrincipalDelete removes a principal and its grants and reports
	// whether it existed.
	PrincipalDelete(ctx context.Context, id string) (bool, error)
	// PrincipalCountWithGrant counts principals other than excludeID
	// holding permission on resource. Inside a transaction the count stays
	// true until it ends (Postgres locks the grants it counts, excludeID's
	// too, FOR UPDATE; SQLite has one writer), so a last-admin check and
	// the delete it guards cannot interleave with another's.
	PrincipalCountWithGrant(ctx context.Context, resource, permission, excludeID string) (int, error)
	// PrincipalDeleteEndedLeases removes bound principals whose lease is
	// no longer their task's current one, and returns how many.
	PrincipalDeleteEndedLeases(ctx context.Context) (int, error)
}

// SessionPageParams selects a page of the sessions: up to Limit after the
// session AfterID created at AfterCreatedAt, in SessionPage's order.
type SessionPageParams struct {
	AfterCreatedAt time.Time
	AfterSessionID string
	Limit          int
}

// SessionTrimParams selects the sessions of PrincipalID but NewSessionID
// and the newest Keep of the others.
type SessionTrimParams struct {
	PrincipalID  string
	NewSessionID string
	Keep         int
}

// SessionRow is one row of cks_sessions: a studio sign-in.
type SessionRow struct {
	ID string
	// SecretHash is the SHA-256 (hex) of the cookie's secret; the secret
	// itself is never stored.
	SecretHash  string
	PrincipalID string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// SessionExecutor holds the primitives of studio sessions.
type SessionExecutor interface {
	// SessionInsert inserts a session (ErrUniqueViolation on a duplicate
	// id or secret hash; a foreign-key error when its principal is gone).
	SessionInsert(ctx context.Context, s SessionRow) error
	// SessionBySecretHash reads the session of a secret's hash (ErrNoRows),
	// expired or not: the service decides.
	SessionBySecretHash(ctx context.Context, secretHash string) (SessionRow, error)
	// SessionPage returns one page of the sessions, newest first (ties
	// by id), after p's cursor.
	SessionPage(ctx context.Context, p SessionPageParams) ([]SessionRow, error)
	// SessionCount counts the sessions.
	SessionCount(ctx context.Context) (int64, error)
	// SessionTrim deletes a principal's sessions but p.NewSessionID and
	// the newest p.Keep of the others, and returns how many it deleted.
	SessionTrim(ctx context.Context, p SessionTrimParams) (int, error)
	// SessionDelete removes a session and reports whether it existed.
	SessionDelete(ctx context.Context, id string) (bool, error)
	// SessionDeleteExpired removes the sessions whose expires_at is at or
	// before now, and returns how many.
	SessionDeleteExpired(ctx context.Context, now time.Time) (int, error)
}
