package liveness_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// TestProcessPages: list_processes' pages (liveness.Service.Page) on both
// backends — the live view by default, the history on request, the alive
// and kind filters, the refusals naming their field.
func TestProcessPages(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"PagingWalksEveryRowOnce":  testPagingWalksEveryRowOnce,
		"DefaultViewHidesHistory":  testDefaultViewHidesHistory,
		"Filters":                  testProcessFilters,
		"BadFiltersNameTheirField": testBadProcessFilters,
		"Counts":                   testProcessCounts,
	})
}

// testProcessCounts: the metrics' counts, alive and stopped per kind, every
// known kind among the alive ones (0 included).
func testProcessCounts(t *testing.T, open backendtest.Opener) {
	svc, _ := history(t, open(t))
	alive, stopped, err := svc.Counts(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if alive["critic"] != 2 || alive["exec"] != 0 || len(alive) != len(liveness.KnownKinds()) ||
		stopped["critic"] != 5 || stopped["exec"] != 2 || len(stopped) != 2 {
		t.Fatalf("alive %v, stopped %v; want critic 2 alive, 5 stopped, exec 2 stopped", alive, stopped)
	}
}

// history seeds s with a history at now = T0+1h: critic has two alive
// instances (c-new, c-mid) and 5 exited ones; exec's newest (x-dead)
// stopped heartbeating, an older one exited; pipeline never ran. c-mid
// and c-old-0 start at the same time (the id breaks the tie).
func history(t *testing.T, s *backend.Backend) (*liveness.Service, *clock.Fake) {
	t.Helper()
	now := backendtest.T0.Add(time.Hour)
	up := func(id, kind string, started, heartbeat time.Duration, exited bool) {
		r := backendtest.Liveness(id, kind, started)
		r.LastHeartbeatAt = backendtest.T0.Add(heartbeat)
		if exited {
			r.ExitedAt = r.LastHeartbeatAt
		}
		backendtest.MustUpsert(t, s, r)
	}
	up("c-new", "critic", 50*time.Minute, time.Hour, false)
	up("c-mid", "critic", 40*time.Minute, time.Hour-time.Minute, false)
	for i := range 5 {
		at := 40*time.Minute - time.Duration(i)*5*time.Minute
		up(fmt.Sprintf("c-old-%d", i), "critic", at, at+time.Minute, true)
	}
	up("x-dead", "exec", 45*time.Minute, 46*time.Minute, false) // TTL 90 s: stopped at now
	up("x-old", "exec", 10*time.Minute, 20*time.Minute, true)
	c := clock.NewFake(now)
	return liveness.NewService(s.Driver(), c), c
}

func ids(ps []cks.Process) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.InstanceID
	}
	return strings.Join(out, " ")
}

// walk reads every page of in, limit rows at a time, and returns the ids in
// order; it fails on a page past the limit or a walk that does not end.
func walk(t *testing.T, svc *liveness.Service, in cks.ListProcessesInput) string {
	t.Helper()
	var all []string
	for range 100 {
		page, err := svc.Page(ctx(t), in)
		if err != nil {
			t.Fatalf("page %+v: %v", in, err)
		}
		if len(page.Processes) > in.Limit {
			t.Fatalf("page of %d rows, limit %d", len(page.Processes), in.Limit)
		}
		if ids := ids(page.Processes); ids != "" {
			all = append(all, ids)
		}
		if page.Next == "" {
			return strings.Join(all, " ")
		}
		in.Cursor = page.Next
	}
	t.Fatal("the pages do not end")
	return ""
}

