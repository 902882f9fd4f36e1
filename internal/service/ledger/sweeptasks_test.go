package ledger_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestSweepTasks: what the sweepers ask of the ledger — when a task's
// state changed, and the safety net that releases dependencies — on both
// backends.
func TestSweepTasks(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"TaskStateChangedAt":                testTaskStateChangedAt,
		"TaskStateChangedBefore":            testTaskStateChangedBefore,
		"TaskReleaseDependencies":           testTaskReleaseDependencies,
		"TaskReleaseDependenciesConcurrent": testTaskReleaseDependenciesConcurrent,
	})
}

// mustMove moves task id through the states path with the low-level
// Transition (no dependency, lease or attempt effects).
func mustMove(t testing.TB, s *backend.Backend, id int64, path ...cks.TaskState) cks.Task {
	t.Helper()
	var out cks.Task
	for _, st := range path {
		var err error
		if out, err = ledger.Transition(ctx(t), s.Tasks, id, st, "suite", "setup"); err != nil {
			t.Fatalf("task %d → %s: %v", id, st, err)
		}
	}
	return out
}

// testTaskStateChangedAt: enqueue and every state change set
// state_changed_at; writes that keep the state (Heartbeat, AddEvidence) do not.
func testTaskStateChangedAt(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	task := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "timed"})
	check := func(step string, want time.Time) cks.Task {
		t.Helper()
		got := backendtest.MustGet(t, s, task.ID)
		if !got.StateChangedAt.Equal(want) || got.StateChangedAt.Location() != time.UTC {
			t.Fatalf("%s: state_changed_at %v, want %v", step, got.StateChangedAt, want)
		}
		return got
	}
	if !task.StateChangedAt.Equal(backendtest.T0) {
		t.Fatalf("Enqueue returned state_changed_at %v, want %v", task.StateChangedAt, backendtest.T0)
	}
	check("enqueue", backendtest.T0)
	clk.Advance(time.Minute)
	cs, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", N: 1, Lease: time.Hour}) // a lease that outlives the steps below
	if err != nil || len(cs) != 1 {
		t.Fatalf("Claim = %+v, %v", cs, err)
	}
	c := cs[0]
	if !c.StateChangedAt.Equal(clk.Now()) {
		t.Fatalf("Claim returned state_changed_at %v, want %v", c.StateChangedAt, clk.Now())
	}
	claimed := clk.Now()
	clk.Advance(time.Minute)
	if res, err := s.Tasks.Heartbeat(ctx(t), c.ID, c.LeaseToken); err != nil || !res.Held {
		t.Fatal(res, err)
	}
	if _, err := s.Tasks.AddEvidence(ctx(t), c.ID, c.LeaseToken, "log", "x"); err != nil {
		t.Fatal(err)
	}
	if got := check("touch and evidence", claimed); !got.UpdatedAt.Equal(clk.Now()) {
		t.Fatalf("touch left updated_at %v, want %v", got.UpdatedAt, clk.Now())
	}
	clk.Advance(time.Minute)
	if _, err := s.Tasks.MarkRunning(ctx(t), c.ID, c.LeaseToken); err != nil {
		t.Fatal(err)
	}
	check("running", clk.Now())
	clk.Advance(time.Minute)
	mustMove(t, s, task.ID, cks.TaskStopped)
	stopped := check("stopped", clk.Now())
	page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{})
	if err != nil || len(page.Tasks) != 1 || !page.Tasks[0].StateChangedAt.Equal(clk.Now()) {
		t.Fatalf("ListTasks = %+v, %v; want state_changed_at %v", page.Tasks, err, clk.Now())
	}
	b, err := json.Marshal(stopped)
	if err != nil || !strings.Contains(string(b), `"state_changed_at":"`+clk.Now().Format(time.RFC3339)) {
		t.Fatalf("JSON %s lacks state_changed_at", b)
	}
}

