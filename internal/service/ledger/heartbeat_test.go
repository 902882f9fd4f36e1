package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestHeartbeat: the heartbeat of an executor that hears no notifications
// (touch_task over HTTP or MCP) answers whether its lease is held and, when
// it is not, whether an operator's stop revoked it with an abort to
// confirm — not when the lease ended any other way, nor for another token.
func TestHeartbeat(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		claim := func(typ string) cks.ClaimedTask {
			t.Helper()
			if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: typ}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{typ}, N: 1, Lease: time.Minute})
			if err != nil || len(got) != 1 {
				t.Fatalf("claim %s = %v, %v", typ, got, err)
			}
			return got[0]
		}
		stopped, finished := claim("beat-stopped"), claim("beat-finished")
		if _, err := s.StopTask(ctx, ledger.StopParams{ID: stopped.ID, Actor: "op", Reason: "hold", Deadline: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, finished.ID, finished.LeaseToken, false, "done"); err != nil {
			t.Fatal(err)
		}
		held := claim("beat-held")
		for _, c := range []struct {
			name  string
			id    int64
			token string
			want  cks.TouchResult
		}{
			{"held", held.ID, held.LeaseToken, cks.TouchResult{Held: true}},
			{"stopped: abort to confirm", stopped.ID, stopped.LeaseToken, cks.TouchResult{AbortRequested: true}},
			{"finished: nothing to confirm", finished.ID, finished.LeaseToken, cks.TouchResult{}},
			{"another task's token", stopped.ID, held.LeaseToken, cks.TouchResult{}},
			{"no token", stopped.ID, "", cks.TouchResult{}},
		} {
			got, err := s.Heartbeat(ctx, c.id, c.token)
			if err != nil || got != c.want {
				t.Errorf("%s: Heartbeat = %+v, %v; want %+v", c.name, got, err, c.want)
			}
		}
		if _, err := s.ConfirmAbort(ctx, stopped.ID, stopped.LeaseToken); err != nil {
			t.Fatal(err)
		}
		// Confirmed, the abort still names the lease: the executor that
		// beats again learns the same, and confirming again changes nothing.
		if got, err := s.Heartbeat(ctx, stopped.ID, stopped.LeaseToken); err != nil || got != (cks.TouchResult{AbortRequested: true}) {
			t.Errorf("after the confirmation: Heartbeat = %+v, %v", got, err)
		}
	})
}