// testPagingWalksEveryRowOnce: at every page size, the history's pages hold
// every instance exactly once, in the order of the whole list.
func testPagingWalksEveryRowOnce(t *testing.T, open backendtest.Opener) {
	s := open(t)
	svc, _ := history(t, s)
	all, err := svc.ListProcesses(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := ids(all)
	if len(all) != 9 {
		t.Fatalf("history of %d rows, want 9: %s", len(all), want)
	}
	for _, limit := range []int{1, 2, 3, 8, 9, 10} {
		if got := walk(t, svc, cks.ListProcessesInput{History: true, Limit: limit}); got != want {
			t.Errorf("limit %d: pages hold %q, want %q", limit, got, want)
		}
	}
	// The live view pages the same way.
	for _, limit := range []int{1, 2} {
		if got := walk(t, svc, cks.ListProcessesInput{Limit: limit}); got != "c-new x-dead c-mid" {
			t.Errorf("live view, limit %d: %q", limit, got)
		}
	}
}

// testDefaultViewHidesHistory: by default the newest instance of each kind
// (x-dead, stopped) and every alive one (c-new, c-mid); none of the exited
// history. An instance that stops heartbeating leaves the view unless it is
// its kind's newest.
func testDefaultViewHidesHistory(t *testing.T, open backendtest.Opener) {
	s := open(t)
	svc, c := history(t, s)
	page, err := svc.Page(ctx(t), cks.ListProcessesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page.Processes); got != "c-new x-dead c-mid" || page.Next != "" {
		t.Fatalf("default view %q (next %q), want c-new x-dead c-mid", got, page.Next)
	}
	st := map[string]cks.ProcessStatus{}
	for _, p := range page.Processes {
		st[p.InstanceID] = p.Status
	}
	if st["c-new"] != cks.ProcessAlive || st["c-mid"] != cks.ProcessAlive || st["x-dead"] != cks.ProcessStopped {
		t.Fatalf("statuses %v", st)
	}
	// c-mid's last heartbeat was at now-1m: 90 s of TTL later it is gone.
	c.Advance(31*time.Second + time.Microsecond)
	page, err = svc.Page(ctx(t), cks.ListProcessesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page.Processes); got != "c-new x-dead" {
		t.Fatalf("after c-mid's TTL: %q, want c-new x-dead", got)
	}
}

func testProcessFilters(t *testing.T, open backendtest.Opener) {
	s := open(t)
	svc, _ := history(t, s)
	yes, no := true, false
	for _, c := range []struct {
		name string
		in   cks.ListProcessesInput
		want string
	}{
		{"alive", cks.ListProcessesInput{Alive: &yes}, "c-new c-mid"},
		{"alive, history: the same", cks.ListProcessesInput{Alive: &yes, History: true}, "c-new c-mid"},
		{"stopped: the newest of a kind that is", cks.ListProcessesInput{Alive: &no}, "x-dead"},
		{"stopped history", cks.ListProcessesInput{Alive: &no, History: true}, "x-dead c-old-0 c-old-1 c-old-2 c-old-3 c-old-4 x-old"},
		{"kind", cks.ListProcessesInput{Kind: cks.Names{"exec"}}, "x-dead"},
		{"kind history", cks.ListProcessesInput{Kind: cks.Names{"exec"}, History: true}, "x-dead x-old"},
		{"kinds, one twice", cks.ListProcessesInput{Kind: cks.Names{"exec", "critic", "exec"}, Alive: &yes}, "c-new c-mid"},
		{"a kind that never ran", cks.ListProcessesInput{Kind: cks.Names{"pipeline"}, History: true}, ""},
	} {
		c.in.Limit = 100
		if got := walk(t, svc, c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// testBadProcessFilters: a bad kind, cursor or limit is a FieldError naming
// it, the same on both backends.
func testBadProcessFilters(t *testing.T, open backendtest.Opener) {
	s := open(t)
	svc, _ := history(t, s)
	for _, c := range []struct {
		field string
		in    cks.ListProcessesInput
	}{
		{"kind", cks.ListProcessesInput{Kind: cks.Names{"critic", "no pe"}}},
		{"cursor", cks.ListProcessesInput{Cursor: "yesterday"}},
		{"cursor", cks.ListProcessesInput{Cursor: "12."}},
		{"cursor", cks.ListProcessesInput{Cursor: "x.c-new", History: true}},
		{"limit", cks.ListProcessesInput{Limit: cks.MaxListLimit + 1}},
		{"limit", cks.ListProcessesInput{Limit: -1}},
	} {
		_, err := svc.Page(ctx(t), c.in)
		if !cks.IsFieldError(err, c.field) {
			t.Errorf("%+v: %v, want a field error naming %s", c.in, err, c.field)
		}
	}
	// Any kind may report: one that never did lists nothing.
	if got, err := svc.Page(ctx(t), cks.ListProcessesInput{Kind: cks.Names{"nope"}}); err != nil || len(got.Processes) != 0 {
		t.Errorf("a kind that never reported lists %+v, %v", got, err)
	}
}
