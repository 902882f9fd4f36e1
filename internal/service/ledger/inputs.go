package ledger

import "time"

// ClaimParams is one claim (Claim).
type ClaimParams struct {
	// Worker holds the leases (claimed_by, the events' actor).
	Worker string
	// Types restricts the claim to these task types; empty means any.
	Types []string
	// N is the most tasks the claim takes.
	N int
	// Lease is each lease's duration, MinLease to MaxLease (Heartbeat renews
	// it by as much); 0 is the service's default lease
	// (Settings.DefaultLease, CKS_STALE_WINDOW). Once it has run out
	// unrenewed, every call under it is ErrLeaseLost and the next claim
	// may take the task.
	Lease time.Duration
	// Running moves each claimed task on to RUNNING at once, as a
	// MarkRunning right after the claim would, in the claim's transaction.
	Running bool
	// Wait, up to MaxClaimWait, holds a claim that finds nothing to claim
	// until a task it can take becomes claimable (then claims it) or Wait
	// has passed (then answers none): a long poll that costs the database
	// nothing while it waits (waitRoom).
	Wait time.Duration
	// Interrupt, when it closes while the claim waits, ends the wait with
	// nothing claimed (claim_tasks: the claimer's process was asked to
	// stop). A claim under way is not interrupted: what it took is handed
	// back to the caller.
	Interrupt <-chan struct{}
	// AgentToken, when set, is given the secret of each claimed task's
	// agent credential before Claim returns: every task the claim takes
	// is leased with one, its hash bound to the new lease
	// (driver.AgentTokenHash) and written by the claim's own statement,
	// and claim_tasks makes the task's agent token of it (auth.TaskToken).
	// Nothing else is written, and nothing more can fail: the credential
	// stops authenticating when the lease ends, however it ends.
	AgentToken func(taskID int64, secret string)
}

// DependencyRelease is the outcome of Tasks.ReleaseDependencies.
type DependencyRelease struct {
	// Released counts WAITING tasks moved to OPEN (every dependency COMPLETED).
	Released int `json:"released"`
	// Blocked counts WAITING tasks moved to BLOCKED (a dependency FAILED or CANCELLED).
	Blocked int `json:"blocked"`
}
