package ledger

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/groupcommit"
	"github.com/cks-dev/cks/internal/driver"
)

// maxClaimBatch is the most claims one batch carries, maxClaims how many
// batches run at once (as maxFlushes: two keep the database busy while
// the next batch gathers).
const (
	maxClaimBatch = 256
	maxClaims     = 2
)

// claimer is the group of the claims of one process. A claim statement
// costs much the same for one row as for many (on Postgres the locking
// scan, the window over the locked rows and the CTE's setup are per
// statement), and claimers of one queue that run side by side pass over
// each other's locked rows; so the claims that callers make at once — the
// agents a hub serves, the workers of one process — go in one statement,
// each row leased to its own caller. On SQLite too, where the writer's
// group commit would share the claims' commit but not their statement: the
// agent path at 64 workers did 0.59 of its tasks without the claimer and
// the completer, 0.79 without the completer alone (docs/benchmarks.md,
// issue 23).
type claimer = groupcommit.Group[*claim, []cks.ClaimedTask]

// claim is one Claim call, validated, with the lease tokens it may
// hand out and their hashes, and with p.AgentToken the agent credential
// secret of each lease and its hash (nil without).
type claim struct {
	p                   ClaimParams
	tokens, hashes      []string
	agents, agentHashes []string
}

// key is what claims must share to go in one statement: the types they
// take (in any order) and whether they start the task.
func (c *claim) key() string {
	run := "f"
	if c.p.Running {
		run = "t"
	}
	switch len(c.p.Types) {
	case 0:
		return run
	case 1: // the common case, without a sorted copy
		return run + "\x00" + c.p.Types[0]
	}
	return run + "\x00" + strings.Join(slices.Sorted(slices.Values(c.p.Types)), "\x00")
}

