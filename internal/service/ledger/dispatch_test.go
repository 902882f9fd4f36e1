package ledger_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// recorder is a driver whose executors record the exclusion set of every
// claim and reclaim read they pass on.
type recorder struct {
	driver.Driver
	mu       sync.Mutex
	excluded map[string][][]string // by primitive
}

func (r *recorder) note(what string, excluded []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.excluded[what] = append(r.excluded[what], slices.Clone(excluded))
}

func (r *recorder) Executor() driver.Executor { return recording{r.Driver.Executor(), r} }

func (r *recorder) WithTx(ctx context.Context, opts driver.TxOptions, fn func(context.Context, driver.Executor) error) error {
	return r.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error { return fn(ctx, recording{ex, r}) })
}

type recording struct {
	driver.Executor
	r *recorder
}

func (e recording) TaskClaimable(ctx context.Context, p driver.TaskClaimableParams) ([]driver.TaskRow, error) {
	e.r.note("claimable", p.Excluded)
	return e.Executor.TaskClaimable(ctx, p)
}

func (e recording) TaskClaim(ctx context.Context, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	e.r.note("claimable", p.Excluded)
	return e.Executor.TaskClaim(ctx, p)
}

func (e recording) TaskLeaseExpired(ctx context.Context, p driver.TaskLeaseExpiredParams) ([]driver.TaskRow, error) {
	e.r.note("lease expired", p.Excluded)
	return e.Executor.TaskLeaseExpired(ctx, p)
}

// TestDispatchExclusionSet: every claim and reclaim read the ledger makes
// passes exactly ledger.DispatchExcluded (ADR 0020: the sets must stay
// identical); the drivers' conformance suite checks that they apply it.
func TestDispatchExclusionSet(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		rec := &recorder{Driver: open(t), excluded: map[string][][]string{}}
		s := ledger.NewService(rec, nil)
		ctx := context.Background()
		for _, types := range [][]string{nil, {"a"}, {"a", "b"}} {
			if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "a"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: types, N: 1, Lease: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.ReclaimExpired(ctx, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		want := []string{string(cks.TaskNeedsInput), string(cks.TaskStopped)}
		for _, what := range []string{"claimable", "lease expired"} {
			calls := rec.excluded[what]
			if len(calls) == 0 {
				t.Errorf("no %s read recorded", what)
			}
			for _, got := range calls {
				if !slices.Equal(got, want) {
					t.Errorf("%s read excludes %v, want ledger.DispatchExcluded %v", what, got, want)
				}
			}
		}
	})
}
