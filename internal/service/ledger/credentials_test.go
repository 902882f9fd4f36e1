package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestClaimCredentialed: a claim with ClaimParams.Issue (claim_tasks')
// gives every task it takes its credential, or, when one cannot be issued,
// gives every task back (OPEN, its attempt returned, its lease revoked) and
// fails — no task is left leased to a claimer without a credential.
func TestClaimCredentialed(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		for range 3 {
			if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "cred"}); err != nil {
				t.Fatal(err)
			}
		}
		p := ledger.ClaimParams{Worker: "w", Types: []string{"cred"}, N: 2, Lease: time.Minute}
		refused := errors.New("no credential today")
		issued := 0
		p.Issue = func(_ context.Context, ct cks.ClaimedTask) error {
			if issued == 1 {
				return refused
			}
			issued++
			return nil
		}
		_, err := s.Claim(ctx, p)
		if !errors.Is(err, refused) {
			t.Fatalf("claim with a failing credential = %v, want %v", err, refused)
		}
		page, err := s.ListTasks(ctx, cks.TaskFilter{Types: []string{"cred"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range page.Tasks {
			if task.State != cks.TaskOpen || task.Attempts != 0 || task.ClaimedBy != "" {
				t.Fatalf("task %d after the failed claim: %s, attempts %d, claimed by %q; want OPEN, 0, nobody",
					task.ID, task.State, task.Attempts, task.ClaimedBy)
			}
		}
		creds := map[int64]string{}
		p.Issue = func(_ context.Context, ct cks.ClaimedTask) error {
			creds[ct.ID] = "cred-" + ct.LeaseToken
			return nil
		}
		ts, err := s.Claim(ctx, p)
		if err != nil || len(ts) != 2 || len(creds) != 2 {
			t.Fatalf("claim = %d tasks, %d credentials, %v; want 2 and 2", len(ts), len(creds), err)
		}
		for _, ct := range ts {
			if creds[ct.ID] != "cred-"+ct.LeaseToken || ct.Attempts != 1 {
				t.Fatalf("task %d: credential %q, attempts %d; want its own credential and attempt 1", ct.ID, creds[ct.ID], ct.Attempts)
			}
		}
	})
}
