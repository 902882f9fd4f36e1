package sqlite_test

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

// cancelHook is what the SQL function cks_test_cancel() calls, once per
// row of the statement that calls it (TestGroupCommit/CanceledMidStatement).
var cancelHook atomic.Pointer[func()]

func init() {
	msqlite.MustRegisterScalarFunction("cks_test_cancel", 0, func(*msqlite.FunctionContext, []sqldriver.Value) (sqldriver.Value, error) {
		if f := cancelHook.Load(); f != nil {
			(*f)()
		}
		return int64(1), nil
	})
}

// liveRow is a liveness row named id, the effect the group-commit tests
// write and look for.
func liveRow(id string) driver.LivenessRow {
	return driver.LivenessRow{InstanceID: id, ProcessKind: "k", Hostname: "h", PID: 1, LivenessIntervalS: 1,
		StartedAt: drivertest.T0, LastHeartbeatAt: drivertest.T0}
}

// holdWriter starts a write transaction on d that writes the row "held" and
// then waits; it returns once that transaction holds the writer. release
// lets it commit and returns its error.
func holdWriter(t testing.TB, d *sqlite.Driver) (release func() error) {
	t.Helper()
	started, proceed, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.WithTx(context.Background(), driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			close(started)
			<-proceed
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("held")))
		})
	}()
	<-started
	return func() error { close(proceed); return <-done }
}

// waitQueued waits until n write transactions of d wait for the next group.
func waitQueued(t testing.TB, d *sqlite.Driver, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for sqlite.Queued(d) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", sqlite.Queued(d), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// queue starts the write transaction fn on d with ctx and waits until it
// is queued behind the ones before it (n of them); the returned channel
// gets its error.
func queue(t testing.TB, ctx context.Context, d *sqlite.Driver, n int, fn func(ctx context.Context, ex driver.Executor) error) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.WithTx(ctx, driver.TxOptions{}, fn) }()
	waitQueued(t, d, n+1)
	return done
}

// present reports which of ids have a liveness row in d.
func present(t testing.TB, d *sqlite.Driver, ids ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, id := range ids {
		_, err := d.Executor().LivenessGet(context.Background(), id)
		switch {
		case err == nil:
			out[id] = true
		case !errors.Is(err, driver.ErrNoRows):
			t.Fatalf("get %s: %v", id, err)
		}
	}
	return out
}

