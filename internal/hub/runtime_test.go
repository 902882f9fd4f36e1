package hub_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/notifier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// opener opens one more handle on a test database.
type opener = backendtest.Opener

func forEachBackend(t *testing.T, f func(t *testing.T, open opener)) {
	backendtest.ForEach(t, f)
}

func env(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

func newRuntime(t testing.TB, st *backend.Backend, vars map[string]string, noWatch bool) *hub.Runtime {
	t.Helper()
	return newRuntimeWith(t, st, vars, hub.RuntimeConfig{NoChangeWatch: noWatch})
}

// newRuntimeWith is newRuntime with cfg, whose Settings are vars'.
func newRuntimeWith(t testing.TB, st *backend.Backend, vars map[string]string, cfg hub.RuntimeConfig) *hub.Runtime {
	t.Helper()
	set, err := config.ParseHub(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Settings = set
	rt, err := hub.NewRuntime(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt
}

func running(t testing.TB, rt *hub.Runtime, id string) bool {
	t.Helper()
	r, err := rt.Sweepers.Registry().Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status().Running
}

// waitStopped waits until rt's runner id stops, and returns how long it took.
func waitStopped(t testing.TB, rt *hub.Runtime, id string, from time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for running(t, rt, id) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still running 30s after the stop", id)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(from)
}

// TestEverySweeperIsConfigured: the sweepers a hub registers are the ones
// the configuration has settings for (config.DefaultSweepers), so each has
// its documented CKS_<ID>_SWEEPER_* variables and none is documented for
// nothing.
func TestEverySweeperIsConfigured(t *testing.T) {
	st, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := hub.NewRuntime(st, hub.RuntimeConfig{NoChangeWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	got := sweeperIDs(t, rt)
	slices.Sort(got)
	if want := slices.Sorted(maps.Keys(config.DefaultSweepers())); !slices.Equal(got, want) {
		t.Fatalf("the hub registers %v, the configuration has settings for %v", got, want)
	}
}

func TestOverridePersistsAcrossRestarts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		rt1 := newRuntime(t, open(t), nil, false)
		for _, id := range []string{sweeper.LeaseReaperID, sweeper.DependencyReleaseID, sweeper.StaleStopReportID} {
			if !running(t, rt1, id) {
				t.Fatalf("no override row: %s not started", id)
			}
		}
		if _, err := rt1.Sweepers.Stop(ctx, sweeper.LeaseReaperID); err != nil {
			t.Fatal(err)
		}
		rt1.Stop(ctx)

		rt2 := newRuntime(t, open(t), nil, false) // a restart
		if running(t, rt2, sweeper.LeaseReaperID) {
			t.Fatal("a stopped sweeper came back after a restart")
		}
		if !running(t, rt2, sweeper.DependencyReleaseID) {
			t.Fatal("an untouched sweeper did not start")
		}
		st, err := rt2.Sweepers.Start(ctx, sweeper.LeaseReaperID)
		if err != nil || !st.Running || st.DesiredRunning == nil || !*st.DesiredRunning {
			t.Fatalf("start: %+v %v", st, err)
		}
		rt2.Stop(ctx)

		rt3 := newRuntime(t, open(t), nil, false)
		if !running(t, rt3, sweeper.LeaseReaperID) {
			t.Fatal("a started sweeper did not start after a restart")
		}
	})
}

func TestConfigDisabledNeverStarts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		st := open(t)
		vars := map[string]string{"CKS_LEASE_REAPER_SWEEPER_ENABLED": "false"}
		rt := newRuntime(t, st, vars, false)
		if running(t, rt, sweeper.LeaseReaperID) {
			t.Fatal("config-disabled sweeper running")
		}
		_, err := rt.Sweepers.Start(context.Background(), sweeper.LeaseReaperID)
		if err == nil {
			t.Fatal("start of a config-disabled sweeper succeeded")
		}
		if o, _ := st.Sweepers.GetSweeperDesiredRunning(context.Background(), sweeper.LeaseReaperID); o != nil {
			t.Fatal("refused start wrote an override")
		}
	})
}

