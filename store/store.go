// Package store defines the domain records cks persists and the interfaces every
// storage backend implements. The SQLite (store/sqlite) and Postgres
// (store/postgres) backends both pass the shared conformance suite in
// store/storetest, so code above this package never depends on which one it runs on.
package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Sentinel errors that callers handle. Backends wrap them with %w.
var (
	// ErrNotFound means the addressed record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the write contradicts the current state of the record.
	ErrConflict = errors.New("conflict")
	// ErrInvalid means the input was rejected before anything was written.
	ErrInvalid = errors.New("invalid input")
	// ErrUnavailable means the storage could not take a request, through no
	// fault of the request; nothing was written. ErrStorageReadOnly and
	// ErrStorageFull match it (the API answers 503).
	ErrUnavailable = errors.New("storage_unavailable: the database cannot take the request")
	// ErrStorageReadOnly means the database refuses writes: a database file,
	// directory or file system this process may not write, a Postgres server
	// that is a hot standby or has default_transaction_read_only set.
	ErrStorageReadOnly error = &unavailableError{"storage_read_only: the database refuses writes"}
	// ErrStorageFull means a write failed for lack of space: a full disk
	// (SQLite SQLITE_FULL, Postgres disk_full, SQLSTATE 53100) or a size cap.
	ErrStorageFull error = &unavailableError{"storage_full: no space left for the write"}
)

// unavailableError is a sentinel that also matches ErrUnavailable.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }
func (e *unavailableError) Unwrap() error { return ErrUnavailable }

// StorageFault wraps err, a driver's error, as the storage fault kind
// (ErrStorageReadOnly or ErrStorageFull), keeping both in its chain.
func StorageFault(kind, err error) error { return fmt.Errorf("%w: %w", kind, err) }

// FaultMemory is how long a handle's StorageHealth reports the storage
// fault of a failed write. No probe tells a full disk without writing, so
// the last failed write stands for the state of the storage that long.
const FaultMemory = time.Minute

// Faults remembers the latest storage fault a store handle's writes met, for
// its StorageHealth. The zero value is ready; it is safe for concurrent use.
type Faults struct {
	mu  sync.Mutex
	err error
	at  time.Time
}

// Note records err, at now, when it is a storage fault (it matches
// ErrUnavailable), and returns err unchanged.
func (f *Faults) Note(err error, now time.Time) error {
	if errors.Is(err, ErrUnavailable) {
		f.mu.Lock()
		f.err, f.at = err, now
		f.mu.Unlock()
	}
	return err
}

// Recent returns the fault noted within FaultMemory before now, or nil.
func (f *Faults) Recent(now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil || now.Sub(f.at) >= FaultMemory {
		return nil
	}
	return f.err
}

// Store is the whole persistence surface of cks.
//
// Every string argument and string field of an input is checked with
// ValidateText, and every JSON value with ValidateJSON, before anything is
// read or written: text either backend could not store as it is (a NUL
// byte, invalid UTF-8, a \u0000 escape, …) is a FieldError naming the
// argument as the API spells it (lease_token, text, actor, …), alike on
// SQLite and Postgres.
type Store interface {
	Liveness
	Principals
	Tasks
	TaskControl
	Knowledge
	Versions
	SweeperControl
	Changes
	// StorageHealth tells, cheaply and without writing, whether the
	// database takes writes: nil; an error matching ErrStorageReadOnly when
	// it refuses them; one matching ErrStorageFull when a write of this
	// handle failed for lack of space within FaultMemory; any other error
	// when the check itself failed. A hub refuses to start on a read-only
	// database and reports the rest at /healthz.
	StorageHealth(ctx context.Context) error
	// Backend names the implementation: "sqlite" or "postgres".
	Backend() string
	// Close releases every connection. The store is unusable afterwards.
	Close() error
}

// AgentLiveness is one row of cks_agent_liveness (ADR-014): the heartbeat of one
// standalone agent process instance. A restarted process writes a new row under a
// new InstanceID; old rows stay as history.
type AgentLiveness struct {
	InstanceID        string    `json:"instance_id,omitempty"`
	ProcessKind       string    `json:"process_kind"`
	Hostname          string    `json:"hostname,omitempty"`
	PID               int       `json:"pid,omitempty"`
	LivenessIntervalS float64   `json:"liveness_interval_s,omitempty"`
	StartedAt         time.Time `json:"started_at,omitzero"`
	LastHeartbeatAt   time.Time `json:"last_heartbeat_at,omitzero"`
	// CurrentTaskID is the outbox task the process holds, nil when idle.
	CurrentTaskID *int64 `json:"current_task_id"`
	// CurrentTaskType is denormalised for display; empty when idle.
	CurrentTaskType string `json:"current_task_type,omitempty"`
	// DesiredState is "" (no stop requested; rows written before the column
	// existed read so too) or DesiredStopRequested (ADR-016). It is written
	// only by RequestAgentStop; UpsertAgentLiveness never changes it.
	DesiredState string `json:"desired_state,omitempty"`
}

// DesiredStopRequested is the desired_state of a process asked to stop.
const DesiredStopRequested = "stop_requested"

