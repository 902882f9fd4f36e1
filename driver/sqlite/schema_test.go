package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/drivertest"
	"github.com/cks-dev/cks/store"
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
			out = append(out, "column "+tb+"|"+c)
		}
		for _, fk := range strs(t, db, `SELECT "from", "table", "to", on_delete FROM pragma_foreign_key_list(?)`, tb) {
			out = append(out, "fk "+tb+"|"+fk)
		}
	}
	for _, o := range strs(t, db, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master WHERE type IN ('index', 'trigger')`) {
		out = append(out, strings.Join(strings.Fields(o), " "))
	}
	slices.Sort(out)
	return out
}

// rowsOf dumps every row of every table of the database at path (the
// columns it has now but those named in skip as "table.column"), by table
// and rowid.
func rowsOf(t testing.TB, path string, skip ...string) []string {
	t.Helper()
	db := rawDB(t, path)
	var out []string
	for _, tb := range strs(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'sqlite_sequence' ORDER BY name`) {
		cols := slices.DeleteFunc(strs(t, db, `SELECT name FROM pragma_table_info(?) ORDER BY name`, tb),
			func(c string) bool { return slices.Contains(skip, tb+"."+c) })
		for _, r := range strs(t, db, `SELECT `+strings.Join(cols, ", ")+` FROM `+tb+` ORDER BY rowid`) {
			out = append(out, tb+": "+r)
		}
	}
	return out
}

// diff returns the lines of a not in b and of b not in a.
func diff(a, b []string) (onlyA, onlyB []string) {
	for _, l := range a {
		if !slices.Contains(b, l) {
			onlyA = append(onlyA, l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			onlyB = append(onlyB, l)
		}
	}
	return onlyA, onlyB
}

// freshSchema is the schema the driver creates in an empty file.
func freshSchema(t testing.TB) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fresh.db")
	open(t, path).Close()
	return schemaOf(t, path)
}

