// Package notifier is the one change listener of a store handle: it holds a
// single driver.Listener (on Postgres one LISTEN connection outside the
// pool, on SQLite one poller of cks_changes), connects it when the first
// watcher comes, reconnects it when it is lost, and fans the topics out to
// every watcher. However many waiters a process has — abort waits, agents,
// the pipeline, the studio's event stream — it holds one connection for
// them (River's internal/notifier is the model). The listener's loop is a
// lifecycle.Base: started by the first watcher, stopped (and waited for) by
// Close.
package notifier

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/lifecycle"
	"github.com/cks-dev/cks/internal/driver"
)

// Reconnect timing: the first wait after a lost or failed connection, doubled
// (with jitter) up to the maximum while connecting fails.
const (
	ReconnectMin = 100 * time.Millisecond
	ReconnectMax = 5 * time.Second
)

// ErrClosed is what WatchChanges returns once the Notifier is closed: at
// once for a new call, and ending a call that was running, so no watcher
// waits on a listener that is gone. It is a cks.ErrConflict.
var ErrClosed = fmt.Errorf("notifier: closed: %w", cks.ErrConflict)

// Notifier multiplexes one listener. It implements notifier.Notifier.
type Notifier struct {
	listener func() driver.Listener
	log      *slog.Logger
	base     *lifecycle.Base // runs run: started by subscribe, stopped by Close

	mu        sync.Mutex
	watchers  map[*watcher]struct{}
	connected bool
	closed    bool
	closing   chan struct{} // closed by Close: ends every WatchChanges
}

// New returns a Notifier over the listeners newListener makes (a driver's
// Listener method); nothing connects until the first WatchChanges. log
// receives the connection's losses; nil is slog.Default().
func New(newListener func() driver.Listener, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	n := &Notifier{listener: newListener, log: log, watchers: map[*watcher]struct{}{}, closing: make(chan struct{})}
	n.base = lifecycle.New(lifecycle.Config{Run: n.run, OnPanic: func(v any, stack []byte) {
		// The next watcher starts it again.
		log.Error("change listener panicked", "panic", v, "stack", string(stack))
	}})
	return n
}

// watcher is one WatchChanges call: the topics it wants and those delivered
// since it last looked, coalesced.
type watcher struct {
	topics  map[string]bool
	mu      sync.Mutex
	pending map[string]bool
	signal  chan struct{} // capacity 1: "pending is not empty"
}

func (w *watcher) add(topics []string) {
	w.mu.Lock()
	added := false
	for _, t := range topics {
		if w.topics[t] && !w.pending[t] {
			w.pending[t] = true
			added = true
		}
	}
	w.mu.Unlock()
	if added {
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}

func (w *watcher) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.pending))
	for t := range w.pending {
		out = append(out, t)
	}
	clear(w.pending)
	slices.Sort(out)
	return out
}

func (w *watcher) all() []string {
	out := make([]string, 0, len(w.topics))
	for t := range w.topics {
		out = append(out, t)
	}
	return out
}

// WatchChanges calls f with the topic each time a change to one of topics
// is committed, by this or any other process on the same database, until
// ctx ends (then it returns nil) or the Notifier is closed (ErrClosed).
// Calls of f are sequential, on the caller's goroutine, several changes
// of a topic coalesced into one. f also runs for every topic once the
// shared listener is connected (at once when it already is) and again
// after every reconnect, since changes may have been missed before or
// meanwhile: a caller can read its state in f instead of before the watch.
// A lost connection is retried with backoff, not returned. An empty topics
// list or an empty topic is a FieldError naming topics.
func (n *Notifier) WatchChanges(ctx context.Context, topics []string, f func(topic string)) error {
	set, err := validateTopics(topics)
	if err != nil {
		return err
	}
	w := &watcher{topics: set, pending: map[string]bool{}, signal: make(chan struct{}, 1)}
	if err := n.subscribe(w); err != nil {
		return err
	}
	defer n.unsubscribe(w)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.closing:
			return ErrClosed
		case <-w.signal:
		}
		for _, t := range w.take() {
			if ctx.Err() != nil {
				return nil
			}
			f(t)
		}
	}
}

func (n *Notifier) subscribe(w *watcher) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	// A no-op while the loop runs. Under n.mu, so it is ordered before
	// Close's Stop: Close marks the Notifier closed under n.mu first. The
	// loop has none of the watcher's context (values or cancellation).
	if err := n.base.Start(context.Background()); err != nil {
		return err
	}
	n.watchers[w] = struct{}{}
	if n.connected {
		w.add(w.all())
	}
	return nil
}

func (n *Notifier) unsubscribe(w *watcher) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.watchers, w)
}

// setConnected records the listener's state; a (re)connect tells every
// watcher to re-read everything it watches.
func (n *Notifier) setConnected(up bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.connected = up
	if up {
		for w := range n.watchers {
			w.add(w.all())
		}
	}
}

func (n *Notifier) deliver(topics []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for w := range n.watchers {
		w.add(topics)
	}
}

// run keeps the listener connected until ctx ends (Close).
func (n *Notifier) run(ctx context.Context) {
	wait := ReconnectMin
	for {
		l := n.listener()
		err := l.Connect(ctx)
		if err == nil {
			n.setConnected(true)
			wait = ReconnectMin
			for err == nil {
				var topics []string
				if topics, err = l.WaitForTopics(ctx); err == nil {
					n.deliver(topics)
				}
			}
			n.setConnected(false)
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		l.Close(cctx) //nolint:errcheck // the connection is being abandoned
		cancel()
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("change listener lost; reconnecting", "err", err, "in", wait)
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, ReconnectMax)
	}
}

// Close ends the listener and every WatchChanges still running (they
// return ErrClosed); it stops the listener's loop and waits for it to end,
// the connection closed. Closing twice is closing once.
func (n *Notifier) Close() {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.closing)
	}
	n.mu.Unlock()
	n.base.Stop(context.Background()) //nolint:errcheck // without a deadline Stop only returns nil
}
