package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestClaimAgentToken: a claim with ClaimParams.AgentToken (claim_tasks')
// hands over one secret per task it took, each its own, and none for a
// task it did not take — also when several claims share one statement
// (the claimer's group) and when the claim waited for its task. That the
// secret authenticates only with its lease is auth's test
// (TestTaskTokenEndsWithItsLease).
func TestClaimAgentToken(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		for range 5 {
			if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "cred"}); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(n int, wait time.Duration) ([]cks.ClaimedTask, map[int64]string) {
			t.Helper()
			secrets := map[int64]string{}
			ts, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"cred"}, N: n, Lease: time.Minute, Wait: wait,
				AgentToken: func(id int64, secret string) { secrets[id] = secret }})
			if err != nil {
				t.Fatal(err)
			}
			return ts, secrets
		}
		seen := map[string]bool{}
		check := func(ts []cks.ClaimedTask, secrets map[int64]string) {
			t.Helper()
			if len(secrets) != len(ts) {
				t.Fatalf("%d tasks claimed, %d secrets: %v", len(ts), len(secrets), secrets)
			}
			for _, ct := range ts {
				sec := secrets[ct.ID]
				if len(sec) != 32 || seen[sec] || sec == ct.LeaseToken {
					t.Fatalf("task %d: secret %q (seen before %v), lease token %q; want a fresh secret of its own", ct.ID, sec, seen[sec], ct.LeaseToken)
				}
				seen[sec] = true
			}
		}
		ts, secrets := claim(2, 0)
		if len(ts) != 2 {
			t.Fatalf("claimed %d, want 2", len(ts))
		}
		check(ts, secrets)
		// Claims side by side: the claimer may put them in one statement.
		type got struct {
			ts      []cks.ClaimedTask
			secrets map[int64]string
		}
		out := make(chan got, 2)
		for range 2 {
			go func() {
				secrets := map[int64]string{}
				ts, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"cred"}, N: 1, Lease: time.Minute,
					AgentToken: func(id int64, secret string) { secrets[id] = secret }})
				if err != nil {
					t.Error(err)
				}
				out <- got{ts, secrets}
			}()
		}
		for range 2 {
			g := <-out
			check(g.ts, g.secrets)
		}
		ts, secrets = claim(1, 10*time.Second) // one left: taken at once
		check(ts, secrets)
		if ts, secrets = claim(1, 0); len(ts) != 0 || len(secrets) != 0 {
			t.Fatalf("a claim of nothing: %d tasks, secrets %v", len(ts), secrets)
		}
	})
}