// firstBackendDB recreates, in a new file, a database of the first SQLite
// backend (store/sqlite) from testdata: its empty schema, and with rows the
// rows it wrote (drivertest.CheckLegacy says which). It returns its path.
func firstBackendDB(t *testing.T, rows bool) string {
	t.Helper()
	files := []string{"first_backend_schema.sql"}
	if rows {
		files = append(files, "first_backend_rows.sql")
	}
	path := filepath.Join(t.TempDir(), "old.db")
	for _, f := range files {
		q, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := rawExec(t, path, string(q)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return path
}

// TestRendersTheFirstBackendsSchema: an empty database made by store/sqlite
// (testdata/first_backend_schema.sql) has exactly the schema the driver
// creates, but for what was added since: the lease binding of principals,
// and the per-object version numbers (their column and index, and the
// append-only trigger that freezes them too); and for what was retired
// since (issue 14): the events' foreign key and the index of parents.
func TestRendersTheFirstBackendsSchema(t *testing.T) {
	path := firstBackendDB(t, false)
	old, fresh := diff(schemaOf(t, path), freshSchema(t))
	trigger := "trigger|cks_object_versions_no_update|"
	old = drivertest.WithoutPrefixes(old, trigger, "fk cks_task_events|task_id|", "index|idx_outbox_tasks_parent|")
	unexpected := drivertest.WithoutPrefixes(fresh, "column cks_principals|lease_", "column cks_object_versions|version|",
		"index|idx_object_versions_version|", trigger)
	if len(old) > 0 || len(unexpected) > 0 {
		t.Fatalf("schema of store/sqlite differs:\nonly the old one has:\n%s\nonly the driver's has:\n%s",
			strings.Join(old, "\n"), strings.Join(unexpected, "\n"))
	}
}

// TestOpensTheFirstBackendsDatabase: a database store/sqlite created and
// filled (testdata/first_backend_*.sql) opens with the driver, which reads
// what was written; then its schema equals a fresh one's and no row changed
// (but for the versions, which it numbered per object).
func TestOpensTheFirstBackendsDatabase(t *testing.T) {
	path := firstBackendDB(t, true)
	// The version numbers: their own test below.
	renumbered := []string{"cks_objects.head_version", "cks_object_versions.version"}
	before := rowsOf(t, path, renumbered...)
	lastEvent := strs(t, rawDB(t, path), `SELECT max(event_id) FROM cks_task_events`)
	d := open(t, path)
	drivertest.CheckLegacy(t, d)
	d.Close()
	db := rawDB(t, path)
	if got := strs(t, db, `SELECT version_id, object_id, version, parents FROM cks_object_versions ORDER BY version_id`); !slices.Equal(got,
		[]string{"1|1|1|[]", "2|2|1|[]", "3|1|2|[1]"}) {
		t.Errorf("versions numbered %q, want 1 and 2 of object 1 and 1 of object 2", got)
	}
	if got := strs(t, db, `SELECT object_id, head_version FROM cks_objects ORDER BY object_id`); !slices.Equal(got, []string{"1|2", "2|1"}) {
		t.Errorf("objects' head versions %q, want 2 and 1", got)
	}
	if old, fresh := diff(schemaOf(t, path), freshSchema(t)); len(old)+len(fresh) > 0 {
		t.Fatalf("schema after opening differs from a fresh one:\nonly the opened one has:\n%s\nonly the fresh one has:\n%s",
			strings.Join(old, "\n"), strings.Join(fresh, "\n"))
	}
	after := rowsOf(t, path, renumbered...)
	if len(after) != len(before) {
		t.Fatalf("%d rows before, %d after", len(before), len(after))
	}
	for i := range before {
		if after[i] != before[i] {
			t.Errorf("row changed:\n before: %s\n  after: %s", before[i], after[i])
		}
	}
	// The events' table, rebuilt without its foreign key, numbers new
	// events after the old ones and is still append-only.
	ex := open(t, path).Executor()
	if err := ex.TaskEventInsertMany(t.Context(), []driver.TaskEventRow{{TaskID: 1, At: drivertest.T0, To: "OPEN"}}); err != nil {
		t.Fatal(err)
	}
	got := strs(t, db, `SELECT max(event_id) > CAST(? AS INTEGER) FROM cks_task_events`, lastEvent[0])
	if !slices.Equal(got, []string{"1"}) {
		t.Errorf("the new event's id is not after the old ones' (up to %s)", lastEvent[0])
	}
	if err := rawExec(t, path, `UPDATE cks_task_events SET reason = 'edited'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("update of an event after the rebuild: %v, want the append-only refusal", err)
	}
}

// upgradeFrom creates a database with the statements of testdata/file,
// opens it with the driver (twice: the second open must change nothing),
// checks that its schema equals a fresh one's, and returns its path.
func upgradeFrom(t *testing.T, file string) string {
	t.Helper()
	q, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := rawExec(t, path, string(q)); err != nil {
		t.Fatalf("old shape: %v", err)
	}
	return upgradeIn(t, path)
}

// upgradeIn is upgradeFrom of the database at path, already made.
func upgradeIn(t *testing.T, path string) string {
	t.Helper()
	open(t, path).Close()
	upgraded := rowsOf(t, path)
	open(t, path).Close()
	if again := rowsOf(t, path); !slices.Equal(again, upgraded) {
		t.Fatalf("the second open changed rows:\n%s\nthen\n%s", strings.Join(upgraded, "\n"), strings.Join(again, "\n"))
	}
	if old, fresh := diff(schemaOf(t, path), freshSchema(t)); len(old)+len(fresh) > 0 {
		t.Fatalf("upgraded schema differs from a fresh one:\nonly the upgraded one has:\n%s\nonly the fresh one has:\n%s",
			strings.Join(old, "\n"), strings.Join(fresh, "\n"))
	}
	return path
}

// TestUpgradesOlderLiveness: cks_agent_liveness before current_task_* and
// desired_state; the old rows read as idle, with no stop requested.
func TestUpgradesOlderLiveness(t *testing.T) {
	d := open(t, upgradeFrom(t, "old_liveness.sql"))
	all, err := d.Executor().LivenessList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", all)
	want := "[{InstanceID:old-2 ProcessKind:pipeline Hostname:h PID:11 LivenessIntervalS:15 StartedAt:2026-11-30 12:01:00 +0000 UTC " +
		"LastHeartbeatAt:2026-11-30 12:01:00 +0000 UTC CurrentTaskID:0 CurrentTaskType: DesiredState:} " +
		"{InstanceID:old-1 ProcessKind:critic Hostname:h PID:10 LivenessIntervalS:30 StartedAt:2026-11-30 12:00:00 +0000 UTC " +
		"LastHeartbeatAt:2026-11-30 12:00:30 +0000 UTC CurrentTaskID:0 CurrentTaskType: DesiredState:}]"
	if got != want {
		t.Fatalf("upgraded rows\n got: %s\nwant: %s", got, want)
	}
}

// TestUpgradesOlderTasks: cks_outbox_tasks lacking most of today's columns;
// the old row gets the defaults and state_changed_at = updated_at.
func TestUpgradesOlderTasks(t *testing.T) {
	path := upgradeFrom(t, "old_tasks.sql")
	got := strs(t, rawDB(t, path), `SELECT task_id, type, title, payload, state, priority, max_attempts, revision,
		lease_token_hash, metadata, created_at, state_changed_at FROM cks_outbox_tasks`)
	want := []string{`1|critique||{"object_id": 7}|OPEN|2|3|1||{}|2026-11-30T12:00:00.000000000Z|2026-11-30T12:00:00.000000000Z`}
	if !slices.Equal(got, want) {
		t.Fatalf("upgraded task %q, want %q", got, want)
	}
}

// TestUpgradeBackfillsVersions: knowledge tables from before versions; every
// object gets one head version 1 equal to its content, by its creator, at
// its last update, and points at it.
func TestUpgradeBackfillsVersions(t *testing.T) {
	path := upgradeFrom(t, "old_knowledge.sql")
	db := rawDB(t, path)
	got := strs(t, db, `SELECT version_id, object_id, version, parents, content, content_hash, author, created_at, is_head
		FROM cks_object_versions ORDER BY version_id`)
	want := []string{
		`1|1|1|[]|{"n":1,"q":"why?"}|h1|cli|2026-11-30T12:00:05.000000000Z|1`,
		`2|2|1|[]|{}|h2|researcher|2026-11-30T12:01:00.500000000Z|1`,
		`3|3|1|[]|{"n":1,"q":"why?"}|h1||2026-11-30T12:02:00.000000000Z|1`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("backfilled versions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if objs := strs(t, db, `SELECT object_id, head_version, heads FROM cks_objects ORDER BY object_id`); !slices.Equal(objs, []string{"1|1|1", "2|1|1", "3|1|1"}) {
		t.Fatalf("objects after the backfill: %q", objs)
	}
	if edges := strs(t, db, `SELECT src, dst FROM cks_edges`); !slices.Equal(edges, []string{"2|1"}) {
		t.Fatalf("edges after the upgrade: %q", edges)
	}
}

// TestUpgradeHashesPlainLeaseTokens: a database from before lease tokens
// were stored hashed (issue 12) keeps its live lease and pending abort
// (their tokens now stored as the hash a fenced call compares), loses the
// plain column and its index, and binds the claim credentials of that time
// to the lease their worker holds (or to none).
func TestUpgradeHashesPlainLeaseTokens(t *testing.T) {
	path := upgradeFrom(t, "old_leases.sql")
	db := rawDB(t, path)
	h0, h1 := store.HashLeaseToken("plain-0"), store.HashLeaseToken("plain-1")
	for _, c := range []struct {
		q    string
		want []string
	}{
		{`SELECT task_id, lease_token_hash FROM cks_outbox_tasks ORDER BY task_id`, []string{"1|" + h1, "2|"}},
		{`SELECT abort_id, lease_token_hash FROM cks_task_aborts`, []string{"1|" + h0}},
		{`SELECT principal_id, coalesce(task_id, 'none'), coalesce(lease_token_hash, 'none') FROM cks_principals ORDER BY principal_id`,
			[]string{"p-admin|none|none", "p-claim|1|" + h1, "p-gone|2|", "p-op|none|none"}},
	} {
		if got := strs(t, db, c.q); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.q, got, c.want)
		}
	}
	d := open(t, path)
	for tok, live := range map[string]bool{"h-claim": true, "h-gone": false, "h-op": true, "h-admin": true} {
		_, err := d.Executor().PrincipalByTokenHash(context.Background(), tok)
		if live != (err == nil) {
			t.Errorf("principal of %s: %v, want it authenticating: %v", tok, err, live)
		}
	}
}

// TestUpgradeNumbersVersionsPerObject: versions numbered by one sequence
// across objects are numbered 1, 2, 3 … within each object in id order;
// parents and head_version follow, nothing else of the rows changes, and the
// append-only trigger (dropped for the backfill) freezes the number too.
func TestUpgradeNumbersVersionsPerObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	q, err := os.ReadFile(filepath.Join("testdata", "old_versions.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rawExec(t, path, string(q)); err != nil {
		t.Fatalf("old shape: %v", err)
	}
	db := rawDB(t, path)
	before := strs(t, db, `SELECT version_id, object_id, content, content_hash, author, created_at, is_head FROM cks_object_versions ORDER BY version_id`)
	upgradeIn(t, path)
	got := strs(t, db, `SELECT version_id, object_id, version, parents FROM cks_object_versions ORDER BY version_id`)
	want := []string{"1|1|1|[]", "2|2|1|[]", "3|1|2|[1]", "4|2|2|[1]", "5|1|3|[1]", "6|1|4|[2,3]", "7|2|3|[2]",
		"8|3|1|[]", "9|3|2|[1]", "10|3|3|[1]"}
	if !slices.Equal(got, want) {
		t.Fatalf("numbered versions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if after := strs(t, db, `SELECT version_id, object_id, content, content_hash, author, created_at, is_head FROM cks_object_versions ORDER BY version_id`); !slices.Equal(after, before) {
		t.Fatalf("the upgrade changed more than numbers:\n%s\nwas\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if objs := strs(t, db, `SELECT object_id, head_version, heads FROM cks_objects ORDER BY object_id`); !slices.Equal(objs, []string{"1|4|1", "2|3|1", "3|3|2"}) {
		t.Fatalf("objects after the upgrade: %q", objs)
	}
	if err := rawExec(t, path, `UPDATE cks_object_versions SET version = 7 WHERE version_id = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("changing a number after the upgrade: err = %v, want the append-only refusal", err)
	}
	d := open(t, path)
	heads, err := d.Executor().ForkList(context.Background(), driver.ForkListParams{Limit: 10})
	if err != nil || fmt.Sprint(heads) != "[{3 [2 3]}]" {
		t.Fatalf("forks after the upgrade: %v, %v", heads, err)
	}
}
