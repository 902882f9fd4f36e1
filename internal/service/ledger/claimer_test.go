package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// waitClaimsQueued waits until n claims of s wait for the next batch.
func waitClaimsQueued(t testing.TB, s *ledger.Service, n int) {
	t.Helper()
	waitN(t, "claims", func() int { return ledger.ClaimsQueued(s) }, n)
}

// statements are the params of every claim statement so far.
func (g *gate) statements() []driver.TaskClaimParams {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.claims)
}

// withHeldClaim starts a claim of type "held" (by "blocker"), holds its
// statement, runs queue (which starts the claims that are to queue behind
// it), waits until want claims are queued, then releases it.
func withHeldClaim(t testing.TB, s *ledger.Service, g *gate, want int, queue func()) {
	t.Helper()
	withHeld(t, &g.claim, func() error {
		_, err := s.Claim(context.Background(), ledger.ClaimParams{Worker: "blocker", Types: []string{"held"}, N: 1, Lease: time.Hour})
		return err
	}, queue, func() { waitClaimsQueued(t, s, want) })
}

// TestClaimsShareAStatement: claims made while a claim is in flight go out
// together in the next batch — one statement for the claims of one kind
// (types, Running), one more for another kind, in one transaction — and
// each caller gets tasks leased to itself alone: its own name on the task
// and on the claim event, its own lease length, tokens that work for it;
// the first caller gets the first tasks, and no task goes to two callers.
func TestClaimsShareAStatement(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil), context.Background()
			ledger.SetMaxClaims(s, 1) // while the held claim runs, the others queue
			var ids []int64
			for i := range 9 {
				task, _, err := s.Enqueue(ctx, cks.NewTask{Type: "x", Title: fmt.Sprint(i), Priority: 9 - i})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, task.ID)
			}
			other, _, err := s.Enqueue(ctx, cks.NewTask{Type: "y", Title: "y"})
			if err != nil {
				t.Fatal(err)
			}
			// Four claimers of x asking 3, 2, 3, 3 (11 for 9 tasks), each
			// for its own lease; one of y that starts its task.
			asks := []struct {
				worker string
				n      int
				lease  time.Duration
			}{{"w0", 3, time.Minute}, {"w1", 2, 2 * time.Minute}, {"w2", 3, 3 * time.Minute}, {"w3", 3, 4 * time.Minute}}
			got := make([][]cks.ClaimedTask, len(asks))
			errs := make([]error, len(asks))
			var (
				wg     sync.WaitGroup
				ygot   []cks.ClaimedTask
				yerr   error
				queued = 0
			)
			withHeldClaim(t, s, g, len(asks)+1, func() {
				for k, a := range asks {
					wg.Go(func() {
						got[k], errs[k] = s.Claim(ctx, ledger.ClaimParams{Worker: a.worker, Types: []string{"x"}, N: a.n, Lease: a.lease})
					})
					queued++
					waitClaimsQueued(t, s, queued) // queue order is asks order
				}
				wg.Go(func() {
					ygot, yerr = s.Claim(ctx, ledger.ClaimParams{Worker: "wy", Types: []string{"y"}, N: 1,
						Lease: time.Minute, Running: true})
				})
			})
			wg.Wait()
			stmts := g.statements()
			if len(stmts) != 3 || len(stmts[1].Leases) != 11 || !slices.Equal(stmts[1].Types, []string{"x"}) ||
				len(stmts[2].Leases) != 1 || stmts[2].Then.To != string(cks.TaskRunning) {
				t.Fatalf("claim statements %d, want 3: the held one, x for 11 leases, y straight to RUNNING", len(stmts))
			}
			seen := map[int64]string{}
			next := 0
			for k, a := range asks {
				if errs[k] != nil {
					t.Fatalf("%s: %v", a.worker, errs[k])
				}
				want := min(a.n, len(ids)-next)
				if len(got[k]) != want {
					t.Fatalf("%s got %d tasks, want %d (the first callers first)", a.worker, len(got[k]), want)
				}
				for i, c := range got[k] {
					if c.ID != ids[next+i] {
						t.Errorf("%s got task %d, want %d (claim order)", a.worker, c.ID, ids[next+i])
					}
					if prev, ok := seen[c.ID]; ok {
						t.Fatalf("task %d went to %s and %s", c.ID, prev, a.worker)
					}
					seen[c.ID] = a.worker
					task, err := s.GetTask(ctx, c.ID)
					if err != nil {
						t.Fatal(err)
					}
					lease := task.LeaseExpiresAt.Sub(task.ClaimedAt)
					if task.ClaimedBy != a.worker || lease != a.lease || len(task.Events) == 0 ||
						task.Events[len(task.Events)-1].Actor != a.worker {
						t.Errorf("task %d: claimed by %q for %v, events %+v; want %s for %v", c.ID, task.ClaimedBy,
							lease, task.Events, a.worker, a.lease)
					}
					if _, err := s.Complete(ctx, c.ID, c.LeaseToken, false, "done"); err != nil {
						t.Errorf("%s completing task %d with its token: %v", a.worker, c.ID, err)
					}
				}
				next += want
			}
			if yerr != nil || len(ygot) != 1 || ygot[0].ID != other.ID || ygot[0].State != cks.TaskRunning ||
				ygot[0].ClaimedBy != "wy" {
				t.Fatalf("claim of y: %+v %v, want task %d RUNNING for wy", ygot, yerr, other.ID)
			}
		})
	}
}

