package cks

import "time"

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

// PrincipalGrants is a principal with its grants, as ListPrincipals returns it.
type PrincipalGrants struct {
	Principal
	Grants []Grant `json:"grants"`
}

// Session is a studio sign-in as an admin lists it (list_sessions): whose
// it is and how long it lasts, never its secret or the secret's hash. A
// browser holds the secret in its cookie; the hub stores only its hash.
type Session struct {
	ID            string    `json:"id"`
	PrincipalID   string    `json:"principal_id"`
	PrincipalName string    `json:"principal_name"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
}