// TestCrossNodeStop: two runtimes (nodes) on one store; stop_agent on A stops
// B's runner by B's per-tick check, and with the change notification without
// waiting for the tick.
func TestCrossNodeStop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		id := sweeper.LeaseReaperID

		t.Run("tick", func(t *testing.T) {
			const interval = 200 * time.Millisecond
			vars := map[string]string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL": interval.String()}
			a := newRuntime(t, open(t), vars, true)
			b := newRuntime(t, open(t), vars, true)
			start := time.Now()
			if _, err := a.Sweepers.Stop(ctx, id); err != nil {
				t.Fatal(err)
			}
			took := waitStopped(t, b, id, start)
			t.Logf("%s tick path: B stopped %v after A's stop (interval %v)", a.Store.Dialect(), took, interval)
			a.Sweepers.Start(ctx, id) // leave the shared row as found for the next subtest
		})
		t.Run("notification", func(t *testing.T) {
			// An hour-long interval: only the notification can stop B in time.
			vars := map[string]string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL": "1h"}
			a := newRuntime(t, open(t), vars, false)
			b := newRuntime(t, open(t), vars, false)
			if !running(t, b, id) {
				t.Fatal("B's sweeper not running")
			}
			start := time.Now()
			if _, err := a.Sweepers.Stop(ctx, id); err != nil {
				t.Fatal(err)
			}
			took := waitStopped(t, b, id, start)
			t.Logf("%s notification path: B stopped %v after A's stop (interval 1h)", a.Store.Dialect(), took)
		})
	})
}

// TestCrossNodeStart: a sweeper stopped and then started through the hub
// that stands by (B) runs again on the maintenance leader (A), whose passes
// are the ones that run: the start's change notification starts A's
// stopped runner (sweeper.Registry.Follow). Hour-long intervals: only the
// notification can do it in time. Without it the start reached B alone,
// whose runner stands by, and the sweeper's passes ran nowhere.
func TestCrossNodeStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		id := sweeper.LeaseReaperID
		vars := map[string]string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL": "1h"}
		a := newRuntime(t, open(t), vars, false)
		b := newRuntime(t, open(t), vars, false)
		waitStatus(t, a, id, func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
		waitStatus(t, b, id, func(s cks.SweeperStatus) bool { return s.Standby })
		if !a.Leader.IsLeader() || b.Leader.IsLeader() {
			t.Fatalf("leaders: a %v, b %v; want a, the first started", a.Leader.IsLeader(), b.Leader.IsLeader())
		}
		if _, err := b.Sweepers.Stop(ctx, id); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, a, id, time.Now())
		start := time.Now()
		if _, err := b.Sweepers.Start(ctx, id); err != nil {
			t.Fatal(err)
		}
		st := waitStatus(t, a, id, func(s cks.SweeperStatus) bool { return s.Running && s.RunCount == 2 })
		t.Logf("%s: the leader runs %s again %v after its start through the other hub", a.Store.Dialect(), id, time.Since(start))
		if st.DesiredRunning == nil || !*st.DesiredRunning {
			t.Fatalf("the leader's status after the start: %+v, want desired_running true", st)
		}
		if stB := waitStatus(t, b, id, func(s cks.SweeperStatus) bool { return s.Running }); stB.RunCount != 0 || !stB.Standby {
			t.Fatalf("the standby hub's %s after its own start: %+v; want running on standby, no pass", id, stB)
		}
	})
}

