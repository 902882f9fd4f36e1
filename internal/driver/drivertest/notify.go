package drivertest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// quietFor is how long a listener must stay silent for "nothing more was
// delivered": many times the suite's poll interval.
const quietFor = 300 * time.Millisecond

// pollEvery is the SQLite change poll interval of the suite's handles.
const pollEvery = 10 * time.Millisecond

// listen connects a listener of d, closed when t ends.
func listen(t testing.TB, d driver.Driver) driver.Listener {
	t.Helper()
	l := d.Listener()
	must(t, "connect", l.Connect(Ctx(t)))
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// next waits (with the suite's deadline) for the next topics of l.
func next(t testing.TB, l driver.Listener) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(Ctx(t), 10*time.Second)
	defer cancel()
	topics, err := l.WaitForTopics(ctx)
	must(t, "wait for topics", err)
	return topics
}

// quiet checks that l delivers nothing for quietFor.
func quiet(t testing.TB, l driver.Listener) {
	t.Helper()
	ctx, cancel := context.WithTimeout(Ctx(t), quietFor)
	defer cancel()
	if topics, err := l.WaitForTopics(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("listener delivered %v, %v; want nothing", topics, err)
	}
}

// collect gathers what l delivers until it is quiet.
func collect(t testing.TB, l driver.Listener) []string {
	t.Helper()
	var all []string
	for {
		ctx, cancel := context.WithTimeout(Ctx(t), quietFor)
		topics, err := l.WaitForTopics(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return all
		}
		must(t, "wait for topics", err)
		all = append(all, topics...)
	}
}

func notifyTx(ctx context.Context, d driver.Driver, topics ...string) error {
	return d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		for _, topic := range topics {
			if err := ex.Notify(ctx, topic); err != nil {
				return err
			}
		}
		return nil
	})
}

// Notify checks Notify and Listener.
func Notify(t *testing.T, newDB NewDB) {
	poll := driver.WithChangePollInterval(pollEvery)
	t.Run("DeliveredOnlyAfterCommit", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		writer, other := db.Open(t, poll), db.Open(t, poll)
		same, across := listen(t, writer), listen(t, other)
		ctx := Ctx(t)
		err := writer.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			if err := ex.Notify(ctx, "t1"); err != nil {
				return err
			}
			quiet(t, same) // not before the commit
			quiet(t, across)
			return nil
		})
		must(t, "notify", err)
		for name, l := range map[string]driver.Listener{"same handle": same, "other handle": across} {
			if got := next(t, l); !slices.Equal(got, []string{"t1"}) {
				t.Errorf("%s: got %v, want [t1]", name, got)
			}
			quiet(t, l)
		}
	})
	t.Run("RolledBackNotDelivered", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		writer, other := db.Open(t, poll), db.Open(t, poll)
		l := listen(t, other)
		ctx := Ctx(t)
		boom := errors.New("boom")
		err := writer.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			if err := ex.Notify(ctx, "rolled_back"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("WithTx = %v", err)
		}
		must(t, "notify", writer.Executor().Notify(ctx, "committed"))
		if got := collect(t, l); !slices.Equal(got, []string{"committed"}) {
			t.Fatalf("got %v, want only [committed]", got)
		}
	})
	t.Run("Coalesced", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		writer, other := db.Open(t, poll), db.Open(t, poll)
		l := listen(t, other)
		must(t, "notify", notifyTx(Ctx(t), writer, "b", "a", "a", "a"))
		got := collect(t, l)
		slices.Sort(got)
		if !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("got %v, want each topic once: [a b]", got)
		}
	})
	t.Run("LocalCommitWakesAtOnce", func(t *testing.T) {
		t.Parallel()
		// A poll interval far beyond the test's deadline: only the local
		// wake (SQLite) or the push (Postgres) can deliver in time.
		d, _ := open(t, newDB, driver.WithChangePollInterval(time.Hour))
		l := listen(t, d)
		must(t, "notify outside a transaction", d.Executor().Notify(Ctx(t), "t1"))
		if got := next(t, l); !slices.Equal(got, []string{"t1"}) {
			t.Fatalf("got %v", got)
		}
		must(t, "notify in a transaction", notifyTx(Ctx(t), d, "t2"))
		if got := next(t, l); !slices.Equal(got, []string{"t2"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("ManyListeners", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		writer, other := db.Open(t, poll), db.Open(t, poll)
		ls := []driver.Listener{listen(t, other), listen(t, other), listen(t, writer)}
		must(t, "notify", writer.Executor().Notify(Ctx(t), "t1"))
		for i, l := range ls {
			if got := next(t, l); !slices.Equal(got, []string{"t1"}) {
				t.Errorf("listener %d got %v", i, got)
			}
		}
	})
	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB, poll)
		ctx := Ctx(t)
		l := d.Listener()
		if _, err := l.WaitForTopics(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait before connect = %v, want an error", err)
		}
		must(t, "connect", l.Connect(ctx))
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.WaitForTopics(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait with an ended context = %v, want context.Canceled", err)
		}
		// Closed and connected again, it delivers what is notified after.
		must(t, "close", l.Close(ctx))
		must(t, "reconnect", l.Connect(ctx))
		defer l.Close(ctx)
		must(t, "notify", d.Executor().Notify(ctx, "t1"))
		if got := next(t, l); !slices.Equal(got, []string{"t1"}) {
			t.Fatalf("after reconnect got %v", got)
		}
	})
}
