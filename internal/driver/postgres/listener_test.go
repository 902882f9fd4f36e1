package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/postgres"
	"github.com/cks-dev/cks/internal/waitfor"
)

// listenerPIDs returns the server processes of url's database that are
// LISTENing on the changes channel (their last statement; the generated
// query's text starts with its sqlc name comment).
func listenerPIDs(t testing.TB, url string) []uint32 {
	t.Helper()
	rows, err := conn(t, url).Query(testCtx(t), `SELECT pid::bigint FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%LISTEN cks_changes%' ORDER BY pid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []uint32
	for rows.Next() {
		var pid int64
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		out = append(out, uint32(pid))
	}
	return out
}

func connect(t testing.TB, d *postgres.Driver) *postgres.Listener {
	t.Helper()
	l := d.Listener().(*postgres.Listener)
	if err := l.Connect(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// TestOneConnectionPerListener: each Listener holds one connection of its
// own, LISTENing, outside the pool; Close ends it.
func TestOneConnectionPerListener(t *testing.T) {
	url := drivertest.PostgresURL(t)
	d := open(t, url)
	pooled := postgres.PoolConns(d)
	var ls []*postgres.Listener
	for range 5 {
		ls = append(ls, connect(t, d))
	}
	var pids []uint32
	for _, l := range ls {
		pids = append(pids, l.PID())
	}
	slices.Sort(pids)
	if len(slices.Compact(slices.Clone(pids))) != 5 {
		t.Fatalf("listener pids %v, want 5 distinct", pids)
	}
	listening := listenerPIDs(t, url) // other tests' listeners are there too
	for _, pid := range pids {
		if !slices.Contains(listening, pid) {
			t.Fatalf("listener %d is not LISTENing (listening: %v)", pid, listening)
		}
	}
	if n := postgres.PoolConns(d); n != pooled {
		t.Fatalf("the pool went from %d to %d connections with 5 listeners; they must be outside it", pooled, n)
	}
	for _, l := range ls {
		if err := l.Close(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Until(t, "closed listeners to disconnect", func() bool {
		left := listenerPIDs(t, url)
		return !slices.ContainsFunc(pids, func(pid uint32) bool { return slices.Contains(left, pid) })
	})
}

// TestListenerConnectionKilled: when the server ends the listener's
// connection, WaitForTopics returns an error (not a context one), and the
// listener connects again and delivers what is notified after.
func TestListenerConnectionKilled(t *testing.T) {
	url := drivertest.PostgresURL(t)
	d := open(t, url)
	l := connect(t, d)
	pid := l.PID()
	if err := rawExec(t, url, fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	_, err := l.WaitForTopics(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a killed connection = %v, want the connection's error", err)
	}
	if err := l.Close(testCtx(t)); err != nil {
		t.Logf("close of the killed connection: %v", err)
	}
	if err := l.Connect(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if l.PID() == pid || l.PID() == 0 {
		t.Fatalf("reconnected listener pid %d (killed %d)", l.PID(), pid)
	}
	if err := d.Executor().Notify(testCtx(t), "t1"); err != nil {
		t.Fatal(err)
	}
	got, err := l.WaitForTopics(ctx)
	if err != nil || !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("after reconnecting: %v, %v", got, err)
	}
}

// TestListenerScopedToSchema: NOTIFY is database-wide, but a listener only
// hears its own schema's topics.
func TestListenerScopedToSchema(t *testing.T) {
	mine, theirs := open(t, drivertest.PostgresURL(t)), open(t, drivertest.PostgresURL(t))
	l := connect(t, mine)
	if err := theirs.Executor().Notify(testCtx(t), "theirs"); err != nil {
		t.Fatal(err)
	}
	if err := mine.Executor().Notify(testCtx(t), "mine"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	got, err := l.WaitForTopics(ctx)
	if err != nil || !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("got %v, %v; want [mine] only", got, err)
	}
	qctx, qcancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer qcancel()
	if got, err := l.WaitForTopics(qctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("then %v, %v; want nothing", got, err)
	}
}

var _ driver.Listener = (*postgres.Listener)(nil)
