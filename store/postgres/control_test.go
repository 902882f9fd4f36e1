package postgres_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/postgres"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestListenerReconnects terminates the watcher's dedicated connection from
// an admin connection: the watcher reconnects, calls f once for every topic,
// and delivers the changes made afterwards.
func TestListenerReconnects(t *testing.T) {
	_, u := freshSchema(t)
	writer, watched := open(t, u), open(t, u)
	topics := []string{store.TopicSweeperControl, "storetest_other"}
	w := storetest.Watch(t, watched, topics...)
	w.Ready(t, topics...)
	for round := range 2 {
		pids := postgres.ListenerPIDs(watched)
		if len(pids) != 1 {
			t.Fatalf("round %d: listener pids %v, want one", round, pids)
		}
		admin(t, baseURL(t), fmt.Sprintf("SELECT pg_terminate_backend(%d)", pids[0]))
		w.Ready(t, topics...) // the reconnect's calls
		now := postgres.ListenerPIDs(watched)
		if len(now) != 1 || slices.Contains(now, pids[0]) {
			t.Fatalf("round %d: after reconnect listener pids %v, want one new (old %d)", round, now, pids[0])
		}
		if err := writer.SetSweeperDesiredRunning(testCtx(t), "lease_reaper", round == 0); err != nil {
			t.Fatal(err)
		}
		if got := w.Next(t); got != store.TopicSweeperControl {
			t.Fatalf("round %d: after reconnect got %q", round, got)
		}
		w.Quiet(t)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if pids := postgres.ListenerPIDs(watched); len(pids) != 0 {
		t.Fatalf("stopped watcher left listener pids %v", pids)
	}
}

// TestChangesScopedToSchema: NOTIFY is database-wide, but a watcher only
// hears changes of its own schema.
func TestChangesScopedToSchema(t *testing.T) {
	_, u1 := freshSchema(t)
	_, u2 := freshSchema(t)
	mine, theirs := open(t, u1), open(t, u2)
	w := storetest.Watch(t, mine, store.TopicSweeperControl)
	w.Ready(t, store.TopicSweeperControl)
	if err := theirs.SetSweeperDesiredRunning(testCtx(t), "contradiction", false); err != nil {
		t.Fatal(err)
	}
	if err := mine.SetSweeperDesiredRunning(testCtx(t), "contradiction", true); err != nil {
		t.Fatal(err)
	}
	if got := w.Next(t); got != store.TopicSweeperControl {
		t.Fatalf("got %q", got)
	}
	w.Quiet(t) // the other schema's earlier change was not reported
}

// TestSweeperControlShape checks cks_sweeper_control against ADR-015 and the
// stored updated_at (the store's clock).
func TestSweeperControlShape(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u, store.WithClock(clock.NewFake(storetest.T0)))
	if err := s.SetSweeperDesiredRunning(testCtx(t), "graph_health", false); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'cks_sweeper_control' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := "agent_id text NO, desired_running boolean NO, updated_at timestamp with time zone NO"
	if got := strings.Join(cols, ", "); got != want {
		t.Errorf("cks_sweeper_control columns:\n got: %s\nwant: %s", got, want)
	}
	var (
		running bool
		updated time.Time
	)
	if err := conn.QueryRow(ctx, `SELECT desired_running, updated_at FROM cks_sweeper_control
WHERE agent_id = 'graph_health'`).Scan(&running, &updated); err != nil {
		t.Fatal(err)
	}
	if running || !updated.Equal(storetest.T0) {
		t.Errorf("row = %v, %v; want false, %v", running, updated, storetest.T0)
	}
}

// TestChangesRolledBackNotPublished: a NOTIFY in a transaction that rolls
// back is never delivered.
func TestChangesRolledBackNotPublished(t *testing.T) {
	_, u := freshSchema(t)
	writer, watched := open(t, u), open(t, u)
	w := storetest.Watch(t, watched, store.TopicSweeperControl)
	w.Ready(t, store.TopicSweeperControl)
	if err := postgres.PublishAndRollBack(writer, testCtx(t), store.TopicSweeperControl); err == nil {
		t.Fatal("the failing write succeeded")
	}
	if err := writer.SetSweeperDesiredRunning(testCtx(t), "contradiction", false); err != nil {
		t.Fatal(err)
	}
	if got := w.Next(t); got != store.TopicSweeperControl {
		t.Fatalf("got %q", got)
	}
	w.Quiet(t)
}
