package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/storetest"
)

// TestTaskEventsAppendOnly checks that the database itself refuses UPDATE and
// DELETE on cks_task_events, whoever connects.
func TestTaskEventsAppendOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	task := storetest.MustEnqueue(t, s, store.NewTask{Title: "x"})
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`UPDATE cks_task_events SET reason = 'rewritten'`,
		`DELETE FROM cks_task_events`,
	} {
		_, err := db.Exec(stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
	if _, err := db.Exec(`INSERT INTO cks_task_events (task_id, at, to_state) VALUES (?, '2026-01-01T00:00:00.000000000Z', 'OPEN')`, task.ID); err != nil {
		t.Errorf("insert refused: %v", err)
	}
	got := storetest.MustGet(t, s, task.ID)
	if len(got.Events) != 2 || got.Events[0].Reason != "enqueued" {
		t.Fatalf("events after refused writes: %+v", got.Events)
	}
}

// TestTaskDecisionsAppendOnly checks that the database itself refuses UPDATE
// and DELETE on cks_task_decisions.
func TestTaskDecisionsAppendOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	storetest.MustEnqueue(t, s, store.NewTask{Title: "x"})
	c := storetest.MustClaimOne(t, s, "w")
	if _, err := s.RecordDecision(t.Context(), c.ID, c.LeaseToken, "plan", "atomic", 1); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`UPDATE cks_task_decisions SET text = 'rewritten'`,
		`DELETE FROM cks_task_decisions`,
	} {
		_, err := db.Exec(stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
	if got := storetest.MustGet(t, s, c.ID); len(got.Current.Decisions) != 1 || got.Current.Decisions[0].Text != "atomic" {
		t.Fatalf("decisions after refused writes: %+v", got.Current)
	}
}

// TestUpgradesOlderTaskSchema opens a database whose cks_outbox_tasks lacks
// most of today's columns and finds them added, with the old row intact.
func TestUpgradesOlderTaskSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE cks_outbox_tasks (
		task_id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL,
		payload TEXT NOT NULL DEFAULT '{}', state TEXT NOT NULL,
		priority INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
		max_attempts INTEGER NOT NULL DEFAULT 3, claimed_by TEXT NOT NULL DEFAULT '',
		lease_expires_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
	INSERT INTO cks_outbox_tasks (type, payload, state, priority, created_at, updated_at)
	VALUES ('critique', '{"object_id": 7}', 'OPEN', 2,
		'2026-11-30T12:00:00.000000000Z', '2026-11-30T12:00:00.000000000Z');`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	storetest.CheckUpgradedTasks(t, open(t, path))
}