// TestGroupCommit: write transactions that queue while one holds the
// writer join its group — one commit, each in its own savepoint, in queue
// order — and each returns only after that commit, with its own outcome.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	errBoom := errors.New("boom")

	t.Run("OneFails", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		const n, failing = 8, 3
		var dones []<-chan error
		var ids []string
		for i := range n {
			id := fmt.Sprintf("w-%d", i)
			ids = append(ids, id)
			dones = append(dones, queue(t, ctx, d, i, func(ctx context.Context, ex driver.Executor) error {
				if err := drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow(id))); err != nil {
					return err
				}
				if i == failing {
					return errBoom
				}
				return nil
			}))
		}
		before := sqlite.Commits(d)
		if err := release(); err != nil {
			t.Fatal(err)
		}
		for i, done := range dones {
			err := <-done
			if want := i == failing; errors.Is(err, errBoom) != want || (!want && err != nil) {
				t.Errorf("writer %d: err = %v", i, err)
			}
		}
		if got := sqlite.Commits(d) - before; got != 1 {
			t.Errorf("%d commits for the held transaction and %d queued ones, want 1 (one group)", got, n)
		}
		if !present(t, d, "held")["held"] {
			t.Error("the held transaction's row is missing")
		}
		got := present(t, d, ids...)
		for i, id := range ids {
			if got[id] != (i != failing) {
				t.Errorf("row %s written: %v, want %v", id, got[id], i != failing)
			}
		}
	})

	t.Run("CommitFails", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		a := queue(t, ctx, d, 0, func(ctx context.Context, ex driver.Executor) error {
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("a")))
		})
		// A dependency edge of no task: with the check deferred, the
		// commit fails.
		b := queue(t, ctx, d, 1, func(ctx context.Context, ex driver.Executor) error {
			if err := sqlite.ExecInTx(ctx, ex, "PRAGMA defer_foreign_keys = ON"); err != nil {
				return err
			}
			return ex.TaskDepInsertMany(ctx, []driver.TaskDep{{TaskID: 998, DependsOn: 999}})
		})
		c := queue(t, ctx, d, 2, func(ctx context.Context, ex driver.Executor) error {
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("c")))
		})
		if err := release(); err == nil {
			t.Error("held: nil error from a failed commit")
		}
		for name, done := range map[string]<-chan error{"a": a, "b": b, "c": c} {
			if err := <-done; err == nil {
				t.Errorf("%s: nil error from a failed commit", name)
			}
		}
		if got := present(t, d, "held", "a", "c"); len(got) > 0 {
			t.Errorf("rows after the failed group: %v, want none", got)
		}
		// The writer is usable again, with its foreign keys checked at once.
		if err := drivertest.ErrOnly(d.Executor().LivenessUpsert(ctx, liveRow("after"))); err != nil {
			t.Fatalf("write after the failed group: %v", err)
		}
		err := d.Executor().TaskDepInsertMany(ctx, []driver.TaskDep{{TaskID: 998, DependsOn: 999}})
		if err == nil {
			t.Error("dependency of no task accepted after the failed group")
		}
	})

	t.Run("CanceledBeforeItsTurn", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		b := queue(t, ctx, d, 0, func(ctx context.Context, ex driver.Executor) error {
			cancel() // the next member's caller gives up while the group runs
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("b")))
		})
		ran := false
		c := queue(t, cctx, d, 1, func(ctx context.Context, ex driver.Executor) error {
			ran = true
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("c")))
		})
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := <-b; err != nil {
			t.Errorf("b: %v", err)
		}
		if err := <-c; ran || !errors.Is(err, context.Canceled) {
			t.Errorf("c: ran %v, err = %v; want context.Canceled without running (its caller gave up before its turn)", ran, err)
		}
		if got := present(t, d, "b", "c"); !got["b"] || got["c"] {
			t.Errorf("rows: %v, want b only", got)
		}
	})

	t.Run("CanceledWhileQueued", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		cctx, cancel := context.WithCancel(ctx)
		c := queue(t, cctx, d, 0, func(ctx context.Context, ex driver.Executor) error {
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("c")))
		})
		cancel()
		if err := <-c; !errors.Is(err, context.Canceled) {
			t.Errorf("c: err = %v, want context.Canceled", err)
		}
		waitQueued(t, d, 0)
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if got := present(t, d, "held", "c"); !got["held"] || got["c"] {
			t.Errorf("rows: %v, want held only", got)
		}
	})

	t.Run("CanceledWhileRunning", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// b's caller gives up between its statements: its second
		// statement fails without running, its first is rolled back, and
		// the member after it commits.
		var second error
		b := queue(t, cctx, d, 0, func(ctx context.Context, ex driver.Executor) error {
			if err := drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("b1"))); err != nil {
				return err
			}
			cancel()
			second = drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("b2")))
			return second
		})
		c := queue(t, ctx, d, 1, func(ctx context.Context, ex driver.Executor) error {
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("c")))
		})
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := <-b; !errors.Is(err, context.Canceled) || !errors.Is(second, context.Canceled) {
			t.Errorf("b: err = %v, its second statement's %v; want context.Canceled for both", err, second)
		}
		if err := <-c; err != nil {
			t.Errorf("c: %v", err)
		}
		if got := present(t, d, "b1", "b2", "c"); got["b1"] || got["b2"] || !got["c"] {
			t.Errorf("rows: %v, want c only", got)
		}
	})

	t.Run("CanceledMidStatement", func(t *testing.T) {
		// A write statement still running when its caller gives up runs
		// to its end (SQLite would interrupt it and roll back the whole
		// transaction, the other members' writes with it); the member is
		// then rolled back to its savepoint.
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The first row's call cancels; the rest yield, so that anything
		// watching the context gets to act while the statement runs.
		hook := func() { cancel(); runtime.Gosched() }
		cancelHook.Store(&hook)
		defer cancelHook.Store(nil)
		a := queue(t, ctx, d, 0, func(ctx context.Context, ex driver.Executor) error {
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("a")))
		})
		b := queue(t, cctx, d, 1, func(ctx context.Context, ex driver.Executor) error {
			return sqlite.ExecInTx(ctx, ex, `INSERT INTO cks_changes(topic, seq)
				WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < 20000)
				SELECT 'long-' || x, cks_test_cancel() FROM n`)
		})
		c := queue(t, ctx, d, 2, func(ctx context.Context, ex driver.Executor) error {
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("c")))
		})
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := <-a; err != nil {
			t.Errorf("a: %v", err)
		}
		if err := <-b; !errors.Is(err, context.Canceled) {
			t.Errorf("b: err = %v, want context.Canceled", err)
		}
		if err := <-c; err != nil {
			t.Errorf("c: %v", err)
		}
		if got := present(t, d, "a", "c"); !got["a"] || !got["c"] {
			t.Errorf("rows: %v, want a and c", got)
		}
		if got := strs(t, rawDB(t, d.Path()), "SELECT count(*) FROM cks_changes WHERE topic LIKE 'long-%'"); len(got) != 1 || got[0] != "0" {
			t.Errorf("rows of the canceled statement: %v, want 0", got)
		}
		if err := drivertest.ErrOnly(d.Executor().LivenessUpsert(ctx, liveRow("after"))); err != nil {
			t.Errorf("write after: %v", err)
		}
	})

	t.Run("Ordering", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		// Each member reads the row of the one before it and writes its
		// own with the count seen so far, as its pid.
		names := []string{"m0", "m1", "m2", "m3"}
		var dones []<-chan error
		for i, name := range names {
			dones = append(dones, queue(t, ctx, d, i, func(ctx context.Context, ex driver.Executor) error {
				pid := 1
				if i > 0 {
					prev, err := ex.LivenessGet(ctx, names[i-1])
					if err != nil {
						return fmt.Errorf("%s reads %s: %w", name, names[i-1], err)
					}
					pid = prev.PID + 1
				}
				r := liveRow(name)
				r.PID = pid
				return drivertest.ErrOnly(ex.LivenessUpsert(ctx, r))
			}))
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		for i, done := range dones {
			if err := <-done; err != nil {
				t.Errorf("%s: %v", names[i], err)
			}
		}
		last, err := d.Executor().LivenessGet(ctx, "m3")
		if err != nil || last.PID != 4 {
			t.Errorf("m3 = %+v, %v; want pid 4 (each member saw the one before)", last, err)
		}
	})

	t.Run("NotifyWakesOnce", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"), driver.WithChangePollInterval(time.Hour))
		l := d.Listener()
		if err := l.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		release := holdWriter(t, d)
		var dones []<-chan error
		for i, topic := range []string{"t1", "t2"} {
			dones = append(dones, queue(t, ctx, d, i, func(ctx context.Context, ex driver.Executor) error {
				return ex.Notify(ctx, topic)
			}))
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		for _, done := range dones {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		topics, err := l.WaitForTopics(wctx) // the poll is an hour away: only the commit's wake-up
		if err != nil || !slices.Equal(topics, []string{"t1", "t2"}) {
			t.Fatalf("topics = %v, %v; want [t1 t2] from the group's one commit", topics, err)
		}
	})

	t.Run("PanicIsTheCallers", func(t *testing.T) {
		d := open(t, filepath.Join(t.TempDir(), "cks.db"))
		release := holdWriter(t, d)
		// The held transaction's caller leads the group, so p's fn panics
		// in that goroutine unless the group hands the panic back to p.
		c := queue(t, ctx, d, 0, func(ctx context.Context, ex driver.Executor) error {
			return drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("c")))
		})
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				if err := drivertest.ErrOnly(ex.LivenessUpsert(ctx, liveRow("p"))); err != nil {
					return err
				}
				panic("member panic")
			})
		}()
		waitQueued(t, d, 2)
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if v := <-panicked; v != "member panic" {
			t.Errorf("recovered %v in the panicking caller, want its panic", v)
		}
		if err := <-c; err != nil {
			t.Errorf("c: %v", err)
		}
		if got := present(t, d, "p", "c"); got["p"] || !got["c"] {
			t.Errorf("rows: %v, want c only", got)
		}
	})
}
