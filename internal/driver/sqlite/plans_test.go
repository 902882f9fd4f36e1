package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
)

// plan is SQLite's query plan of q with args, one line per step.
func plan(t testing.TB, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestQueriesUseIndexes: the claim of tasks finds its candidates in claim
// order through a claim index (no sort, no scan) and updates them by
// primary key; the claim of objects reads idx_objects_claim in claim order,
// the stale-claim reaper idx_objects_claimed_at, an object's edges
// idx_edges_src and idx_edges_dst, the fork listing idx_objects_forked and
// its heads idx_object_versions_head, an object's heads its versions by
// index — before and after ANALYZE. (The first
// SQLite backend's tests checked its statements so; these are the driver's
// queries, read from its query files.)
func TestQueriesUseIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	ex := open(t, path).Executor()
	seedTasks(t, ex, 200, func(i int) (string, int) { return []string{"a", "b"}[i%2], i % 7 })
	seedObjects(t, ex)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := drivertest.Queries(t)
	now := "2026-01-01T00:00:00.000000000Z"
	excluded := sql.Named("excluded", `["NEEDS_INPUT","STOPPED"]`)
	guard, saturated := sql.Named("guard", true), sql.Named("saturated", `["x"]`)
	cases := []struct {
		name, query string
		args        []any
		want        []string
		bad         []string
	}{
		{"claim of any type", "TaskClaimable", []any{sql.Named("state", "OPEN"), excluded, sql.Named("any_type", true),
			sql.Named("types", `[]`), sql.Named("now", now), guard, saturated, sql.Named("limit", 3)},
			[]string{"idx_outbox_tasks_claim"}, []string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
		{"claim of two types", "TaskClaimable", []any{sql.Named("state", "OPEN"), excluded, sql.Named("any_type", false),
			sql.Named("types", `["a","b"]`), sql.Named("now", now), guard, saturated, sql.Named("limit", 3)},
			[]string{"idx_outbox_tasks_claim"}, []string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
		{"claim of one type", "TaskClaimableOfType", []any{sql.Named("state", "OPEN"), excluded, sql.Named("type", "a"),
			sql.Named("now", now), guard, saturated, sql.Named("limit", 3)},
			[]string{"idx_outbox_tasks_claim_type"}, []string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
		{"lease reaper", "TaskLeaseExpired", []any{sql.Named("states", `["CLAIMED","RUNNING","REVIEWING"]`), excluded,
			sql.Named("expired_at", now), sql.Named("renewed_before", now), sql.Named("limit", 500)},
			[]string{"idx_outbox_tasks_lease_expires"}, []string{"SCAN cks_outbox_tasks"}},
		{"claim's update", "TaskUpdate", nil, []string{"INTEGER PRIMARY KEY"}, []string{"SCAN", "idx_outbox_tasks"}},
		{"a move's update", "TaskMove", nil, []string{"INTEGER PRIMARY KEY"}, []string{"SCAN", "idx_outbox_tasks"}},
		{"claim of objects", "ObjectClaimable", []any{sql.Named("status", "awaiting_critique"), sql.Named("limit", 10)},
			[]string{"idx_objects_claim"}, []string{"SCAN cks_objects", "TEMP B-TREE"}},
		{"stale claims", "ObjectClaimedBefore", []any{sql.Named("before", now)},
			[]string{"idx_objects_claimed_at"}, []string{"SCAN cks_objects"}},
		{"edges of an object", "EdgeListOf", []any{sql.Named("object_id", 1)},
			[]string{"idx_edges_src", "idx_edges_dst"}, nil},
		// get_object's reads of the objects linked to one: their edges
		// and their logs from the indexes, never a scan.
		{"edges of objects", "EdgeListOfMany", []any{sql.Named("object_ids", `[1,2,3]`)},
			[]string{"idx_edges_src", "idx_edges_dst"}, []string{"SCAN cks_edges"}},
		{"logs of objects", "TransitionListMany", []any{sql.Named("object_ids", `[1,2,3]`)},
			[]string{"idx_transition_log_object"}, []string{"SCAN cks_transition_log"}},
		{"fork listing", "ForkList", []any{sql.Named("after", 0), sql.Named("limit", 100)},
			[]string{"idx_objects_forked", "idx_object_versions_head"}, []string{"SCAN cks_objects", "SCAN v", "SCAN cks_object_versions"}},
		// The edges at both ends of the tasks a completion ends: the
		// primary key for task_id, the dependency index for depends_on,
		// never a scan of the edges.
		{"edges at both ends of a task", "TaskDepListAdjacentOf", []any{sql.Named("task_id", 1)},
			[]string{"idx_task_deps_depends_on"}, []string{"SCAN cks_task_deps"}},
		{"edges at both ends of tasks", "TaskDepListAdjacent", []any{sql.Named("ids", `[1,2,3]`)},
			[]string{"idx_task_deps_depends_on"}, []string{"SCAN cks_task_deps"}},
		// The heads are read in version order from the object's versions
		// (idx_object_versions_version), never from a scan.
		{"heads of an object", "VersionListHeads", []any{sql.Named("object_id", 1)},
			[]string{"SEARCH cks_object_versions USING INDEX"}, []string{"SCAN", "TEMP B-TREE"}},
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := db.Exec(`ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cases {
			text, ok := q[c.query]
			if !ok {
				t.Fatalf("no query %s in internal/dbsqlc", c.query)
			}
			args := c.args
			if args == nil { // every named parameter, as NULL: the plan does not depend on them
				args = namedNulls(text)
			}
			p := plan(t, db, text, args...)
			for _, w := range c.want {
				if !strings.Contains(p, w) {
					t.Errorf("%s (%s, analyzed %v) does not use %s:\n%s", c.name, c.query, analyzed, w, p)
				}
			}
			for _, b := range c.bad {
				if strings.Contains(p, b) {
					t.Errorf("%s (%s, analyzed %v): the plan has %q:\n%s", c.name, c.query, analyzed, b, p)
				}
			}
		}
	}
}

// TestClaimsPlanWithoutTheirBinding: the claims find the claim indexes
// through the literal 'OPEN' they name, whatever their @state is bound to —
// the plan does not depend on a binding, so SQLite has no reason to prepare
// a claim again at each execution (it did while the claims named the state
// only as a parameter, a fifth of the agent path's CPU). Bound to another
// state, a parameter alone could not match the indexes' WHERE, and the
// plan would scan the table or sort.
func TestClaimsPlanWithoutTheirBinding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	seedTasks(t, open(t, path).Executor(), 50, func(i int) (string, int) { return "a", i % 3 })
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := drivertest.Queries(t)
	excluded := sql.Named("excluded", `["NEEDS_INPUT","STOPPED"]`)
	guard, saturated := sql.Named("guard", true), sql.Named("saturated", `["x"]`)
	now := sql.Named("now", "2026-01-01T00:00:00.000000000Z")
	cases := []struct {
		query, index string
		args         []any
	}{
		{"TaskClaimable", "idx_outbox_tasks_claim_open", []any{excluded, sql.Named("any_type", true), sql.Named("types", `[]`), now, guard, saturated, sql.Named("limit", 3)}},
		{"TaskClaimableOfType", "idx_outbox_tasks_claim_type", []any{excluded, sql.Named("type", "a"), now, guard, saturated, sql.Named("limit", 3)}},
	}
	for _, c := range cases {
		var open string
		for _, state := range []any{"OPEN", "CLAIMED", nil} {
			p := plan(t, db, q[c.query], append([]any{sql.Named("state", state)}, c.args...)...)
			if !strings.Contains(p, c.index) || strings.Contains(p, "SCAN cks_outbox_tasks") || strings.Contains(p, "TEMP B-TREE") {
				t.Errorf("%s with state %v does not read %s in claim order:\n%s", c.query, state, c.index, p)
			}
			if state == "OPEN" {
				open = p
			} else if p != open {
				t.Errorf("%s plans differently with state %v:\n%s\nthan with OPEN:\n%s", c.query, state, p, open)
			}
		}
	}
}

// seedTasks inserts n OPEN tasks through the primitives, as enqueues
// write them: task i of the type and priority of(i) gives.
func seedTasks(t testing.TB, ex driver.Executor, n int, of func(i int) (typ string, priority int)) {
	t.Helper()
	rows := make([]driver.TaskRow, n)
	for i := range rows {
		typ, prio := of(i)
		rows[i] = driver.TaskRow{Type: typ, State: "OPEN", Priority: prio, Revision: 1, Payload: []byte(`{}`),
			Metadata: []byte(`{}`), CreatedAt: drivertest.T0, UpdatedAt: drivertest.T0, StateChangedAt: drivertest.T0}
	}
	if _, err := ex.TaskInsertMany(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
}

// seedObjects writes 60 questions through the primitives, as the knowledge
// service would: their statuses awaiting_research, awaiting_critique and
// none in turn; every fifth forked (two versions written from its first,
// both heads); five of those awaiting critique claimed.
func seedObjects(t testing.TB, ex driver.Executor) {
	t.Helper()
	ctx := t.Context()
	rows := make([]driver.ObjectRow, 60)
	for i := range rows {
		rows[i] = driver.ObjectRow{Kind: "question", CurrentStatus: []string{"awaiting_research", "awaiting_critique", ""}[i%3],
			Content: []byte(`{"n":0}`), ContentHash: "h0", HeadVersion: 1, Heads: 1, CreatedAt: drivertest.T0,
			UpdatedAt: drivertest.T0}
		if i%5 == 0 {
			rows[i].Content, rows[i].ContentHash, rows[i].HeadVersion, rows[i].Heads = []byte(`{"n":1}`), "h1", 3, 2
		}
	}
	ids, err := ex.ObjectInsertMany(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	var versions []driver.VersionRow
	var claimed []driver.ObjectRow
	for i, id := range ids {
		rows[i].ID = id
		v := driver.VersionRow{ObjectID: id, Version: 1, Content: []byte(`{"n":0}`), ContentHash: "h0", Author: "maker",
			CreatedAt: drivertest.T0, IsHead: i%5 != 0}
		versions = append(versions, v)
		if i%5 == 0 {
			for n := int64(2); n <= 3; n++ {
				versions = append(versions, driver.VersionRow{ObjectID: id, Version: n, Parents: []int64{1},
					Content: []byte(`{"n":1}`), ContentHash: "h1", Author: "editor", CreatedAt: drivertest.T0, IsHead: true})
			}
		}
		if rows[i].CurrentStatus == "awaiting_critique" && len(claimed) < 5 {
			c := rows[i]
			c.ClaimedBy, c.ClaimToken, c.ClaimedAt = "critic-1", fmt.Sprintf("claim-%d", i), drivertest.T0
			claimed = append(claimed, c)
		}
	}
	if _, err := ex.VersionInsertMany(ctx, versions); err != nil {
		t.Fatal(err)
	}
	if _, err := ex.ObjectUpdateMany(ctx, claimed); err != nil {
		t.Fatal(err)
	}
}

// namedNulls binds every @name parameter of q to NULL.
func namedNulls(q string) []any {
	seen := map[string]bool{}
	var args []any
	for _, f := range strings.FieldsFunc(q, func(r rune) bool {
		return !(r == '@' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if name, ok := strings.CutPrefix(f, "@"); ok && !seen[name] {
			seen[name] = true
			args = append(args, sql.Named(name, nil))
		}
	}
	return args
}

// TestBoardQueriesUseIndexes: the board's reads of a table of tasks most
// of which are COMPLETED come from indexes, before and after ANALYZE: the
// counts by state from idx_outbox_tasks_state and a claim index alone
// (covering: no row of the table is read), the listing and the count of
// one state but OPEN (the STOPPED tasks, the NEEDS_INPUT ones, the
// stale-stop count) from that state's entries, in id order either way; the
// pages by updated_at from a range of its index.
func TestBoardQueriesUseIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	seedTasks(t, open(t, path).Executor(), 2000, func(i int) (string, int) { return "a", 0 })
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE cks_outbox_tasks SET state = CASE WHEN task_id % 50 = 1 THEN 'STOPPED'
    WHEN task_id % 50 = 2 THEN 'NEEDS_INPUT' WHEN task_id > 1900 THEN 'OPEN' ELSE 'COMPLETED' END`); err != nil {
		t.Fatal(err)
	}
	q := drivertest.Queries(t)
	filters := []any{sql.Named("types", `[]`), sql.Named("state_changed_before", ""), sql.Named("created_by", ""),
		sql.Named("match", ""), sql.Named("unconfirmed_abort", false)}
	args := func(extra ...any) []any { return append(extra, filters...) }
	cases := []struct {
		name, query string
		args        []any
		want, bad   []string
	}{
		{"count by state", "TaskCountByStateAll", nil,
			[]string{"SCAN cks_outbox_tasks USING COVERING INDEX idx_outbox_tasks_state",
				"USING COVERING INDEX idx_outbox_tasks_claim"}, []string{"SCAN cks_outbox_tasks\n", "TEMP B-TREE"}},
		{"the STOPPED tasks", "TaskListInState", args(sql.Named("state", "STOPPED"), sql.Named("after", 0), sql.Named("limit", 201)),
			[]string{"SEARCH cks_outbox_tasks USING INDEX idx_outbox_tasks_state (state=? AND rowid>?)"},
			[]string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
		{"the NEEDS_INPUT tasks, newest first", "TaskListInStateDesc",
			args(sql.Named("state", "NEEDS_INPUT"), sql.Named("after", 0), sql.Named("limit", 201)),
			[]string{"SEARCH cks_outbox_tasks USING INDEX idx_outbox_tasks_state (state=?"},
			[]string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
		{"stale-stop count", "TaskCountInState", args(sql.Named("state", "STOPPED")),
			[]string{"SEARCH cks_outbox_tasks USING INDEX idx_outbox_tasks_state (state=?)"}, []string{"SCAN cks_outbox_tasks"}},
		// The keyed claim's count of the keys held: the partial index of
		// the running tasks that have keys, not every task.
		{"keys held", "TaskKeysHeld", nil, []string{"idx_outbox_tasks_keys_held"}, []string{"SCAN cks_outbox_tasks\n"}},
		// When the next delayed task becomes due (the waiting room): the
		// delayed OPEN tasks' index, not every OPEN task.
		{"next due", "TaskNextDue", []any{sql.Named("now", "2026-01-01T00:00:00.000000000Z")},
			[]string{"INDEX idx_outbox_tasks_due (run_after>?)"},
			[]string{"SCAN cks_outbox_tasks", "TEMP B-TREE", "idx_outbox_tasks_claim"}},
		// The "recently changed" order, either way, first page and a later
		// one: a range of idx_outbox_tasks_updated, no sort of the table
		// (issue 38.9: 1.8 s over 50,000 tasks).
		{"by updated, newest first", "TaskListUpdatedDesc", args(sql.Named("states", `[]`), sql.Named("after", 0),
			sql.Named("after_updated", nil), sql.Named("limit", 101)),
			[]string{"SEARCH cks_outbox_tasks USING INDEX idx_outbox_tasks_updated (updated_at<?)"},
			[]string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
		{"by updated, newest first, a later page", "TaskListUpdatedDesc", args(sql.Named("states", `[]`), sql.Named("after", 1500),
			sql.Named("after_updated", "2026-11-30T12:00:00.000000000Z"), sql.Named("limit", 101)),
			[]string{"SEARCH cks_outbox_tasks USING INDEX idx_outbox_tasks_updated (updated_at<?)"},
			[]string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
		{"by updated", "TaskListUpdated", args(sql.Named("states", `[]`), sql.Named("after", 0),
			sql.Named("after_updated", nil), sql.Named("limit", 101)),
			[]string{"SEARCH cks_outbox_tasks USING INDEX idx_outbox_tasks_updated (updated_at>?)"},
			[]string{"SCAN cks_outbox_tasks", "TEMP B-TREE"}},
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := db.Exec(`ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cases {
			text, ok := q[c.query]
			if !ok {
				t.Fatalf("no query %s in internal/dbsqlc", c.query)
			}
			p := plan(t, db, text, c.args...) + "\n"
			for _, w := range c.want {
				if !strings.Contains(p, w) {
					t.Errorf("%s (%s, analyzed %v) does not use %s:\n%s", c.name, c.query, analyzed, w, p)
				}
			}
			for _, b := range c.bad {
				if strings.Contains(p, b) {
					t.Errorf("%s (%s, analyzed %v): the plan has %q:\n%s", c.name, c.query, analyzed, b, p)
				}
			}
		}
	}
}