// TestSweepers: a hub registers the three ledger and the four knowledge
// sweepers and the retention sweeper, all enabled by default and running
// with live status; the knowledge sweepers take their settings from the
// same environment variables.
func TestSweepers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		rt := newRuntime(t, open(t), map[string]string{"CKS_GRAPH_HEALTH_SWEEPER_INTERVAL": "90s",
			"CKS_CONTRADICTION_SWEEPER_ENABLED": "false"}, false)
		want := []string{sweeper.LeaseReaperID, sweeper.DependencyReleaseID, sweeper.StaleStopReportID,
			sweeper.ForkDetectionID, sweeper.ContradictionID, sweeper.InferenceStalenessID, sweeper.GraphHealthID,
			sweeper.RetentionID}
		if got := sweeperIDs(t, rt); !slices.Equal(got, want) {
			t.Fatalf("sweepers %v, want %v", got, want)
		}
		sts, err := rt.Sweepers.List(ctx)
		if err != nil || len(sts) != 8 {
			t.Fatalf("list: %d %v", len(sts), err)
		}
		intervals := map[string]float64{}
		for _, st := range sts {
			intervals[st.AgentID] = st.IntervalS
			if st.Kind != sweeper.Kind || st.Running != (st.AgentID != sweeper.ContradictionID) {
				t.Fatalf("%s: %+v", st.AgentID, st)
			}
		}
		if intervals[sweeper.ForkDetectionID] != 60 || intervals[sweeper.InferenceStalenessID] != 300 ||
			intervals[sweeper.GraphHealthID] != 90 || intervals[sweeper.ContradictionID] != 300 {
			t.Fatalf("intervals %v", intervals)
		}
		// The first passes run at start: each knowledge sweeper completes one
		// on the empty store without error, graph_health with its details.
		for _, id := range []string{sweeper.ForkDetectionID, sweeper.InferenceStalenessID, sweeper.GraphHealthID} {
			st := waitStatus(t, rt, id, func(s cks.SweeperStatus) bool { return s.RunCount >= 1 })
			if st.LastError != nil || st.LastResultCount == nil || *st.LastResultCount != 0 {
				t.Fatalf("%s first pass: %+v (error %v)", id, st, st.LastError)
			}
			if id == sweeper.GraphHealthID {
				if d, ok := st.Details.(sweeper.GraphReport); !ok || d.Objects != 0 || d.Cycles == nil {
					t.Fatalf("graph_health details %#v", st.Details)
				}
			}
		}
	})
}

// sweeperIDs are the ids of rt's sweepers in registration order, as
// list_agents lists them.
func sweeperIDs(t testing.TB, rt *hub.Runtime) []string {
	t.Helper()
	sts, err := rt.Sweepers.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range sts {
		ids = append(ids, st.AgentID)
	}
	return ids
}

// waitStatus waits until rt's sweeper id has a status satisfying cond,
// re-reading it on every SweepersChanged event.
func waitStatus(t testing.TB, rt *hub.Runtime, id string, cond func(cks.SweeperStatus) bool) cks.SweeperStatus {
	t.Helper()
	r, err := rt.Sweepers.Registry().Get(id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st := r.Status(); cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out; status %+v", id, r.Status())
		}
		time.Sleep(time.Millisecond)
	}
}

// watching is a store that counts its WatchChanges calls in progress; each
// takes a while to end after its context does.
type watching struct {
	*notifier.Notifier
	running atomic.Int64
	begun   chan struct{} // a send when a call begins
}

func (w *watching) WatchChanges(ctx context.Context, topics []string, f func(string)) error {
	w.running.Add(1)
	defer w.running.Add(-1)
	w.begun <- struct{}{}
	err := w.Notifier.WatchChanges(ctx, topics, f)
	time.Sleep(50 * time.Millisecond) // a slow end is waited for
	return err
}

// TestStopEndsTheWatchers: Stop returns only once the runtime's watchers
// have ended — the sweeper control watch returned, the liveness watch's
// ticker stopped (with the sweepers' timers) — a second Stop does nothing,
// and Start starts them again.
func TestStopEndsTheWatchers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st := open(t)
		w := &watching{Notifier: st.Changes, begun: make(chan struct{}, 10)}
		c := clock.NewFake(time.Now())
		rt, err := hub.NewRuntime(st, hub.RuntimeConfig{Clock: c, Changes: w})
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			if err := rt.Start(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-w.begun:
			case <-ctx.Done():
				t.Fatalf("round %d: the sweeper control watch did not start", round)
			}
			// The liveness watch's ticker and the eight sweepers' timers.
			if err := c.WaitArmed(ctx, 9); err != nil {
				t.Fatalf("round %d: %d timers armed: %v", round, c.Armed(), err)
			}
			for range 2 {
				if err := rt.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				if n, armed := w.running.Load(), c.Armed(); n != 0 || armed != 0 {
					t.Fatalf("round %d: after Stop, %d watches running and %d timers armed", round, n, armed)
				}
			}
		}
	})
}

