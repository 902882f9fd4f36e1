package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/waitfor"
)

// TestPauseType (both backends, two handles on one database as two hubs):
// a type paused on one handle is skipped by the other's claims, of any type
// and of that type, while other types are claimed; an attempt claimed before
// the pause completes; a second pause keeps the first; a claim waiting for
// the type is answered when another handle resumes it; resuming twice
// changes nothing the second time.
func TestPauseType(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s, ops := open(t), open(t)
		ctx := context.Background()
		claim := func(types ...string) []cks.ClaimedTask {
			t.Helper()
			got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: types, N: 5, Lease: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		held := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "build"})
		running := claim("build")
		if len(running) != 1 || running[0].ID != held.ID {
			t.Fatalf("claim before the pause: %+v, want task %d", running, held.ID)
		}
		build := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "build", Priority: 9})
		lint := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "lint"})

		p, err := ops.Tasks.PauseType(ctx, ledger.PauseTypeParams{Type: "build", Actor: "ops", Reason: "provider down"})
		if err != nil || p.Type != "build" || p.PausedBy != "ops" || p.Reason != "provider down" || p.PausedAt.IsZero() {
			t.Fatalf("pause: %+v, %v", p, err)
		}
		again, err := ops.Tasks.PauseType(ctx, ledger.PauseTypeParams{Type: "build", Actor: "someone", Reason: "again"})
		if err != nil || again != p {
			t.Fatalf("second pause: %+v, %v; want the first kept: %+v", again, err, p)
		}
		if got := claim(); len(got) != 1 || got[0].ID != lint.ID {
			t.Fatalf("claim of any type while build is paused: %+v, want only the lint task %d", got, lint.ID)
		}
		if got := claim("build"); len(got) != 0 {
			t.Fatalf("claim of build while paused: %+v, want none", got)
		}
		if _, err := s.Tasks.Complete(ctx, held.ID, running[0].LeaseToken, false, "done"); err != nil {
			t.Fatalf("the attempt claimed before the pause: %v", err)
		}
		list, err := s.Tasks.PausedTypes(ctx)
		if err != nil || len(list) != 1 || list[0] != p {
			t.Fatalf("paused types: %+v, %v; want [%+v]", list, err, p)
		}

		waiting := waitingClaim(ctx, s, ledger.ClaimParams{Worker: "waiter", Types: []string{"build"}, N: 1, Wait: ledger.MaxClaimWait})
		waitfor.Until(t, "the claim of build waiting", func() bool { return s.Tasks.ClaimsWaiting() == 1 })
		if r, err := ops.Tasks.ResumeType(ctx, "build"); err != nil || !r.Resumed || r.Type != "build" {
			t.Fatalf("resume: %+v, %v", r, err)
		}
		if r := answer(t, "the waiter of the resumed type", waiting); r.err != nil || len(r.tasks) != 1 || r.tasks[0].ID != build.ID {
			t.Fatalf("waiter after resume: %+v, %v; want task %d", r.tasks, r.err, build.ID)
		}
		if r, err := ops.Tasks.ResumeType(ctx, "build"); err != nil || r.Resumed {
			t.Fatalf("second resume: %+v, %v; want resumed false", r, err)
		}
		if list, err := s.Tasks.PausedTypes(ctx); err != nil || len(list) != 0 {
			t.Fatalf("paused types after resume: %+v, %v", list, err)
		}
	})
}
