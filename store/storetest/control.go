package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/driver"
)

// WakeDeadline bounds how long the suite waits for a watcher to see a change
// (generous for loaded CI machines; the expected latency is one poll
// interval on SQLite and milliseconds on Postgres).
const WakeDeadline = 10 * time.Second

// fastPoll is the change poll interval of the suite's watching handles.
const fastPoll = 20 * time.Millisecond

func controlTests() []taskTest {
	return []taskTest{
		{"SweeperControlRoundTrip", testSweeperControlRoundTrip},
		{"SweeperControlBadInput", testSweeperControlBadInput},
		{"ChangesWakeOtherHandle", testChangesWakeOtherHandle},
		{"ChangesDefaultPollInterval", testChangesDefaultPollInterval},
		{"ChangesBadInput", testChangesBadInput},
		{"ChangesStopWithContext", testChangesStopWithContext},
		{"LivenessRequestStop", testLivenessRequestStop},
		{"TasksReadyPublished", testTasksReadyPublished},
	}
}

func testSweeperControlRoundTrip(t *testing.T, open Opener) {
	s, clk := fakeStore(t, open)
	other := open(t)
	steps := []struct {
		id      string
		set     *bool // nil: only read
		want    map[string]*bool
		comment string
	}{
		{"", nil, map[string]*bool{"contradiction": nil, "graph_health": nil}, "no rows: the config default applies"},
		{"contradiction", ptr(false), map[string]*bool{"contradiction": ptr(false), "graph_health": nil}, "stop one"},
		{"contradiction", ptr(false), map[string]*bool{"contradiction": ptr(false), "graph_health": nil}, "idempotent"},
		{"graph_health", ptr(true), map[string]*bool{"contradiction": ptr(false), "graph_health": ptr(true)}, "start another"},
		{"contradiction", ptr(true), map[string]*bool{"contradiction": ptr(true), "graph_health": ptr(true)}, "upsert flips it"},
	}
	for _, st := range steps {
		clk.Advance(time.Second)
		if st.set != nil {
			if err := s.Sweepers.SetSweeperDesiredRunning(ctx(t), st.id, *st.set); err != nil {
				t.Fatalf("%s: Set(%s, %v): %v", st.comment, st.id, *st.set, err)
			}
		}
		for id, want := range st.want {
			for name, h := range map[string]*backend.Backend{"writer": s, "other handle": other} {
				got, err := h.Sweepers.GetSweeperDesiredRunning(ctx(t), id)
				if err != nil {
					t.Fatalf("%s: Get(%s) on %s: %v", st.comment, id, name, err)
				}
				if (got == nil) != (want == nil) || (got != nil && *got != *want) {
					t.Fatalf("%s: Get(%s) on %s = %v, want %v", st.comment, id, name, show(got), show(want))
				}
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func show(b *bool) string {
	if b == nil {
		return "nil (no row)"
	}
	if *b {
		return "true"
	}
	return "false"
}

func testSweeperControlBadInput(t *testing.T, open Opener) {
	s := open(t)
	for _, id := range []string{"", "  "} {
		if err := s.Sweepers.SetSweeperDesiredRunning(ctx(t), id, false); !cks.IsFieldError(err, "agent_id") || !errors.Is(err, cks.ErrInvalid) {
			t.Errorf("Set(%q): err = %v, want a FieldError naming agent_id", id, err)
		}
		if got, err := s.Sweepers.GetSweeperDesiredRunning(ctx(t), id); got != nil || !cks.IsFieldError(err, "agent_id") {
			t.Errorf("Get(%q) = %v, %v; want a FieldError naming agent_id", id, show(got), err)
		}
	}
}

// Watcher records the calls of one running WatchChanges for a test. It is
// stopped (and its return value checked) when the test ends.
type Watcher struct {
	calls  chan string
	done   chan error
	cancel context.CancelFunc
}

// Watch starts s.WatchChanges(topics) in a goroutine and returns a Watcher
// of its calls. Call Ready before writing, so the watch is known to be
// established.
func Watch(t testing.TB, s *backend.Backend, topics ...string) *Watcher {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	w := &Watcher{calls: make(chan string, 10_000), done: make(chan error, 1), cancel: cancel}
	go func() {
		w.done <- s.Changes.WatchChanges(c, topics, func(topic string) {
			select {
			case w.calls <- topic:
			default: // a test that lets 10,000 calls pile up has failed anyway
			}
		})
	}()
	t.Cleanup(func() {
		if err := w.Stop(); err != nil {
			t.Errorf("WatchChanges returned %v when its context ended, want nil", err)
		}
	})
	return w
}

// Stop ends the watch and returns what WatchChanges returned; it fails
// loudly (a leak) when WatchChanges does not return within WakeDeadline.
func (w *Watcher) Stop() error {
	w.cancel()
	select {
	case err, ok := <-w.done:
		if !ok {
			return nil // stopped before
		}
		close(w.done)
		return err
	case <-time.After(WakeDeadline):
		return errors.New("WatchChanges did not return within the deadline after its context ended")
	}
}

// Next waits up to WakeDeadline for the next call and returns its topic.
func (w *Watcher) Next(t testing.TB) string {
	t.Helper()
	select {
	case topic := <-w.calls:
		return topic
	case <-time.After(WakeDeadline):
		t.Fatalf("no change notification within %v", WakeDeadline)
		return ""
	}
}

// Ready waits for the calls every watch makes once per topic when it is
// established (and again after a reconnect), in any order.
func (w *Watcher) Ready(t testing.TB, topics ...string) {
	t.Helper()
	want := map[string]int{}
	for _, tp := range topics {
		want[tp]++
	}
	for n := len(topics); n > 0; n-- {
		got := w.Next(t)
		if want[got] == 0 {
			t.Fatalf("initial calls: got %q, want one call for each of %v", got, topics)
		}
		want[got]--
	}
}

// Quiet fails the test if a call is pending (it does not wait).
func (w *Watcher) Quiet(t testing.TB) {
	t.Helper()
	select {
	case topic := <-w.calls:
		t.Fatalf("unexpected change notification %q", topic)
	default:
	}
}

const otherTopic = "storetest_other"

func testChangesWakeOtherHandle(t *testing.T, open Opener) {
	writer := open(t)
	watched := open(t, driver.WithChangePollInterval(fastPoll))
	w := Watch(t, watched, cks.TopicSweeperControl, otherTopic)
	w.Ready(t, otherTopic, cks.TopicSweeperControl)
	self := Watch(t, writer, cks.TopicSweeperControl)
	self.Ready(t, cks.TopicSweeperControl)
	for i, running := range []bool{false, true, true} {
		start := time.Now()
		if err := writer.Sweepers.SetSweeperDesiredRunning(ctx(t), "graph_health", running); err != nil {
			t.Fatal(err)
		}
		if got := w.Next(t); got != cks.TopicSweeperControl {
			t.Fatalf("write %d woke the other handle's watcher with %q, want %q", i, got, cks.TopicSweeperControl)
		}
		t.Logf("write %d seen by the other handle after %v", i, time.Since(start))
		if got := self.Next(t); got != cks.TopicSweeperControl {
			t.Fatalf("write %d woke the writer's own watcher with %q", i, got)
		}
		// The change is visible by the time the watcher hears of it.
		if got, err := watched.Sweepers.GetSweeperDesiredRunning(ctx(t), "graph_health"); err != nil || got == nil || *got != running {
			t.Fatalf("after the wake-up Get = %v, %v; want %v", show(got), err, running)
		}
		w.Quiet(t) // the unwritten topic was not reported
	}
	// A refused write publishes nothing: the next call is the next real write's.
	if err := writer.Sweepers.SetSweeperDesiredRunning(ctx(t), "", true); err == nil {
		t.Fatal("empty id accepted")
	}
	if err := writer.Sweepers.SetSweeperDesiredRunning(ctx(t), "contradiction", true); err != nil {
		t.Fatal(err)
	}
	if got := w.Next(t); got != cks.TopicSweeperControl {
		t.Fatalf("got %q", got)
	}
	w.Quiet(t)
}

// testChangesDefaultPollInterval checks that a handle opened without options
// still sees another handle's writes well within the deadline.
func testChangesDefaultPollInterval(t *testing.T, open Opener) {
	writer, watched := open(t), open(t)
	w := Watch(t, watched, cks.TopicSweeperControl)
	w.Ready(t, cks.TopicSweeperControl)
	start := time.Now()
	if err := writer.Sweepers.SetSweeperDesiredRunning(ctx(t), "fork_detection", false); err != nil {
		t.Fatal(err)
	}
	if got := w.Next(t); got != cks.TopicSweeperControl {
		t.Fatalf("got %q", got)
	}
	t.Logf("seen after %v (default poll interval %v where polling)", time.Since(start), driver.DefaultChangePollInterval)
}

func testChangesBadInput(t *testing.T, open Opener) {
	s := open(t)
	for _, topics := range [][]string{nil, {}, {cks.TopicSweeperControl, ""}} {
		err := s.Changes.WatchChanges(ctx(t), topics, func(string) { t.Error("f called for bad input") })
		if !cks.IsFieldError(err, "topics") {
			t.Errorf("WatchChanges(%q): err = %v, want a FieldError naming topics", topics, err)
		}
	}
}

func testChangesStopWithContext(t *testing.T, open Opener) {
	s := open(t, driver.WithChangePollInterval(fastPoll))
	// Ended before it starts: returns nil at once.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Changes.WatchChanges(done, []string{cks.TopicSweeperControl}, func(string) {}); err != nil {
		t.Fatalf("WatchChanges with an ended context = %v, want nil", err)
	}
	// Ended while running (and by a deadline rather than a cancel).
	c, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	calls := 0
	if err := s.Changes.WatchChanges(c, []string{cks.TopicSweeperControl}, func(string) { calls++ }); err != nil {
		t.Fatalf("WatchChanges after its deadline = %v, want nil", err)
	}
	if calls != 1 {
		t.Fatalf("%d calls without any write, want the 1 initial call", calls)
	}
	// Stopped by the Watcher (checked in its cleanup) after real use.
	w := Watch(t, s, cks.TopicSweeperControl)
	w.Ready(t, cks.TopicSweeperControl)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}

// testLivenessRequestStop: ADR-016's request_agent_stop only ever updates,
// leaves the heartbeat alone, survives the process's own upserts, and wakes
// watchers of TopicAgentStop on other handles.
func testLivenessRequestStop(t *testing.T, open Opener) {
	s := open(t)
	watched := open(t, driver.WithChangePollInterval(fastPoll))
	w := Watch(t, watched, cks.TopicAgentStop)
	w.Ready(t, cks.TopicAgentStop)

	found, err := s.Liveness.RequestAgentStop(ctx(t), "never-ran")
	if err != nil || found {
		t.Fatalf("stop of an unknown instance = %v, %v; want false, nil", found, err)
	}
	if _, err := s.Liveness.GetAgentLiveness(ctx(t), "never-ran"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("the stop request created a row: %v", err)
	}
	w.Quiet(t)

	r := Liveness("inst-1", "critic", 0)
	MustUpsert(t, s, r)
	if got, _ := s.Liveness.GetAgentLiveness(ctx(t), "inst-1"); got.DesiredState != "" {
		t.Fatalf("new row desired_state %q, want empty (no stop requested)", got.DesiredState)
	}
	found, err = s.Liveness.RequestAgentStop(ctx(t), "inst-1")
	if err != nil || !found {
		t.Fatalf("RequestAgentStop = %v, %v; want true", found, err)
	}
	if got := w.Next(t); got != cks.TopicAgentStop {
		t.Fatalf("watcher woke with %q", got)
	}
	got, err := watched.Liveness.GetAgentLiveness(ctx(t), "inst-1")
	if err != nil || got.DesiredState != cks.DesiredStopRequested {
		t.Fatalf("after the request: %+v, %v", got, err)
	}
	got.DesiredState = ""
	EqualLiveness(t, got, r) // last_heartbeat_at untouched
	// The process keeps heartbeating until it notices: the request stays.
	r.LastHeartbeatAt = r.LastHeartbeatAt.Add(time.Minute)
	MustUpsert(t, s, r)
	if got, _ := s.Liveness.GetAgentLiveness(ctx(t), "inst-1"); got.DesiredState != cks.DesiredStopRequested {
		t.Fatalf("an upsert cleared the stop request: %+v", got)
	}
	if all, _ := s.Liveness.ListAgentLiveness(ctx(t)); len(all) != 1 || all[0].DesiredState != cks.DesiredStopRequested {
		t.Fatalf("list: %+v", all)
	}
}

// testTasksReadyPublished: every write that makes a task OPEN wakes watchers
// of TopicTasksReady on other handles; one that makes none OPEN does not.
func testTasksReadyPublished(t *testing.T, open Opener) {
	s := open(t)
	w := Watch(t, open(t, driver.WithChangePollInterval(fastPoll)), cks.TopicTasksReady)
	w.Ready(t, cks.TopicTasksReady)
	dep := MustEnqueue(t, s, cks.NewTask{Title: "dep"}) // OPEN
	if got := w.Next(t); got != cks.TopicTasksReady {
		t.Fatalf("enqueue woke %q", got)
	}
	waiting := MustEnqueue(t, s, cks.NewTask{Title: "waiting", DependsOn: []int64{dep.ID}})
	if waiting.State != "WAITING" {
		t.Fatalf("setup: %s", waiting.State)
	}
	c := MustClaimOne(t, s, "w") // OPEN → CLAIMED: nothing became OPEN
	w.Quiet(t)
	if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "ok"); err != nil { // releases waiting
		t.Fatal(err)
	}
	if got := w.Next(t); got != cks.TopicTasksReady {
		t.Fatalf("release woke %q", got)
	}
}