// testTaskStateChangedBefore: the stale_stop_report query, CountTasks with
// States and StateChangedBefore, and ListTasks with the same filter.
func testTaskStateChangedBefore(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	enqueue := func(title string) int64 { return backendtest.MustEnqueue(t, s, cks.NewTask{Title: title}).ID }
	open0 := enqueue("open since T0")
	stop0 := enqueue("stopped at T0")
	mustMove(t, s, stop0, cks.TaskStopped)
	clk.Advance(10 * time.Hour)
	stop10 := enqueue("stopped at T0+10h")
	mustMove(t, s, stop10, cks.TaskStopped)
	restarted := enqueue("stopped at T0+10h, started at T0+30h")
	mustMove(t, s, restarted, cks.TaskStopped)
	clk.Advance(20 * time.Hour)
	mustMove(t, s, restarted, cks.TaskOpen)
	stop30 := enqueue("stopped at T0+30h")
	mustMove(t, s, stop30, cks.TaskStopped)
	clk.Advance(18 * time.Hour) // now T0+48h

	stopped := []cks.TaskState{cks.TaskStopped}
	cases := []struct {
		name string
		f    cks.TaskFilter
		want []int64
	}{
		{"stale stops (24h)", cks.TaskFilter{States: stopped, StateChangedBefore: clk.Now().Add(-24 * time.Hour)}, []int64{stop0, stop10}},
		{"boundary is inclusive", cks.TaskFilter{States: stopped, StateChangedBefore: backendtest.T0.Add(10 * time.Hour)}, []int64{stop0, stop10}},
		{"just before the boundary", cks.TaskFilter{States: stopped, StateChangedBefore: backendtest.T0.Add(10*time.Hour - time.Microsecond)}, []int64{stop0}},
		{"zero cutoff: no time filter", cks.TaskFilter{States: stopped}, []int64{stop0, stop10, stop30}},
		{"any state", cks.TaskFilter{StateChangedBefore: backendtest.T0.Add(time.Hour)}, []int64{open0, stop0}},
		{"cutoff before everything", cks.TaskFilter{StateChangedBefore: backendtest.T0.Add(-time.Second)}, nil},
		{"with types", cks.TaskFilter{Types: []string{"other"}, StateChangedBefore: clk.Now()}, nil},
		{"cutoff in another zone", cks.TaskFilter{States: stopped, StateChangedBefore: backendtest.T0.Add(10 * time.Hour).In(time.FixedZone("X", -5*3600))}, []int64{stop0, stop10}},
	}
	for _, tc := range cases {
		n, err := s.Tasks.CountTasks(ctx(t), tc.f)
		if err != nil || n != len(tc.want) {
			t.Errorf("%s: CountTasks = %d, %v; want %d", tc.name, n, err, len(tc.want))
		}
		page, err := s.Tasks.ListTasks(ctx(t), tc.f)
		if err != nil {
			t.Fatalf("%s: ListTasks: %v", tc.name, err)
		}
		var got []int64
		byState := map[cks.TaskState]int{}
		for _, st := range tc.f.States {
			byState[st] = 0
		}
		if len(tc.f.States) == 0 {
			for _, st := range ledger.All {
				byState[st] = 0
			}
		}
		for _, task := range page.Tasks {
			got = append(got, task.ID)
			byState[task.State]++
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: ListTasks = %v, want %v", tc.name, got, tc.want)
		}
		// Per state: every state the filter names, 0 included.
		counts, err := s.Tasks.CountTasksByState(ctx(t), tc.f)
		if err != nil || !maps.Equal(counts.Counts, byState) || counts.Total != len(tc.want) {
			t.Errorf("%s: CountTasksByState = %+v, %v; want %v, total %d", tc.name, counts, err, byState, len(tc.want))
		}
	}
	// CountTasks ignores the page fields.
	if n, err := s.Tasks.CountTasks(ctx(t), cks.TaskFilter{After: stop30, Limit: 1}); err != nil || n != 5 {
		t.Errorf("CountTasks with After and Limit = %d, %v; want all 5", n, err)
	}
	if _, err := s.Tasks.CountTasks(ctx(t), cks.TaskFilter{States: []cks.TaskState{"SLEEPING"}}); !cks.IsFieldError(err, "state") {
		t.Errorf("CountTasks with an unknown state: err = %v, want a FieldError naming state", err)
	}
	if _, err := s.Tasks.CountTasksByState(ctx(t), cks.TaskFilter{States: []cks.TaskState{"SLEEPING"}}); !cks.IsFieldError(err, "state") {
		t.Errorf("CountTasksByState with an unknown state: err = %v, want a FieldError naming state", err)
	}
}

