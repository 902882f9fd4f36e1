package drivertest

import (
	"strings"
	"testing"
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
