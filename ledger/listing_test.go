package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend/backendtest"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/ledger"
)

// TestListStoppedFirst: on both backends, every STOPPED task heads the first
// page, longest held first, then one page of the rest in id order; a later
// page has no STOPPED head; MaxStopped bounds the head and says there is
// more; an empty Rest lists the STOPPED tasks only.
func TestListStoppedFirst(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		enqueue := func(title string) cks.Task {
			t.Helper()
			return backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", Title: title})
		}
		stop := func(task cks.Task) {
			t.Helper()
			if _, _, err := s.Tasks.Stop(ctx, task.ID, "op", "hold", 0); err != nil {
				t.Fatal(err)
			}
		}
		a, b, held, open1, older := enqueue("a"), enqueue("b"), enqueue("held"), enqueue("open"), enqueue("older")
		stop(held)                            // held since T0
		c.Set(backendtest.T0.Add(-time.Hour)) // a hold from earlier: held longest
		stop(older)
		c.Set(backendtest.T0.Add(time.Hour))
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

// TestListInOrder: on both backends, the order of list_tasks. By id (and
// the empty order) it is the store's page; stopped_first is
// ListStoppedFirst's listing as a page that counts its STOPPED head (also
// none, on a later page), over the filter's types; stopped_first with a
// state filter, and an unknown order, are refused naming order.
func TestListInOrder(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		a := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", Title: "a"})
		held := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", Title: "held"})
		other := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "u", Title: "other type, held"})
		for _, task := range []cks.Task{other, held} {
			c.Advance(time.Minute)
			if _, _, err := s.Tasks.Stop(ctx, task.ID, "op", "hold", 0); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(p cks.TaskPage) []int64 {
			var out []int64
			for _, t := range p.Tasks {
				out = append(out, t.ID)
			}
			return out
		}
		for _, order := range []cks.TaskOrder{"", cks.TaskOrderByID} {
			p, err := ledger.ListInOrder(ctx, s.Tasks, cks.TaskFilter{Limit: 10}, order)
			if err != nil || p.Stopped != nil || !equal(ids(p), []int64{a.ID, held.ID, other.ID}) {
				t.Fatalf("order %q: %+v %v; want every task by id, no stopped count", order, p, err)
			}
		}
		p, err := ledger.ListInOrder(ctx, s.Tasks, cks.TaskFilter{Types: []string{"t"}, Limit: 1}, cks.TaskOrderStoppedFirst)
		if err != nil || p.Stopped == nil || *p.Stopped != 1 || !equal(ids(p), []int64{held.ID, a.ID}) || p.MoreStopped {
			t.Fatalf("stopped_first of type t: %+v %v; want held, then a", p, err)
		}
		p, err = ledger.ListInOrder(ctx, s.Tasks, cks.TaskFilter{Limit: 10}, cks.TaskOrderStoppedFirst)
		if err != nil || p.Stopped == nil || *p.Stopped != 2 || !equal(ids(p), []int64{other.ID, held.ID, a.ID}) {
			t.Fatalf("stopped_first: %+v %v; want the longest held first, then a", p, err)
		}
		p, err = ledger.ListInOrder(ctx, s.Tasks, cks.TaskFilter{After: a.ID, Limit: 10}, cks.TaskOrderStoppedFirst)
		if err != nil || p.Stopped == nil || *p.Stopped != 0 || len(p.Tasks) != 0 {
			t.Fatalf("stopped_first after the first page: %+v %v; want no STOPPED head, nothing more", p, err)
		}
		for _, bad := range []struct {
			f     cks.TaskFilter
			order cks.TaskOrder
		}{
			{cks.TaskFilter{States: []cks.TaskState{cks.TaskOpen}}, cks.TaskOrderStoppedFirst},
			{cks.TaskFilter{StateChangedBefore: backendtest.T0}, cks.TaskOrderStoppedFirst},
			{cks.TaskFilter{}, "newest"},
		} {
			_, err := ledger.ListInOrder(ctx, s.Tasks, bad.f, bad.order)
			if fe, ok := errors.AsType[*cks.FieldError](err); !ok || fe.Field != "order" {
				t.Errorf("%+v in order %q: %v, want a field error naming order", bad.f, bad.order, err)
			}
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
