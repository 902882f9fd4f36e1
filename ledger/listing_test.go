package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend/backendtest"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store/storetest"
)

// TestListStoppedFirst: on both backends, every STOPPED task heads the first
// page, longest held first, then one page of the rest in id order; a later
// page has no STOPPED head; MaxStopped bounds the head and says there is
// more; an empty Rest lists the STOPPED tasks only.
func TestListStoppedFirst(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open storetest.Opener) {
		ctx := context.Background()
		c := clock.NewFake(storetest.T0)
		s := open(t, driver.WithClock(c))
		enqueue := func(title string) cks.Task {
			t.Helper()
			return storetest.MustEnqueue(t, s, cks.NewTask{Type: "t", Title: title})
		}
		stop := func(task cks.Task) {
			t.Helper()
			if _, _, err := s.Tasks.Stop(ctx, task.ID, "op", "hold", 0); err != nil {
				t.Fatal(err)
			}
		}
		a, b, held, open1, older := enqueue("a"), enqueue("b"), enqueue("held"), enqueue("open"), enqueue("older")
		stop(held)                          // held since T0
		c.Set(storetest.T0.Add(-time.Hour)) // a hold from earlier: held longest
		stop(older)
		c.Set(storetest.T0.Add(time.Hour))
		stop(b)

		l, err := ledger.ListStoppedFirst(ctx, s.Tasks, ledger.StoppedFirstQuery{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids := func(ts []cks.Task) []int64 {
			var out []int64
			for _, t := range ts {
				out = append(out, t.ID)
			}
			return out
		}
		want := []int64{older.ID, held.ID, b.ID, a.ID}
		if got := ids(l.Tasks); l.Stopped != 3 || !equal(got, want) || l.Next == 0 {
			t.Fatalf("first page: %d stopped, %v, next %d; want 3 stopped, %v, a next page", l.Stopped, got, l.Next, want)
		}
		l, err = ledger.ListStoppedFirst(ctx, s.Tasks, ledger.StoppedFirstQuery{After: l.Next, Limit: 1})
		if got := ids(l.Tasks); err != nil || l.Stopped != 0 || !equal(got, []int64{open1.ID}) {
			t.Fatalf("second page: %+v, %v; want no STOPPED head, then %d", l, err, open1.ID)
		}
		l, err = ledger.ListStoppedFirst(ctx, s.Tasks, ledger.StoppedFirstQuery{Rest: []cks.TaskState{}, MaxStopped: 2})
		if got := ids(l.Tasks); err != nil || l.Stopped != 2 || !l.MoreStopped || len(got) != 2 {
			t.Fatalf("at most 2 stopped: %+v, %v; want 2 of them and more_stopped", l, err)
		}
	})
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
