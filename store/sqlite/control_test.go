package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/sqlite"
	"github.com/cks-dev/cks/store/storetest"
)

// TestSweeperControlShape checks cks_sweeper_control against ADR-015 and the
// stored updated_at (the store's clock, fixed-width), and the cks_changes
// counter a write bumps.
func TestSweeperControlShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path, store.WithClock(clock.NewFake(storetest.T0)))
	for _, running := range []bool{false, true} {
		if err := s.SetSweeperDesiredRunning(context.Background(), "graph_health", running); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name || ' ' || type || ' notnull=' || "notnull" || ' pk=' || pk
FROM pragma_table_info('cks_sweeper_control') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	rows.Close()
	want := "agent_id TEXT notnull=0 pk=1, desired_running BOOLEAN notnull=1 pk=0, updated_at TEXT notnull=1 pk=0"
	if got := strings.Join(cols, ", "); got != want {
		t.Errorf("cks_sweeper_control columns:\n got: %s\nwant: %s", got, want)
	}
	var (
		running bool
		updated string
		seq     int
	)
	if err := db.QueryRow(`SELECT desired_running, updated_at FROM cks_sweeper_control WHERE agent_id = 'graph_health'`).Scan(&running, &updated); err != nil {
		t.Fatal(err)
	}
	if !running || updated != "2026-11-30T12:00:00.000000000Z" {
		t.Errorf("row = %v, %q; want true, 2026-11-30T12:00:00.000000000Z", running, updated)
	}
	if err := db.QueryRow(`SELECT seq FROM cks_changes WHERE topic = ?`, store.TopicSweeperControl).Scan(&seq); err != nil || seq != 2 {
		t.Errorf("cks_changes seq of %s = %d, %v; want 2 (one per write)", store.TopicSweeperControl, seq, err)
	}
}

// TestChangesRolledBackNotPublished: a change published in a transaction that
// rolls back wakes no watcher, on this handle or another.
func TestChangesRolledBackNotPublished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	writer, other := open(t, path), open(t, path, store.WithChangePollInterval(10*time.Millisecond))
	self, w := storetest.Watch(t, writer, store.TopicSweeperControl), storetest.Watch(t, other, store.TopicSweeperControl)
	self.Ready(t, store.TopicSweeperControl)
	w.Ready(t, store.TopicSweeperControl)
	if err := sqlite.PublishAndRollBack(writer, context.Background(), store.TopicSweeperControl); err == nil {
		t.Fatal("the failing write succeeded")
	}
	// A committed write afterwards is the only thing either watcher reports.
	if err := writer.SetSweeperDesiredRunning(context.Background(), "contradiction", false); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*storetest.Watcher{self, w} {
		if got := x.Next(t); got != store.TopicSweeperControl {
			t.Fatalf("got %q", got)
		}
	}
	var seq int
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT seq FROM cks_changes WHERE topic = ?`, store.TopicSweeperControl).Scan(&seq); err != nil || seq != 1 {
		t.Fatalf("seq = %d, %v; want 1 (the rolled-back bump is gone)", seq, err)
	}
	self.Quiet(t)
	w.Quiet(t)
}