// TestClaimWithdraw: a claim whose caller gives up while it waits in the
// queue returns the context's error, takes nothing, and leaves the rest
// of its batch to claim.
func TestClaimWithdraw(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			g := &gate{Driver: dl.open(t)}
			s, ctx := ledger.NewService(g, nil), context.Background()
			ledger.SetMaxClaims(s, 1)
			for i := range 2 {
				if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "x", Title: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			gone, cancel := context.WithCancel(ctx)
			var (
				wg            sync.WaitGroup
				mine, theirs  []cks.ClaimedTask
				mineE, theirE error
			)
			withHeldClaim(t, s, g, 1, func() {
				wg.Go(func() {
					mine, mineE = s.Claim(gone, ledger.ClaimParams{Worker: "quitter", Types: []string{"x"}, N: 2, Lease: time.Hour})
				})
				waitClaimsQueued(t, s, 1)
				cancel()
				waitClaimsQueued(t, s, 0)
				wg.Go(func() {
					theirs, theirE = s.Claim(ctx, ledger.ClaimParams{Worker: "stayer", Types: []string{"x"}, N: 2, Lease: time.Hour})
				})
			})
			wg.Wait()
			if !errors.Is(mineE, context.Canceled) || len(mine) != 0 {
				t.Fatalf("withdrawn claim: %d tasks, %v; want none and context.Canceled", len(mine), mineE)
			}
			if theirE != nil || len(theirs) != 2 {
				t.Fatalf("the claim after it: %d tasks, %v; want both", len(theirs), theirE)
			}
			for _, p := range g.statements() {
				for _, l := range p.Leases {
					if l.ClaimedBy == "quitter" {
						t.Fatalf("a statement carried the withdrawn claim: %+v", p)
					}
				}
			}
		})
	}
}

// shuffled is a driver whose claim statements return their rows out of
// claim order (reversed), as the driver's contract does not allow.
type shuffled struct{ driver.Driver }

func (d shuffled) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	return d.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error { return fn(ctx, reversedClaims{ex}) })
}

type reversedClaims struct{ driver.Executor }

func (e reversedClaims) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	rows, err := e.Executor.TaskClaim(ctx, p)
	slices.Reverse(rows)
	return rows, err
}

// TestClaimerRowsOutOfOrder: the claimer gives each row the token of the
// lease it got even when the rows do not come back in lease order (it reads
// row j as lease j only when their hashes agree): every token completes its
// own task.
func TestClaimerRowsOutOfOrder(t *testing.T) {
	for _, dl := range dialects {
		t.Run(dl.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := ledger.NewService(shuffled{dl.open(t)}, nil), context.Background()
			for _, c := range claimN(t, s, "x", 4) {
				if _, err := s.Complete(ctx, c.ID, c.LeaseToken, false, "ok"); err != nil {
					t.Errorf("task %d: %v", c.ID, err)
				}
			}
		})
	}
}
