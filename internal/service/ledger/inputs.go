package ledger

import (
	"context"
	"time"

	"github.com/cks-dev/cks"
)

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
	// Issue, when set, runs for each claimed task, in order, before the
	// claim returns: claim_tasks issues the task's credential there
	// (auth.IssueTaskToken, bound to the new lease) and keeps it for its
	// answer. When it fails for one task, the claim fails with its error
	// and every task of it is given back (issue).
	Issue func(ctx context.Context, t cks.ClaimedTask) error
}

// DependencyRelease is the outcome of Tasks.ReleaseDependencies.
type DependencyRelease struct {
	// Released counts WAITING tasks moved to OPEN (every dependency COMPLETED).
	Released int `json:"released"`
	// Blocked counts WAITING tasks moved to BLOCKED (a dependency FAILED or CANCELLED).
	Blocked int `json:"blocked"`
}