// testTaskReleaseDependencies builds, with the low-level Transition (which
// has no dependency effects), the situations the inline release of
// Complete/Fail/Cancel would have handled, and checks the safety net.
func testTaskReleaseDependencies(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	enq := func(title string, deps ...int64) int64 {
		return backendtest.MustEnqueue(t, s, cks.NewTask{Title: title, DependsOn: deps}).ID
	}
	done1, done2 := enq("done 1"), enq("done 2")
	failed, cancelled, pending, blockedDep := enq("failed"), enq("cancelled"), enq("pending"), enq("blocked")
	allDone := enq("all deps completed", done1, done2)
	onFailed := enq("on a failed dependency", done1, failed)
	chained := enq("on the task on the failed one", onFailed)
	onCancelled := enq("on a cancelled dependency", cancelled)
	mixed := enq("on a completed and a pending one", done1, pending)
	onBlocked := enq("on a BLOCKED dependency", blockedDep)
	stoppedAllDone := enq("stopped, deps completed", done1)
	mustMove(t, s, stoppedAllDone, cks.TaskStopped)
	noDeps := enq("waiting without dependencies")
	mustMove(t, s, noDeps, cks.TaskWaiting)
	for _, id := range []int64{done1, done2} {
		mustMove(t, s, id, cks.TaskClaimed, cks.TaskCompleted)
	}
	mustMove(t, s, failed, cks.TaskClaimed, cks.TaskFailed)
	mustMove(t, s, cancelled, cks.TaskCancelled)
	mustMove(t, s, blockedDep, cks.TaskWaiting, cks.TaskBlocked)
	for _, id := range []int64{allDone, onFailed, chained, onCancelled, mixed, onBlocked} {
		backendtest.WantState(t, s, id, cks.TaskWaiting) // the inline release did not run
	}

	clk.Advance(time.Minute)
	got, err := s.Tasks.ReleaseDependencies(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got != (ledger.DependencyRelease{Released: 2, Blocked: 3}) {
		t.Errorf("ReleaseDependencies = %+v, want released 2, blocked 3", got)
	}
	cases := []struct {
		id     int64
		want   cks.TaskState
		reason string // a substring of the event's reason; "" = no new event
	}{
		{allDone, cks.TaskOpen, "dependencies complete"},
		{noDeps, cks.TaskOpen, "dependencies complete"},
		{onFailed, cks.TaskBlocked, fmt.Sprintf("dependency %d is FAILED", failed)},
		{chained, cks.TaskBlocked, fmt.Sprintf("dependency %d is BLOCKED", onFailed)},
		{onCancelled, cks.TaskBlocked, fmt.Sprintf("dependency %d is CANCELLED", cancelled)},
		{mixed, cks.TaskWaiting, ""},
		{onBlocked, cks.TaskWaiting, ""},
		{stoppedAllDone, cks.TaskStopped, ""}, // dispatch-excluded: never touched
	}
	for _, tc := range cases {
		task := backendtest.WantState(t, s, tc.id, tc.want)
		e := lastEvent(t, task)
		if tc.reason == "" {
			if e.Actor == ledger.ActorDependencyRelease {
				t.Errorf("task %d (%s) got an event %+v", tc.id, task.Title, e)
			}
			continue
		}
		if e.Actor != ledger.ActorDependencyRelease || e.From != cks.TaskWaiting || e.To != tc.want ||
			!strings.Contains(e.Reason, tc.reason) || !e.At.Equal(clk.Now()) || !task.StateChangedAt.Equal(clk.Now()) {
			t.Errorf("task %d (%s): event %+v, want one by %s to %s with a reason containing %q",
				tc.id, task.Title, e, ledger.ActorDependencyRelease, tc.want, tc.reason)
		}
		if tc.want == cks.TaskBlocked && !strings.Contains(task.LastError, tc.reason) {
			t.Errorf("task %d: last_error %q, want it to contain %q", tc.id, task.LastError, tc.reason)
		}
	}
	if again, err := s.Tasks.ReleaseDependencies(ctx(t)); err != nil || again != (ledger.DependencyRelease{}) {
		t.Errorf("second ReleaseDependencies = %+v, %v; want nothing to do", again, err)
	}
	ts, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", N: 10, Lease: backendtest.Lease})
	var claimed []int64
	for _, task := range ts {
		claimed = append(claimed, task.ID)
	}
	slices.Sort(claimed)
	if want := []int64{pending, allDone, noDeps}; err != nil || !slices.Equal(claimed, want) {
		t.Errorf("claim after release = %v, %v; want the released tasks and the untouched OPEN one %v", claimed, err, want)
	}
}

// testTaskReleaseDependenciesConcurrent runs the safety net from several
// handles at once, as sweepers on several nodes do: every task is moved
// exactly once, and the counts add up.
func testTaskReleaseDependenciesConcurrent(t *testing.T, open backendtest.Opener) {
	const n, nodes = 20, 3
	s, clk := backendtest.FakeStore(t, open)
	done, failed := backendtest.MustEnqueue(t, s, cks.NewTask{Title: "done"}).ID, backendtest.MustEnqueue(t, s, cks.NewTask{Title: "failed"}).ID
	var toOpen, toBlock []int64
	for i := range n {
		toOpen = append(toOpen, backendtest.MustEnqueue(t, s, cks.NewTask{Title: fmt.Sprint("open ", i), DependsOn: []int64{done}}).ID)
		toBlock = append(toBlock, backendtest.MustEnqueue(t, s, cks.NewTask{Title: fmt.Sprint("block ", i), DependsOn: []int64{failed}}).ID)
	}
	mustMove(t, s, done, cks.TaskClaimed, cks.TaskCompleted)
	mustMove(t, s, failed, cks.TaskClaimed, cks.TaskFailed)
	results := make([]ledger.DependencyRelease, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		h := open(t, driver.WithClock(clk))
		wg.Go(func() { results[i], errs[i] = h.Tasks.ReleaseDependencies(ctx(t)) })
	}
	wg.Wait()
	var total ledger.DependencyRelease
	for i := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		total.Released += results[i].Released
		total.Blocked += results[i].Blocked
	}
	if total != (ledger.DependencyRelease{Released: n, Blocked: n}) {
		t.Fatalf("nodes moved %+v in total (%+v), want %d released and %d blocked", total, results, n, n)
	}
	for _, ids := range []struct {
		ids  []int64
		want cks.TaskState
	}{{toOpen, cks.TaskOpen}, {toBlock, cks.TaskBlocked}} {
		for _, id := range ids.ids {
			task := backendtest.WantState(t, s, id, ids.want)
			moves := 0
			for _, e := range task.Events {
				if e.Actor == ledger.ActorDependencyRelease {
					moves++
				}
			}
			if moves != 1 {
				t.Fatalf("task %d has %d dependency_release events, want 1: %+v", id, moves, task.Events)
			}
		}
	}
}
