package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
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
			if _, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: task.ID, Actor: "op", Reason: "hold"}); err != nil {
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
			if _, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: task.ID, Actor: "op", Reason: "hold"}); err != nil {
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

// TestListFilterAndSort: on both backends, list_tasks' filters q (title,
// description or criteria, either case), created_by and unconfirmed_abort
// select what they say, alone and together with a state; each sort orders
// the page by its key, and paging by one task at a time with next_cursor
// (and next_key) walks every task exactly once in that order, also after
// the cursor's task changed; a bad sort, key or text is refused naming
// its field.
func TestListFilterAndSort(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		mk := func(n cks.NewTask) cks.Task {
			t.Helper()
			c.Advance(time.Second)
			if n.Type == "" {
				n.Type = "t"
			}
			return backendtest.MustEnqueue(t, s, n)
		}
		a := mk(cks.NewTask{Title: "Build the Parser", Priority: 5, CreatedBy: "alice"})
		b := mk(cks.NewTask{Title: "b", Description: "needs a PARSER fix", Priority: 9, CreatedBy: "bob"})
		cc := mk(cks.NewTask{Title: "c", AcceptanceCriteria: "the parser passes", Priority: 5, CreatedBy: "alice"})
		d := mk(cks.NewTask{Type: "run", Title: "d", Priority: 1, CreatedBy: "bob"})
		e := mk(cks.NewTask{Title: "e", Priority: 9, CreatedBy: "carol"})
		// d runs and is stopped with an abort its executor never confirms;
		// a's abort is confirmed.
		backendtest.ClaimType(t, s, "w", "run")
		c.Advance(time.Second)
		if res, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: d.ID, Actor: "op", Reason: "hold", Deadline: time.Minute}); err != nil || res.Abort == nil {
			t.Fatalf("stop d: %v %v", res.Abort, err)
		}
		// a is the latest changed: its update moves it to the end of updated.
		c.Advance(time.Second)
		if _, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: a.ID, Actor: "op", Patch: cks.TaskPatch{Priority: new(5)}}); err != nil {
			t.Fatal(err)
		}
		ids := func(p cks.TaskPage) []int64 {
			out := []int64{}
			for _, t := range p.Tasks {
				out = append(out, t.ID)
			}
			return out
		}
		for _, tc := range []struct {
			name string
			f    cks.TaskFilter
			want []int64
		}{
			{"q in any text, any case", cks.TaskFilter{Text: "pArSeR"}, []int64{a.ID, b.ID, cc.ID}},
			{"q no match", cks.TaskFilter{Text: "nothing"}, []int64{}},
			{"created_by", cks.TaskFilter{CreatedBy: "alice"}, []int64{a.ID, cc.ID}},
			{"q and created_by", cks.TaskFilter{Text: "parser", CreatedBy: "bob"}, []int64{b.ID}},
			{"unconfirmed abort", cks.TaskFilter{UnconfirmedAbort: true}, []int64{d.ID}},
			{"unconfirmed abort and a state", cks.TaskFilter{UnconfirmedAbort: true, States: []cks.TaskState{cks.TaskOpen}}, []int64{}},
			{"-id", cks.TaskFilter{Sort: cks.TaskSortIDDesc}, []int64{e.ID, d.ID, cc.ID, b.ID, a.ID}},
			{"updated", cks.TaskFilter{Sort: cks.TaskSortUpdated}, []int64{b.ID, cc.ID, e.ID, d.ID, a.ID}},
			{"-updated", cks.TaskFilter{Sort: cks.TaskSortUpdatedDesc}, []int64{a.ID, d.ID, e.ID, cc.ID, b.ID}},
			{"priority", cks.TaskFilter{Sort: cks.TaskSortPriority}, []int64{b.ID, e.ID, a.ID, cc.ID, d.ID}},
			{"priority and q", cks.TaskFilter{Sort: cks.TaskSortPriority, Text: "parser"}, []int64{b.ID, a.ID, cc.ID}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, err := s.Tasks.ListTasks(ctx, tc.f)
				if err != nil || !equal(ids(p), tc.want) || p.Next != 0 {
					t.Fatalf("%+v: %v next %d, %v; want %v", tc.f, ids(p), p.Next, err, tc.want)
				}
				// count_tasks counts what the list selects, per state too.
				if n, err := s.Tasks.CountTasks(ctx, tc.f); err != nil || n != len(tc.want) {
					t.Fatalf("%+v: count %d, %v; want %d", tc.f, n, err, len(tc.want))
				}
				if byState, err := s.Tasks.CountTasksByState(ctx, tc.f); err != nil || byState.Total != len(tc.want) {
					t.Fatalf("%+v: counts %+v, %v; want a total of %d", tc.f, byState, err, len(tc.want))
				}
				// One task a page walks the same order.
				var walked []int64
				f := tc.f
				f.Limit = 1
				for range 10 {
					p, err := s.Tasks.ListTasks(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					walked = append(walked, ids(p)...)
					if p.Next == 0 {
						break
					}
					if (p.NextKey != "") != f.Sort.Keyed() {
						t.Fatalf("sort %q: next_key %q", f.Sort, p.NextKey)
					}
					f.After, f.AfterKey = p.Next, p.NextKey
				}
				if len(walked) == 0 {
					walked = []int64{}
				}
				if !equal(walked, tc.want) {
					t.Fatalf("paged one at a time: %v, want %v", walked, tc.want)
				}
			})
		}
		// A page's cursor holds its place when its task changes meanwhile.
		p, err := s.Tasks.ListTasks(ctx, cks.TaskFilter{Sort: cks.TaskSortUpdated, Limit: 2})
		if err != nil || !equal(ids(p), []int64{b.ID, cc.ID}) {
			t.Fatalf("updated, 2: %v %v", ids(p), err)
		}
		c.Advance(time.Second)
		if _, err := s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: cc.ID, Actor: "op", Patch: cks.TaskPatch{Priority: new(6)}}); err != nil {
			t.Fatal(err)
		}
		p, err = s.Tasks.ListTasks(ctx, cks.TaskFilter{Sort: cks.TaskSortUpdated, After: p.Next, AfterKey: p.NextKey})
		if err != nil || !equal(ids(p), []int64{e.ID, d.ID, a.ID, cc.ID}) {
			t.Fatalf("updated after the changed cursor: %v %v; want e d a, then c moved last", ids(p), err)
		}
		for _, bad := range []struct {
			f     cks.TaskFilter
			field string
		}{
			{cks.TaskFilter{Sort: "newest"}, "sort"},
			{cks.TaskFilter{Sort: cks.TaskSortUpdated, After: a.ID}, "cursor_key"},
			{cks.TaskFilter{Sort: cks.TaskSortUpdated, After: a.ID, AfterKey: "yesterday"}, "cursor_key"},
			{cks.TaskFilter{Sort: cks.TaskSortPriority, After: a.ID, AfterKey: "high"}, "cursor_key"},
			{cks.TaskFilter{Sort: cks.TaskSortIDDesc, AfterKey: "5"}, "cursor_key"},
			{cks.TaskFilter{Text: strings.Repeat("x", cks.MaxSearchText+1)}, "q"},
			{cks.TaskFilter{Text: "a\x00b"}, "q"},
			{cks.TaskFilter{CreatedBy: strings.Repeat("x", cks.MaxSearchText+1)}, "created_by"},
		} {
			_, err := s.Tasks.ListTasks(ctx, bad.f)
			if fe, ok := errors.AsType[*cks.FieldError](err); !ok || fe.Field != bad.field {
				t.Errorf("%+v: %v, want a field error naming %s", bad.f, err, bad.field)
			}
		}
	})
}
