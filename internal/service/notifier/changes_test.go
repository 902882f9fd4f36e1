package notifier_test

import (
	"context"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
)

// TestChanges: the change notifications through WatchChanges, on both
// backends.
func TestChanges(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"ChangesWakeOtherHandle":     testChangesWakeOtherHandle,
		"ChangesDefaultPollInterval": testChangesDefaultPollInterval,
		"ChangesBadInput":            testChangesBadInput,
		"ChangesStopWithContext":     testChangesStopWithContext,
	})
}

func show(b *bool) string {
	if b == nil {
		return "nil (no row)"
	}
	if *b {
		return "true"
	}
	return "false"
}

const otherTopic = "notifier_other"

func testChangesWakeOtherHandle(t *testing.T, open backendtest.Opener) {
	writer := open(t)
	watched := open(t, driver.WithChangePollInterval(backendtest.FastPoll))
	w := backendtest.Watch(t, watched, cks.TopicSweeperControl, otherTopic)
	w.Ready(t, otherTopic, cks.TopicSweeperControl)
	self := backendtest.Watch(t, writer, cks.TopicSweeperControl)
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
func testChangesDefaultPollInterval(t *testing.T, open backendtest.Opener) {
	writer, watched := open(t), open(t)
	w := backendtest.Watch(t, watched, cks.TopicSweeperControl)
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

func testChangesBadInput(t *testing.T, open backendtest.Opener) {
	s := open(t)
	for _, topics := range [][]string{nil, {}, {cks.TopicSweeperControl, ""}} {
		err := s.Changes.WatchChanges(ctx(t), topics, func(string) { t.Error("f called for bad input") })
		if !cks.IsFieldError(err, "topics") {
			t.Errorf("WatchChanges(%q): err = %v, want a FieldError naming topics", topics, err)
		}
	}
}

func testChangesStopWithContext(t *testing.T, open backendtest.Opener) {
	s := open(t, driver.WithChangePollInterval(backendtest.FastPoll))
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
	w := backendtest.Watch(t, s, cks.TopicSweeperControl)
	w.Ready(t, cks.TopicSweeperControl)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}

// ctx bounds a test's calls: backendtest.Ctx.
var ctx = backendtest.Ctx
