package ledger_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestUnclaimedTypesCache (both backends): UnclaimedTypes reads the ledger
// once per ledger.TypesTTL of the service's clock, however often it is
// asked (a task enqueued meanwhile shows once the answer expired), while
// the live processes' types, its argument, count at every call.
func TestUnclaimedTypesCache(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := context.Background()
		var reads atomic.Int64
		ledger.CountTypesReads(s.Tasks, &reads)
		unclaimed := func(declared map[string]bool) []string {
			t.Helper()
			u, err := s.Tasks.UnclaimedTypes(ctx, time.Minute, declared)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, ty := range u.Types {
				out = append(out, ty.Type)
			}
			return out
		}
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "build"})
		c.Advance(2 * time.Minute)
		if got := unclaimed(nil); len(got) != 1 || got[0] != "build" {
			t.Fatalf("unclaimed %q, want [build]", got)
		}
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "lint"})
		for range 5 {
			if got := unclaimed(nil); len(got) != 1 {
				t.Fatalf("unclaimed %q within the ttl, want the kept [build]", got)
			}
		}
		if got := unclaimed(map[string]bool{"build": true}); len(got) != 0 {
			t.Fatalf("unclaimed %q with build declared, want none: the declared types are not kept", got)
		}
		if n := reads.Load(); n != 1 {
			t.Fatalf("%d reads within the ttl, want 1", n)
		}
		c.Advance(ledger.TypesTTL + time.Minute) // lint now waited over a minute too
		if got := unclaimed(nil); len(got) != 2 {
			t.Fatalf("unclaimed %q after the ttl, want build and lint", got)
		}
		if n := reads.Load(); n != 2 {
			t.Fatalf("%d reads, want 2", n)
		}
	})
}
