package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// Facts checks what the database itself enforces, in every dialect alike:
// the append-only tables refuse UPDATE and DELETE (cks_object_versions lets
// is_head change and nothing else), and one live task per dedupe key.
func Facts(t *testing.T, newDB NewDB) {
	t.Run("AppendOnly", func(t *testing.T) {
		t.Parallel()
		_, db := open(t, newDB)
		for _, q := range []string{
			"INSERT INTO cks_outbox_tasks (type, state, created_at, updated_at) VALUES ('t', 'OPEN', " + T0SQL + ", " + T0SQL + ")",
			"INSERT INTO cks_task_events (task_id, at, to_state) VALUES (1, " + T0SQL + ", 'OPEN')",
			"INSERT INTO cks_task_decisions (task_id, attempt, restart, revision, derived_from_revision, kind, created_at) VALUES (1, 1, 0, 1, 1, 'k', " + T0SQL + ")",
			"INSERT INTO cks_objects (kind, content_hash, created_at, updated_at) VALUES ('q', 'h', " + T0SQL + ", " + T0SQL + ")",
			"INSERT INTO cks_object_versions (object_id, content, content_hash, created_at, is_head) VALUES (1, '{}', 'h', " + T0SQL + ", true)",
			"INSERT INTO cks_transition_log (object_id, ts, action, content_hash) VALUES (1, " + T0SQL + ", 'create', 'h')",
		} {
			exec(t, db, q)
		}
		for _, q := range []string{
			"UPDATE cks_task_events SET reason = 'rewritten'",
			"DELETE FROM cks_task_events",
			"UPDATE cks_task_decisions SET text = 'rewritten'",
			"DELETE FROM cks_task_decisions",
			"UPDATE cks_transition_log SET agent = 'rewritten'",
			"DELETE FROM cks_transition_log",
			"UPDATE cks_object_versions SET content = '{\"x\": 1}'",
			"UPDATE cks_object_versions SET author = 'rewritten', is_head = false",
			"UPDATE cks_object_versions SET version = 9",
			"DELETE FROM cks_object_versions",
		} {
			if err := db.Exec(t, q); err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: err = %v, want the append-only refusal", q, err)
			}
		}
		// Only is_head of a version changes.
		exec(t, db, "UPDATE cks_object_versions SET is_head = false")
	})
	t.Run("OneLiveTaskPerDedupeKey", func(t *testing.T) {
		t.Parallel()
		_, db := open(t, newDB)
		insert := func(state string) string {
			return "INSERT INTO cks_outbox_tasks (type, state, dedupe_key, created_at, updated_at) VALUES ('t', '" +
				state + "', 'k', " + T0SQL + ", " + T0SQL + ")"
		}
		exec(t, db, insert("COMPLETED"))
		exec(t, db, insert("OPEN"))
		exec(t, db, insert("CANCELLED"))
		if err := db.Exec(t, insert("RUNNING")); err == nil {
			t.Fatal("a second live task with one dedupe key was accepted")
		}
		// An empty key is no key.
		exec(t, db, "INSERT INTO cks_outbox_tasks (type, state, created_at, updated_at) VALUES ('t', 'OPEN', "+T0SQL+", "+T0SQL+")")
		exec(t, db, "INSERT INTO cks_outbox_tasks (type, state, created_at, updated_at) VALUES ('t', 'OPEN', "+T0SQL+", "+T0SQL+")")
	})
}