// TestOneHubSweeps: of two hubs on one database only the maintenance leader
// (the first started) runs sweeper passes; the other's runners run but
// stand by, and both read the same leader. When the leader stops, the other
// takes over at once (the resignation's notification) and runs its passes
// without waiting out its hour-long intervals.
func TestOneHubSweeps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		hour := map[string]string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL": "1h", "CKS_GRAPH_HEALTH_SWEEPER_INTERVAL": "1h"}
		a := newRuntime(t, open(t), hour, false)
		b := newRuntime(t, open(t), hour, false)
		id := sweeper.LeaseReaperID
		waitStatus(t, a, id, func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
		stB := waitStatus(t, b, id, func(s cks.SweeperStatus) bool { return s.Standby })
		if stB.RunCount != 0 || !stB.Running {
			t.Fatalf("the standby hub's %s: %+v; want running without a pass", id, stB)
		}
		for _, rt := range []*hub.Runtime{a, b} {
			sts, err := rt.Sweepers.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range sts {
				if st.Leader != a.Leader.ID() {
					t.Fatalf("%s reads the leader as %q, want %q", st.AgentID, st.Leader, a.Leader.ID())
				}
			}
		}

		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		st := waitStatus(t, b, id, func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
		if st.Standby || !b.Leader.IsLeader() {
			t.Fatalf("after the leader stopped: %+v, leader %v; want b leading and passing", st, b.Leader.IsLeader())
		}
		if got := waitStatus(t, b, sweeper.GraphHealthID, func(s cks.SweeperStatus) bool { return s.RunCount == 1 }); got.Standby {
			t.Fatalf("graph_health on the new leader: %+v", got)
		}
	})
}

// TestObjectChangesReachTheBus: an object made claimable by another process
// on the store (a pipeline agent's handle) is an "objects" event on the
// hub's bus, which /v1/events relays to the studio's pages.
func TestObjectChangesReachTheBus(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		rt := newRuntime(t, open(t), nil, false)
		evs, unsubscribe := rt.Bus.Subscribe()
		defer unsubscribe()
		other := open(t)
		if _, err := other.Objects.CreateObject(context.Background(), knowledge.NewObject{Kind: cks.KindQuestion,
			Content: []byte(`{"question":"q?"}`), Status: cks.StatusAwaitingResearch}); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(30 * time.Second)
		for {
			select {
			case e := <-evs:
				if e.Type == events.ObjectsChanged {
					return
				}
			case <-deadline:
				t.Fatal("no objects event on the bus within 30 s of the object's creation")
			}
		}
	})
}

// watchCalls is the change notifications of a Runtime under test: each
// WatchChanges call hands its topics and callback to the test (on calls)
// and waits for its context.
type watchCalls struct{ calls chan watchCall }

type watchCall struct {
	topics []string
	f      func(topic string)
}

func (w watchCalls) WatchChanges(ctx context.Context, topics []string, f func(topic string)) error {
	select {
	case w.calls <- watchCall{topics, f}:
	case <-ctx.Done():
	}
	<-ctx.Done()
	return nil
}

// TestTaskMovesReachTheBus: the hub watches cks.TopicTasksMoved — the
// topic a standalone agent's process publishes for its claims, starts and
// completions, which publish no other topic — and turns it into a "tasks"
// event on its bus, which /v1/events relays to the board, the task page and
// the charts. (That the topic crosses processes is
// TestTasksMovedReachesOtherHandles in package backend;
// TestBrowserBoardFollowsOutsideAgent runs the whole path.)
func TestTaskMovesReachTheBus(t *testing.T) {
	w := watchCalls{calls: make(chan watchCall, 4)}
	rt := newRuntimeWith(t, backendtest.SQLite(t)(t), nil, hub.RuntimeConfig{Changes: w})
	var watch watchCall
	deadline := time.After(30 * time.Second)
	for !slices.Contains(watch.topics, cks.TopicTasksMoved) {
		select {
		case watch = <-w.calls: // the leader's watch, then the runtime's
		case <-deadline:
			t.Fatal("no watch of tasks_moved within 30 s of the start")
		}
	}
	evs, unsubscribe := rt.Bus.Subscribe()
	defer unsubscribe()
	watch.f(cks.TopicTasksMoved)
	for {
		select {
		case e := <-evs:
			if e.Type == events.TasksChanged {
				return
			}
		case <-deadline:
			t.Fatal("no tasks event on the bus for tasks_moved")
		}
	}
}