// Validate reports the first field of r that a backend must not store.
func (r AgentLiveness) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"instance_id", r.InstanceID}, {"process_kind", r.ProcessKind},
		{"hostname", r.Hostname}, {"current_task_type", r.CurrentTaskType},
	} {
		if err := ValidateText(f.name, f.v); err != nil {
			return err
		}
	}
	switch {
	case r.InstanceID == "":
		return fieldError("instance_id", "a non-empty process instance id")
	case r.ProcessKind == "":
		return fieldError("process_kind", "a non-empty process kind")
	case r.Hostname == "":
		return fieldError("hostname", "a non-empty host name")
	case r.PID <= 0:
		return fieldError("pid", "a positive process id")
	case !(r.LivenessIntervalS > 0):
		return fieldError("liveness_interval_s", "a positive number of seconds")
	case r.StartedAt.IsZero():
		return fieldError("started_at", "a timestamp")
	case r.LastHeartbeatAt.IsZero():
		return fieldError("last_heartbeat_at", "a timestamp")
	}
	return nil
}

// Liveness stores process heartbeats (ADR-014).
type Liveness interface {
	// UpsertAgentLiveness inserts the row for r.InstanceID or updates every field
	// except StartedAt, which is set once by the first write.
	UpsertAgentLiveness(ctx context.Context, r AgentLiveness) error
	// ListAgentLiveness returns every row, newest-started first.
	ListAgentLiveness(ctx context.Context) ([]AgentLiveness, error)
	// GetAgentLiveness returns one instance's row or ErrNotFound.
	GetAgentLiveness(ctx context.Context, instanceID string) (AgentLiveness, error)
	// LatestAgentLiveness returns the most recently started instance of kind, or
	// ErrNotFound when no instance of that kind ever reported.
	LatestAgentLiveness(ctx context.Context, kind string) (AgentLiveness, error)
	// RequestAgentStop sets desired_state to DesiredStopRequested on the row
	// of instanceID and publishes TopicAgentStop in the same transaction
	// (ADR-016). It only ever updates: it returns false, and no error, when
	// no such row exists, and it never touches last_heartbeat_at (a stop
	// request is no evidence that the process is alive).
	RequestAgentStop(ctx context.Context, instanceID string) (bool, error)
}

// Principal is an identity that authenticates with a bearer token. Only the
// token's hash is stored.
type Principal struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// Lease, when set, binds the principal to one lease: it authenticates
	// only while that lease is current. The task-scoped credential an HTTP
	// claim hands out is bound so; principals made by an operator (even
	// for a task) are not.
	Lease *LeaseBinding `json:"lease,omitempty"`
}

// LeaseBinding ties a principal to the lease of task TaskID whose token
// hashes to LeaseTokenHash. The principal's token stops authenticating when
// the task is no longer CLAIMED or RUNNING under that lease: in the very
// transaction that ends the lease (complete, fail, request input, stop,
// update, cancel, reclaim), whichever path ends it.
type LeaseBinding struct {
	TaskID int64 `json:"task_id"`
	// LeaseTokenHash is HashLeaseToken of the lease's token; never shown.
	LeaseTokenHash string `json:"-"`
}

// Grant gives a principal one permission on a resource subtree such as "/" or
// "/tasks/42".
type Grant struct {
	Resource   string `json:"resource"`
	Permission string `json:"permission"`
}

// Principals stores identities, their token hashes and their grants.
type Principals interface {
	// CreatePrincipal stores p (with its lease binding, if any) with the hash
	// of its token and its grants in one transaction. A duplicate ID or token
	// hash is ErrConflict.
	CreatePrincipal(ctx context.Context, p Principal, tokenHash string, grants []Grant) error
	// PrincipalByTokenHash returns the principal whose token hashes to
	// tokenHash, or ErrNotFound. A principal bound to a lease (p.Lease) that
	// is no longer current — its task not CLAIMED or RUNNING under that
	// lease token — is ErrNotFound too, decided in the same query.
	PrincipalByTokenHash(ctx context.Context, tokenHash string) (Principal, error)
	// DeleteEndedLeasePrincipals deletes, with their grants, the principals
	// bound to leases that are no longer current (they no longer
	// authenticate; this only removes the rows), and returns how many.
	DeleteEndedLeasePrincipals(ctx context.Context) (int, error)
	// GrantsOf returns the grants of a principal, ordered by resource then permission.
	GrantsOf(ctx context.Context, principalID string) ([]Grant, error)
	// ListPrincipals returns every principal with its grants, oldest first
	// (ties by id). Token hashes are never returned.
	ListPrincipals(ctx context.Context) ([]PrincipalGrants, error)
	// DeletePrincipal removes a principal and its grants, so its token stops
	// authenticating at once. An unknown id is ErrNotFound. Deleting the last
	// principal holding admin on "/" is ErrConflict: nobody could then manage
	// tokens, and only a fresh database would recover an admin. The check and
	// the delete are one transaction, so two concurrent deletes cannot remove
	// the last two admins.
	DeletePrincipal(ctx context.Context, principalID string) error
}

// AdminResource and AdminPermission name the grant that DeletePrincipal keeps
// at least one principal holding: admin on the root of the resource tree.
const (
	AdminResource   = "/"
	AdminPermission = "admin"
)

// PrincipalGrants is a principal with its grants, as ListPrincipals returns it.
type PrincipalGrants struct {
	Principal
	Grants []Grant `json:"grants"`
}

// FieldError is an ErrInvalid that names the offending field and what was expected.
type FieldError struct {
	Field    string
	Expected string
}

func (e *FieldError) Error() string {
	return "invalid " + e.Field + ": expected " + e.Expected
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldError(field, expected string) error {
	return &FieldError{Field: field, Expected: expected}
}

// Time normalises t to what every backend can store exactly: UTC with
// microsecond precision (Postgres timestamptz resolution).
func Time(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
