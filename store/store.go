// Package store defines the domain records cks persists and the interfaces of
// the store every consumer uses. store/backend.Open builds it — the services
// (ledger, knowledge, liveness, sweeper control, principals) over the driver
// of the URL's dialect (driver/sqlite, driver/postgres) — and the shared
// conformance suite in store/storetest checks it on both dialects, so code
// above this package never depends on which one it runs on.
package store

import (
	"context"
	"time"

	"github.com/cks-dev/cks"
)

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

// Liveness stores process heartbeats (ADR-014).
type Liveness interface {
	// UpsertAgentLiveness inserts the row for r.InstanceID or updates every field
	// except StartedAt, which is set once by the first write.
	UpsertAgentLiveness(ctx context.Context, r cks.AgentLiveness) error
	// ListAgentLiveness returns every row, newest-started first.
	ListAgentLiveness(ctx context.Context) ([]cks.AgentLiveness, error)
	// GetAgentLiveness returns one instance's row or ErrNotFound.
	GetAgentLiveness(ctx context.Context, instanceID string) (cks.AgentLiveness, error)
	// LatestAgentLiveness returns the most recently started instance of kind, or
	// ErrNotFound when no instance of that kind ever reported.
	LatestAgentLiveness(ctx context.Context, kind string) (cks.AgentLiveness, error)
	// RequestAgentStop sets desired_state to DesiredStopRequested on the row
	// of instanceID and publishes TopicAgentStop in the same transaction
	// (ADR-016). It only ever updates: it returns false, and no error, when
	// no such row exists, and it never touches last_heartbeat_at (a stop
	// request is no evidence that the process is alive).
	RequestAgentStop(ctx context.Context, instanceID string) (bool, error)
}

// Principals stores identities, their token hashes and their grants.
type Principals interface {
	// CreatePrincipal stores p (with its lease binding, if any) with the hash
	// of its token and its grants in one transaction. A duplicate ID or token
	// hash is ErrConflict.
	CreatePrincipal(ctx context.Context, p cks.Principal, tokenHash string, grants []cks.Grant) error
	// PrincipalByTokenHash returns the principal whose token hashes to
	// tokenHash, or ErrNotFound. A principal bound to a lease (p.Lease) that
	// is no longer current — its task not CLAIMED or RUNNING under that
	// lease token — is ErrNotFound too, decided in the same query.
	PrincipalByTokenHash(ctx context.Context, tokenHash string) (cks.Principal, error)
	// DeleteEndedLeasePrincipals deletes, with their grants, the principals
	// bound to leases that are no longer current (they no longer
	// authenticate; this only removes the rows), and returns how many.
	DeleteEndedLeasePrincipals(ctx context.Context) (int, error)
	// GrantsOf returns the grants of a principal, ordered by resource then permission.
	GrantsOf(ctx context.Context, principalID string) ([]cks.Grant, error)
	// ListPrincipals returns every principal with its grants, oldest first
	// (ties by id). Token hashes are never returned.
	ListPrincipals(ctx context.Context) ([]cks.PrincipalGrants, error)
	// DeletePrincipal removes a principal and its grants, so its token stops
	// authenticating at once. An unknown id is ErrNotFound. Deleting the last
	// principal holding admin on "/" is ErrConflict: nobody could then manage
	// tokens, and only a fresh database would recover an admin. The check and
	// the delete are one transaction, so two concurrent deletes cannot remove
	// the last two admins.
	DeletePrincipal(ctx context.Context, principalID string) error

	// CreateSession stores a studio session with the hash of its secret
	// (s.PrincipalName is not stored). An unknown principal is ErrNotFound,
	// a duplicate id or secret hash ErrConflict.
	CreateSession(ctx context.Context, s cks.Session, secretHash string) error
	// SessionBySecretHash returns the session whose secret hashes to
	// secretHash and its principal, or ErrNotFound. A session expired at
	// now is ErrNotFound too, and is deleted.
	SessionBySecretHash(ctx context.Context, secretHash string, now time.Time) (cks.Principal, cks.Session, error)
	// ListSessions returns every session with its principal's name, oldest
	// first (ties by id); never a secret hash.
	ListSessions(ctx context.Context) ([]cks.Session, error)
	// DeleteSession removes a session, so its cookie stops authenticating
	// at once; an unknown id is ErrNotFound.
	DeleteSession(ctx context.Context, id string) error
	// DeleteExpiredSessions removes the sessions expired at now and
	// returns how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}

// at least one principal holding: admin on the root of the resource tree.

func fieldError(field, expected string) error {
	return &cks.FieldError{Field: field, Expected: expected}
}