// claimBatch makes the claims of batch in one write transaction: one
// TaskClaim per key, in the order the keys first appear, whose leases are
// those of its claims in batch order — so the first caller gets the first
// tasks in claim order — each leased to its own caller for its own
// length. A claim whose caller gave up before the transaction began takes
// nothing; one whose caller gives up later gets its tasks all the same,
// as a claimer that dies after claiming does, and the lease reaper takes
// them back when the lease runs out.
func (s *Service) claimBatch(ctx context.Context, b *groupcommit.Batch[*claim, []cks.ClaimedTask]) []groupcommit.Result[[]cks.ClaimedTask] {
	batch := b.Calls
	out := make([]groupcommit.Result[[]cks.ClaimedTask], len(batch))
	var live []int
	for i, c := range batch {
		if err := c.Context().Err(); err != nil {
			out[i].Err = err
			continue
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		return out
	}
	keys := make([]string, len(batch))
	// single: the batch is one TaskClaim (one key), which Postgres runs as
	// a transaction of its own, in one round trip (driver.TxOptions.Single;
	// the moves' topic is published after the commit, not in it). A claim
	// whose caller gives up while it runs then keeps its tasks until their
	// leases run out, as it would when its caller gave up after the commit.
	single := true
	for _, i := range live {
		keys[i] = batch[i].In.key()
		single = single && keys[i] == keys[live[0]]
	}
	// A lease that expired unrenewed is the claim's to take back at once
	// (leaseLive): the claim's transaction reclaims the expired leases
	// first (reclaimExpired, as the reaper would: the attempt counted,
	// max_attempts dead-lettered), and the claim then takes those tasks
	// with the OPEN ones, in claim order. On Postgres a probe on the pool
	// (leaseMayHaveExpired) finds whether there may be any, so that the
	// claim stays a transaction of one statement when there are none. On
	// SQLite (serial) the claim's write transaction looks itself: a
	// statement in the transaction the claim holds anyway costs less than
	// a read transaction of its own (a third of a claim's time, issue 40's
	// bench-ab).
	// failed answers every live claim with err.
	failed := func(err error) []groupcommit.Result[[]cks.ClaimedTask] {
		for _, i := range live {
			out[i] = groupcommit.Result[[]cks.ClaimedTask]{Err: err}
		}
		return out
	}
	stale := s.serial
	if !s.serial {
		var err error
		if stale, err = s.leaseMayHaveExpired(ctx); err != nil {
			return failed(err)
		}
	}
	single = single && !stale
	// With limits, the claim is keyed (claimKeyed): it reads the limits
	// and the held keys first, so it is not one statement.
	keyed, err := s.limitsMayExist(ctx)
	if err != nil {
		return failed(err)
	}
	single = single && !keyed
	noLimits := false
	var rateFree time.Time // when a key full at its rate next frees a start
	// owner is the call and token of each lease hash.
	type owner struct{ call, token int }
	err = s.writeWith(ctx, driver.TxOptions{Single: single}, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		for _, i := range live {
			out[i].Val = make([]cks.ClaimedTask, 0, batch[i].In.p.N)
		}
		if stale {
			if _, _, err := reclaimExpired(ctx, ex, now); err != nil {
				return err
			}
		}
		var caps *keyCaps
		if keyed {
			var err error
			if caps, err = readKeyCaps(ctx, ex, driver.LockUpdate, now, true); err != nil {
				return err
			}
			if noLimits = len(caps.limits) == 0; noLimits {
				caps = nil
			}
		}
		done := map[string]bool{}
		for _, first := range live {
			key := keys[first]
			if done[key] {
				continue
			}
			done[key] = true
			p := batch[first].In.p
			params := driver.TaskClaimParams{
				TaskClaimableParams: driver.TaskClaimableParams{State: string(cks.TaskOpen),
					Excluded: strs(DispatchExcluded[:]), Types: p.Types, Now: now},
				To: string(cks.TaskClaimed), AttemptsAdded: 1}
			if p.Running {
				params.Then = driver.TaskClaimThen{To: string(cks.TaskRunning)}
			}
			n := 0
			for _, i := range live {
				if keys[i] == key {
					n += len(batch[i].In.hashes)
				}
			}
			params.Leases = make([]driver.TaskClaimLease, 0, n)
			// owners[j] is the owner of params.Leases[j].
			owners := make([]owner, 0, n)
			for _, i := range live {
				if keys[i] != key {
					continue
				}
				c := batch[i].In
				for k, h := range c.hashes {
					l := driver.TaskClaimLease{TokenHash: h, ClaimedBy: c.p.Worker,
						ExpiresAt: now.Add(c.p.Lease), Ms: c.p.Lease.Milliseconds()}
					if c.agentHashes != nil {
						l.AgentTokenHash = c.agentHashes[k]
					}
					params.Leases = append(params.Leases, l)
					owners = append(owners, owner{i, k})
				}
			}
			params.Limit = len(params.Leases)
			var rows []driver.TaskClaimed
			var err error
			if caps != nil {
				rows, err = claimKeyed(ctx, ex, caps, params)
			} else {
				rows, err = ex.TaskClaim(ctx, params)
			}
			if err != nil {
				return err
			}
			if len(rows) > 0 { // noted, published after the commit (write)
				if err := ex.Notify(ctx, cks.TopicTasksMoved); err != nil {
					return err
				}
			}
			var byHash map[string]owner // built only if a row is out of lease order
			for j, r := range rows {
				// The driver hands the leases out in claim order and
				// returns the rows in it, so row j has lease j; the token
				// of a row is the one whose hash it got, looked up by
				// hash should a row come back out of that order.
				var o owner
				if j < len(owners) && r.LeaseTokenHash == params.Leases[j].TokenHash {
					o = owners[j]
				} else {
					if byHash == nil {
						byHash = make(map[string]owner, len(owners))
						for k, l := range params.Leases {
							byHash[l.TokenHash] = owners[k]
						}
					}
					var ok bool
					if o, ok = byHash[r.LeaseTokenHash]; !ok {
						return fmt.Errorf("claim: task %d came back with a lease this claim did not make", r.ID)
					}
				}
				out[o.call].Val = append(out[o.call].Val, cks.ClaimedTask{Task: toTask(r.TaskRow, r.DependsOn),
					LeaseToken: batch[o.call].In.tokens[o.token], Traceparent: s.claimTraceparent(&r.TaskRow)})
			}
		}
		if caps != nil {
			rateFree = caps.nextFree()
		}
		return groupcommit.Abandoned(batch)
	})
	if err != nil {
		return failed(err)
	}
	if noLimits {
		s.noteLimits(false, s.clock.Now())
	}
	s.noteRateFree(rateFree)
	return out
}

// leaseMayHaveExpired is the claim's probe for leases that expired
// unrenewed (Postgres: one statement on the pool). It looks MinLease ahead:
// when no lease expires before then, the claims of the next MinLease need
// not look again — every lease set after the probe lasts at least MinLease
// (ValidateClaim; a renewal only moves an expiry later) — so a busy hub
// probes about once a second instead of at every claim (0.6 ms of a claim's
// 1.5, issue 40's bench-ab). A lease that expires between a probe and a
// claim is the next claim's, or the reaper's.
func (s *Service) leaseMayHaveExpired(ctx context.Context) (bool, error) {
	now := driver.Time(s.clock.Now())
	if now.UnixNano() < s.leasesLiveUntil.Load() {
		return false, nil
	}
	horizon := now.Add(MinLease)
	rows, err := s.db.Executor().TaskLeaseExpired(ctx, leasesExpiringBy(horizon, 1))
	if err != nil {
		return false, err
	}
	if len(rows) == 0 {
		s.leasesLiveUntil.Store(horizon.UnixNano())
		return false, nil
	}
	return true, nil // one expires within MinLease: the claim's transaction looks
}
