package backendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/backend"
)

// WakeDeadline bounds how long a test waits for a watcher to see a change
// (generous for loaded CI machines; the expected latency is one poll
// interval on SQLite and milliseconds on Postgres).
const WakeDeadline = 10 * time.Second

// FastPoll is the change poll interval of the tests' watching handles.
const FastPoll = 20 * time.Millisecond

// Watcher records the calls of one running WatchChanges for a test. It is
// stopped (and its return value checked) when the test ends.
type Watcher struct {
	Calls  chan string // the topics of each call, in order
	done   chan error
	cancel context.CancelFunc
}

// Watch starts s.WatchChanges(topics) in a goroutine and returns a Watcher
// of its calls. Call Ready before writing, so the watch is known to be
// established.
func Watch(t testing.TB, s *backend.Backend, topics ...string) *Watcher {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	w := &Watcher{Calls: make(chan string, 10_000), done: make(chan error, 1), cancel: cancel}
	go func() {
		w.done <- s.Changes.WatchChanges(c, topics, func(topic string) {
			select {
			case w.Calls <- topic:
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
	case topic := <-w.Calls:
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
	case topic := <-w.Calls:
		t.Fatalf("unexpected change notification %q", topic)
	default:
	}
}
