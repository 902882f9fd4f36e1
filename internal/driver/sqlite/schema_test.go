package sqlite_test

import (
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
)

// rawDB opens path as another tool would (no pragmas but a busy timeout).
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// strs reads a query of text columns into "a|b|…" lines.
func strs(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "NULL"
			if v.Valid {
				parts[i] = v.String
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// schemaOf describes the schema of the database at path as its catalog
// reports it, one sorted line per fact: every column (declared type, NOT
// NULL, default, primary key position), foreign key, and index and trigger
// (their SQL with whitespace folded). Column order is not a fact: a column
// added by an upgrade comes last.
func schemaOf(t testing.TB, path string) []string {
	t.Helper()
	db := rawDB(t, path)
	var out []string
	for _, tb := range strs(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'sqlite_sequence'`) {
		for _, c := range strs(t, db, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, tb) {
			out = append(out, "column|"+tb+"|"+c)
		}
		for _, fk := range strs(t, db, `SELECT "from", "table", "to", on_delete FROM pragma_foreign_key_list(?)`, tb) {
			out = append(out, "fk|"+tb+"|"+fk)
		}
	}
	for _, o := range strs(t, db, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master WHERE type IN ('index', 'trigger')`) {
		out = append(out, strings.Join(strings.Fields(o), " "))
	}
	slices.Sort(out)
	return out
}

// columnsOf returns the columns of every table of the database at path:
// table → names.
func columnsOf(t testing.TB, path string) map[string][]string {
	t.Helper()
	db := rawDB(t, path)
	cols := map[string][]string{}
	for _, tb := range strs(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'sqlite_sequence'`) {
		cols[tb] = strs(t, db, `SELECT name FROM pragma_table_info(?) ORDER BY name`, tb)
	}
	return cols
}

// scratch is the schema tests' access to scratch database files.
var scratch = drivertest.Scratch{
	NewDB:           newDB,
	Query:           func(t testing.TB, path, q string) []string { return strs(t, rawDB(t, path), q) },
	Schema:          schemaOf,
	Columns:         columnsOf,
	TimeLayout:      "2006-01-02T15:04:05.000000000Z",
	True:            "1",
	Brackets:        "[]",
	VersionsTrigger: "cks_object_versions_no_update",
	Retired: []string{"fk|cks_task_events|task_id|", "index|idx_outbox_tasks_lease|",
		"index|idx_outbox_tasks_state_changed|", "index|idx_outbox_tasks_claim|"},
	Added: []string{"index|idx_outbox_tasks_lease_expires|", "index|idx_outbox_tasks_claim_type|", "index|idx_task_events_at|",
		"index|idx_outbox_tasks_state|"},
}

// TestSchema runs the schema checks (drivertest.Scratch) on this dialect.
func TestSchema(t *testing.T) { scratch.Run(t) }

// TestEventsRebuiltWithoutForeignKey: the upgrade rebuilds the first
// backend's events table without its foreign key (SQLite cannot drop one);
// the rebuilt table numbers new events after the old ones and is still
// append-only.
func TestEventsRebuiltWithoutForeignKey(t *testing.T) {
	db := scratch.From(t, "first_backend_schema.sql", "first_backend_rows.sql")
	last := strs(t, rawDB(t, db.Name), `SELECT max(event_id) FROM cks_task_events`)
	ex := db.Open(t).Executor()
	if err := ex.TaskEventInsertMany(t.Context(), []driver.TaskEventRow{{TaskID: 1, At: drivertest.T0, ToState: "OPEN"}}); err != nil {
		t.Fatal(err)
	}
	if got := strs(t, rawDB(t, db.Name), `SELECT max(event_id) > CAST(? AS INTEGER) FROM cks_task_events`, last[0]); !slices.Equal(got, []string{"1"}) {
		t.Errorf("the new event's id is not after the old ones' (up to %s)", last[0])
	}
	if err := rawExec(t, db.Name, `UPDATE cks_task_events SET reason = 'edited'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("update of an event after the rebuild: %v, want the append-only refusal", err)
	}
}