// Purge checks TaskPurge: it deletes the old terminal tasks with their
// events and decisions (whose triggers refuse any other DELETE), leaves
// the others, and the tables are append-only again afterwards — after a
// purge that committed and after one that rolled back; and
// TransitionPurge likewise for the knowledge store's transition log.
func Purge(t *testing.T, newDB NewDB) {
	t.Run("DeletesAndStaysAppendOnly", func(t *testing.T) {
		t.Parallel()
		d, db := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		rows, err := ex.TaskInsertMany(ctx, []driver.TaskRow{task("t", "CANCELLED"), task("t", "OPEN"), task("t", "COMPLETED")})
		must(t, "insert", err)
		for _, r := range rows {
			exec(t, db, fmt.Sprintf("INSERT INTO cks_task_events (task_id, at, to_state) VALUES (%d, %s, 'OPEN')", r.ID, T0SQL))
			exec(t, db, fmt.Sprintf("INSERT INTO cks_task_decisions (task_id, attempt, restart, revision, derived_from_revision, kind, created_at) VALUES (%d, 1, 0, 1, 1, 'k', %s)", r.ID, T0SQL))
		}
		terminal := []string{"COMPLETED", "FAILED", "CANCELLED"}
		p := driver.TaskPurgeCandidatesParams{States: terminal, Before: T0.Add(time.Second), Limit: 10}
		ids, err := ex.TaskPurgeCandidates(ctx, p)
		must(t, "candidates", err)
		if want := []int64{rows[0].ID, rows[2].ID}; !slices.Equal(ids, want) {
			t.Fatalf("candidates %v, want %v", ids, want)
		}
		// Rolled back: nothing deleted, the triggers still there.
		rollback := errors.New("rollback")
		err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			if _, err := ex.TaskPurge(ctx, driver.TaskPurgeParams{IDs: ids, States: terminal, Before: p.Before}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("purge in a rolled back transaction: %v", err)
		}
		if got, _ := ex.TaskEventList(ctx, rows[0].ID); len(got) != 1 {
			t.Fatalf("after the rollback task %d has %d events, want 1", rows[0].ID, len(got))
		}
		refused := func(when string) {
			t.Helper()
			for _, q := range []string{"DELETE FROM cks_task_events", "DELETE FROM cks_task_decisions", "UPDATE cks_task_events SET reason = 'x'"} {
				if err := db.Exec(t, q); err == nil || !strings.Contains(err.Error(), "append-only") {
					t.Errorf("%s: %s: err = %v, want the append-only refusal", when, q, err)
				}
			}
		}
		refused("after a rolled back purge")
		var deleted []int64
		must(t, "purge", d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			deleted, err = ex.TaskPurge(ctx, driver.TaskPurgeParams{IDs: append(ids, rows[1].ID), States: terminal, Before: p.Before})
			return err
		}))
		if !slices.Equal(deleted, ids) {
			t.Fatalf("purged %v, want %v (the open task is not a candidate)", deleted, ids)
		}
		left, err := ex.TaskList(ctx, driver.TaskListParams{Limit: 10})
		must(t, "list", err)
		if len(left) != 1 || left[0].ID != rows[1].ID {
			t.Fatalf("left %+v, want the open task alone", left)
		}
		for i, r := range rows {
			if events, _ := ex.TaskEventList(ctx, r.ID); (i != 1) != (len(events) == 0) {
				t.Errorf("task %d keeps %d events", r.ID, len(events))
			}
		}
		refused("after a purge")
	})
	t.Run("TransitionLog", func(t *testing.T) {
		t.Parallel()
		d, db := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		// o[0] final and old, o[1] old but not final, o[2] final but changed
		// after Before.
		o := objectIDsOf(insertObjects(t, ex, objectRow("q", "done", 0), objectRow("r", "open", 0), objectRow("s", "done", 3600)))
		entry := func(id int64, ts time.Time, action string) driver.TransitionRow {
			return driver.TransitionRow{ObjectID: id, TS: ts, Agent: "a", Action: action, TransitionedTo: "done", ContentHash: "h"}
		}
		err := ex.TransitionInsertMany(ctx, []driver.TransitionRow{entry(o[0], T0, "created"), entry(o[1], T0, "created"),
			entry(o[0], T0, "completed"), entry(o[2], T0, "created"), entry(o[0], T0.Add(2*time.Hour), "reopened")})
		skipUnsupported(t, "transition insert", err)
		final := []string{"done"}
		p := driver.TransitionPurgeCandidatesParams{Statuses: final, Before: T0.Add(time.Second), Limit: 10}
		cands, err := ex.TransitionPurgeCandidates(ctx, p)
		must(t, "candidates", err)
		log0, err := ex.TransitionListMany(ctx, []int64{o[0]})
		must(t, "log", err)
		if len(cands) != 2 || cands[0] != log0[0] || cands[1] != log0[1] {
			t.Fatalf("candidates %+v, want the two old entries of %d %+v", cands, o[0], log0[:2])
		}
		seqs := []int64{cands[0].Seq, cands[1].Seq}
		rollback := errors.New("rollback")
		err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			if _, err := ex.TransitionPurge(ctx, driver.TransitionPurgeParams{Seqs: seqs, Statuses: final, Before: p.Before}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("purge in a rolled back transaction: %v", err)
		}
		if got, _ := ex.TransitionListMany(ctx, []int64{o[0]}); len(got) != 3 {
			t.Fatalf("after the rollback object %d has %d entries, want 3", o[0], len(got))
		}
		refused := func(when string) {
			t.Helper()
			for _, q := range []string{"DELETE FROM cks_transition_log", "UPDATE cks_transition_log SET agent = 'x'"} {
				if err := db.Exec(t, q); err == nil || !strings.Contains(err.Error(), "append-only") {
					t.Errorf("%s: %s: err = %v, want the append-only refusal", when, q, err)
				}
			}
		}
		refused("after a rolled back purge")
		log1, _ := ex.TransitionListMany(ctx, []int64{o[1]})
		var deleted []int64
		must(t, "purge", d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			deleted, err = ex.TransitionPurge(ctx, driver.TransitionPurgeParams{Seqs: append(seqs, log1[0].Seq), Statuses: final, Before: p.Before})
			return err
		}))
		if !slices.Equal(deleted, seqs) {
			t.Fatalf("purged %v, want %v (the entry of the open object is not a candidate)", deleted, seqs)
		}
		for i, want := range []int{1, 1, 1} {
			if got, _ := ex.TransitionListMany(ctx, []int64{o[i]}); len(got) != want {
				t.Errorf("object %d keeps %d entries, want %d", o[i], len(got), want)
			}
		}
		if got, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: o}); err != nil || len(got) != 3 || got[0].CurrentStatus != "done" {
			t.Errorf("objects after the purge: %+v, %v (their rows stay)", got, err)
		}
		refused("after a purge")
	})
}
