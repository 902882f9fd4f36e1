package ops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// TestUnclaimedTypes (issue 39 item 8): a type whose due OPEN tasks have
// waited past after_s is unclaimed unless a task of it is held (CLAIMED
// or RUNNING) or a live process names it among its --types; a process
// that stopped beating no longer counts, a type whose tasks waited less is
// not listed, and a misspelt type (a trailing space) is refused at create,
// so it never waits. Both backends.
func TestUnclaimedTypes(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		svc := &ops.Services{Tasks: s.Tasks, Liveness: liveness.NewService(s.Driver(), c), Clock: c}
		ctx := auth.WithLocalOperator(context.Background())
		enqueue := func(typ string) cks.Task {
			t.Helper()
			task, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ})
			if err != nil {
				t.Fatal(err)
			}
			return task
		}
		unclaimed := func(after time.Duration) map[string]cks.UnclaimedType {
			t.Helper()
			got, err := ops.Call(ctx, svc, ops.ListUnclaimedTypes, ops.Request{Args: fmt.Appendf(nil, `{"after_s":%v}`, after.Seconds())})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]cks.UnclaimedType{}
			u := got.(cks.UnclaimedTypes)
			for _, x := range u.Types {
				out[x.Type] = x
			}
			if u.Total != len(u.Types) || u.AfterS != after.Seconds() {
				t.Fatalf("total %d of %d types, after_s %v", u.Total, len(u.Types), u.AfterS)
			}
			return out
		}
		if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "build "}); !cks.IsFieldError(err, "type") {
			t.Fatalf(`create with type "build ": %v, want a FieldError naming type`, err)
		}
		enqueue("build")
		enqueue("build")
		enqueue("held")
		enqueue("held")
		if got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"held"}, N: 1, Lease: time.Hour}); err != nil || len(got) != 1 {
			t.Fatalf("claim held: %v %v", got, err)
		}
		enqueue("declared")
		c.Set(backendtest.T0.Add(90 * time.Second))
		enqueue("fresh")
		worker := backendtest.Liveness("i-declared", "exec", 90*time.Second)
		worker.TaskTypes = []string{"declared", "other"}
		backendtest.MustUpsert(t, s, worker)

		if got := unclaimed(2 * time.Minute); len(got) != 0 {
			t.Fatalf("after_s 120 at 90 s: %v, want none", got)
		}
		got := unclaimed(time.Minute)
		if len(got) != 1 || got["build"].Waiting != 2 || !got["build"].Since.Equal(backendtest.T0) {
			t.Fatalf("after_s 60 at 90 s: %+v, want build alone (2 waiting since T0)", got)
		}
		// The declaring process stops beating: its type is unclaimed too.
		c.Set(backendtest.T0.Add(time.Hour - time.Second))
		got = unclaimed(time.Minute)
		if _, ok := got["declared"]; !ok || len(got) != 3 {
			t.Fatalf("an hour on: %+v, want build, declared and fresh (held is held)", got)
		}
	})
}
