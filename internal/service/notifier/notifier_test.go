package notifier_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres"
	"github.com/cks-dev/cks/internal/service/notifier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seen collects the topics one watcher was called with.
type seen struct {
	mu     sync.Mutex
	topics map[string]int
	ch     chan string
}

func newSeen() *seen { return &seen{topics: map[string]int{}, ch: make(chan string, 1000)} }

func (s *seen) f(topic string) {
	s.mu.Lock()
	s.topics[topic]++
	s.mu.Unlock()
	s.ch <- topic
}

// next waits for the watcher's next call with topic.
func (s *seen) next(t testing.TB, topic string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case got := <-s.ch:
			if got == topic {
				return
			}
		case <-deadline:
			t.Fatalf("no call with %q within a minute", topic)
		}
	}
}

// watch runs WatchChanges on n until the test ends.
func watch(t *testing.T, n *notifier.Notifier, topics ...string) *seen {
	t.Helper()
	s := newSeen()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.WatchChanges(ctx, topics, s.f) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchChanges: %v", err)
		}
	})
	return s
}

func notify(t testing.TB, d driver.Driver, topic string) {
	t.Helper()
	err := d.WithTx(context.Background(), driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		return ex.Notify(ctx, topic)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatchers: every watcher is called for each of its topics once the
// listener is connected, then for each topic another handle publishes, and
// not for topics it does not watch.
func TestWatchers(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		d := open(t, driver.WithChangePollInterval(10*time.Millisecond))
		n := notifier.New(d.Listener, nil)
		t.Cleanup(n.Close)
		a, b := watch(t, n, "alpha", "beta"), watch(t, n, "beta")
		a.next(t, "alpha")
		a.next(t, "beta")
		b.next(t, "beta")
		other := open(t)
		notify(t, other, "alpha")
		a.next(t, "alpha")
		notify(t, other, "beta")
		a.next(t, "beta")
		b.next(t, "beta")
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.topics["alpha"] != 0 {
			t.Fatalf("a watcher of beta was called for alpha: %v", b.topics)
		}
	})
}

// TestCloseEndsWatchers: Close ends every WatchChanges still running with
// ErrClosed (they used to stay blocked on a listener that was gone), and a
// call after it returns ErrClosed at once.
func TestCloseEndsWatchers(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		d := open(t, driver.WithChangePollInterval(10*time.Millisecond))
		n := notifier.New(d.Listener, nil)
		const watchers = 3
		done := make(chan error, watchers)
		seen := make([]*seen, watchers)
		for i := range watchers {
			seen[i] = newSeen()
			go func() { done <- n.WatchChanges(context.Background(), []string{"alpha"}, seen[i].f) }()
		}
		for _, s := range seen {
			s.next(t, "alpha") // connected and watching
		}
		n.Close()
		deadline := time.After(time.Minute)
		for range watchers {
			select {
			case err := <-done:
				if !errors.Is(err, notifier.ErrClosed) || !errors.Is(err, cks.ErrConflict) {
					t.Errorf("WatchChanges after Close: %v, want ErrClosed", err)
				}
			case <-deadline:
				t.Fatal("a WatchChanges still runs a minute after Close")
			}
		}
		if err := n.WatchChanges(context.Background(), []string{"alpha"}, func(string) {}); !errors.Is(err, notifier.ErrClosed) {
			t.Errorf("WatchChanges on a closed Notifier: %v, want ErrClosed", err)
		}
		n.Close() // twice is once
	})
}

// TestBadTopics: no topic, or an empty one, is a FieldError naming topics.
func TestBadTopics(t *testing.T) {
	n := notifier.New(nil, nil)
	defer n.Close()
	for _, topics := range [][]string{nil, {""}} {
		if err := n.WatchChanges(context.Background(), topics, func(string) {}); !cks.IsFieldError(err, "topics") {
			t.Errorf("topics %q: %v", topics, err)
		}
	}
}

// TestOneConnectionForManyWatchers: fifty concurrent watchers (as fifty
// `cks task stop --wait` in one hub) share one LISTEN connection, and when
// it is killed they are all called again (they may have missed changes),
// over one new connection.
func TestOneConnectionForManyWatchers(t *testing.T) {
	pgURL := backendtest.PostgresURL(t)
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "notifier-test")
	u.RawQuery = q.Encode()
	drv, err := postgres.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	n := notifier.New(drv.Listener, nil)
	t.Cleanup(n.Close)
	var all []*seen
	for range 50 {
		all = append(all, watch(t, n, "task_aborts"))
	}
	for _, s := range all {
		s.next(t, "task_aborts")
	}
	admin := connect(t, pgURL)
	listeners := func() []int {
		rows, err := admin.Query(context.Background(), `SELECT pid FROM pg_stat_activity
WHERE application_name = 'notifier-test' AND query LIKE '%LISTEN %'`)
		if err != nil {
			t.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return pids
	}
	pids := listeners()
	if len(pids) != 1 {
		t.Fatalf("%d LISTEN connections for 50 watchers, want 1 (%v)", len(pids), pids)
	}
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pids[0]); err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		s.next(t, "task_aborts")
	}
	if again := listeners(); len(again) != 1 || slices.Equal(again, pids) {
		t.Fatalf("after the kill: LISTEN connections %v, want one new one (was %v)", again, pids)
	}
}

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// fakeListener connects at once and waits for topics until its context
// ends; it counts the calls in progress and the Closes.
type fakeListener struct {
	mu      sync.Mutex
	waiting int // WaitForTopics calls in progress
	closes  int
	waits   chan struct{} // a send when a WaitForTopics begins
}

func (f *fakeListener) Connect(context.Context) error { return nil }

func (f *fakeListener) WaitForTopics(ctx context.Context) ([]string, error) {
	f.mu.Lock()
	f.waiting++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.waiting--
		f.mu.Unlock()
	}()
	f.waits <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (f *fakeListener) Close(context.Context) error {
	f.mu.Lock()
	f.closes++
	f.mu.Unlock()
	return nil
}

// TestCloseStopsTheListenerLoop: nothing runs before the first watcher;
// once one came, Close returns only after the listener's loop has ended —
// its wait returned and the connection closed — and a second Close does
// nothing more.
func TestCloseStopsTheListenerLoop(t *testing.T) {
	f := &fakeListener{waits: make(chan struct{}, 1)}
	made := 0
	n := notifier.New(func() driver.Listener { made++; return f }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.WatchChanges(ctx, []string{"alpha"}, func(string) {}) }()
	select {
	case <-f.waits:
	case <-time.After(time.Minute):
		t.Fatal("the listener loop did not start within a minute")
	}
	n.Close()
	f.mu.Lock()
	waiting, closes := f.waiting, f.closes
	f.mu.Unlock()
	if waiting != 0 || closes != 1 || made != 1 {
		t.Fatalf("after Close: %d waits in progress, %d closes, %d listeners made; want 0, 1, 1", waiting, closes, made)
	}
	if err := <-done; !errors.Is(err, notifier.ErrClosed) {
		t.Fatalf("WatchChanges: %v, want ErrClosed", err)
	}
	n.Close()
	if f.closes != 1 {
		t.Fatalf("a second Close closed the listener again (%d closes)", f.closes)
	}
	goleak.VerifyNone(t)
}
