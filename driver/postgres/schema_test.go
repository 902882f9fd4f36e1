package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/driver/drivertest"
	"github.com/cks-dev/cks/driver/postgres"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
	"github.com/jackc/pgx/v5"
)

// conn opens a connection of its own to url, closed when t ends.
func conn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(testCtx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// texts reads a query of one text column.
func texts(t testing.TB, c *pgx.Conn, q string, args ...any) []string {
	t.Helper()
	rows, err := c.Query(testCtx(t), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// schemaName is the schema url's search_path names.
func schemaName(t testing.TB, dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}

// schemaOf describes the current schema of url as the catalog reports it,
// one sorted line per fact: every column (type, nullability, default,
// identity), constraint, index, trigger and function, with the schema's
// own name taken out. Column order is not a fact: a column added by an
// upgrade comes last.
func schemaOf(t testing.TB, url string) []string {
	t.Helper()
	c := conn(t, url)
	out := texts(t, c, `SELECT concat_ws('|', 'column', table_name, column_name, data_type, udt_name, is_nullable,
		coalesce(column_default, 'NULL'), is_identity, coalesce(identity_generation, ''))
	FROM information_schema.columns WHERE table_schema = current_schema()`)
	out = append(out, texts(t, c, `SELECT concat_ws('|', 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid))
	FROM pg_constraint WHERE connamespace = current_schema()::regnamespace`)...)
	out = append(out, texts(t, c, `SELECT concat_ws('|', 'index', indexname, indexdef) FROM pg_indexes WHERE schemaname = current_schema()`)...)
	out = append(out, texts(t, c, `SELECT concat_ws('|', 'trigger', t.tgname, pg_get_triggerdef(t.oid)) FROM pg_trigger t
	JOIN pg_class r ON r.oid = t.tgrelid WHERE r.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal`)...)
	out = append(out, texts(t, c, `SELECT concat_ws('|', 'function', p.proname, pg_get_functiondef(p.oid)) FROM pg_proc p
	WHERE p.pronamespace = current_schema()::regnamespace`)...)
	schema := schemaName(t, url)
	for i := range out {
		out[i] = strings.ReplaceAll(out[i], schema+".", "SCHEMA.")
	}
	slices.Sort(out)
	return out
}

// columnsOf returns the columns of every table of url: table → names.
func columnsOf(t testing.TB, url string) map[string][]string {
	t.Helper()
	cols := map[string][]string{}
	for _, l := range texts(t, conn(t, url), `SELECT table_name || '.' || column_name FROM information_schema.columns
	WHERE table_schema = current_schema() ORDER BY table_name, column_name`) {
		tb, col, _ := strings.Cut(l, ".")
		cols[tb] = append(cols[tb], col)
	}
	return cols
}

// rowsOf dumps every row of the tables and columns in cols, sorted.
func rowsOf(t testing.TB, url string, cols map[string][]string) []string {
	t.Helper()
	c := conn(t, url)
	var out []string
	for tb, names := range cols {
		vals := make([]string, len(names))
		for i, n := range names {
			vals[i] = "coalesce(" + n + "::text, 'NULL')"
		}
		for _, r := range texts(t, c, `SELECT concat_ws('|', `+strings.Join(vals, ", ")+`) FROM `+tb) {
			out = append(out, tb+": "+r)
		}
	}
	slices.Sort(out)
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

func sameSchema(t testing.TB, what string, got, fresh []string) {
	t.Helper()
	if a, b := diff(got, fresh); len(a)+len(b) > 0 {
		t.Fatalf("%s differs from a fresh schema:\nonly it has:\n%s\nonly the fresh one has:\n%s",
			what, strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// freshSchema is the schema the driver creates in an empty schema.
func freshSchema(t testing.TB) []string {
	t.Helper()
	url := backendtest.PostgresURL(t)
	open(t, url).Close()
	return schemaOf(t, url)
}

// firstBackendSchema recreates, in a fresh schema, a schema of the first
// Postgres backend (store/postgres) from testdata: its empty schema, and
// with rows the rows it wrote (drivertest.CheckLegacy says which). It
// returns the schema's URL.
func firstBackendSchema(t *testing.T, rows bool) string {
	t.Helper()
	files := []string{"first_backend_schema.sql"}
	if rows {
		files = append(files, "first_backend_rows.sql")
	}
	url := backendtest.PostgresURL(t)
	for _, f := range files {
		q, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := rawExec(t, url, string(q)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return url
}

// TestRendersTheFirstBackendsSchema: an empty schema made by store/postgres
// (testdata/first_backend_schema.sql) has exactly the schema the driver
// creates, but for what was added since: the lease binding of principals,
// and the per-object version numbers (their column and index, and the
// append-only trigger that freezes them too); and for what was retired
// since (issue 14): the events' foreign key, the index of parents, and the
// state indexes of the reaper and the stale-stop report, replaced by
// partial ones.
func TestRendersTheFirstBackendsSchema(t *testing.T) {
	url := firstBackendSchema(t, false)
	old, fresh := diff(schemaOf(t, url), freshSchema(t))
	trigger := "trigger|cks_object_versions_no_change|"
	old = drivertest.WithoutPrefixes(old, trigger, "constraint|cks_task_events|cks_task_events_task_id_fkey|",
		"index|idx_outbox_tasks_parent|", "index|idx_outbox_tasks_lease|", "index|idx_outbox_tasks_state_changed|")
	unexpected := drivertest.WithoutPrefixes(fresh, "column|cks_principals|lease_", "column|cks_object_versions|version|",
		"index|idx_object_versions_version|", trigger, "index|idx_outbox_tasks_leased|", "index|idx_outbox_tasks_stopped|")
	if len(old) > 0 || len(unexpected) > 0 {
		t.Fatalf("schema of store/postgres differs:\nonly the old one has:\n%s\nonly the driver's has:\n%s",
			strings.Join(old, "\n"), strings.Join(unexpected, "\n"))
	}
}

// TestOpensTheFirstBackendsDatabase: a schema store/postgres created and
// filled (testdata/first_backend_*.sql) opens with the driver, which reads
// what was written; then the schema equals a fresh one's and no row changed
// (but for the versions, which it numbered per object).
func TestOpensTheFirstBackendsDatabase(t *testing.T) {
	url := firstBackendSchema(t, true)
	cols := columnsOf(t, url)
	// The version numbers: their own check below.
	cols["cks_objects"] = slices.DeleteFunc(cols["cks_objects"], func(c string) bool { return c == "head_version" })
	before := rowsOf(t, url, cols)
	d := open(t, url)
	drivertest.CheckLegacy(t, d)
	d.Close()
	c := conn(t, url)
	if got := texts(t, c, `SELECT concat_ws('|', version_id, object_id, version, parents) FROM cks_object_versions ORDER BY version_id`); !slices.Equal(got,
		[]string{"1|1|1|{}", "2|2|1|{}", "3|1|2|{1}"}) {
		t.Errorf("versions numbered %q, want 1 and 2 of object 1 and 1 of object 2", got)
	}
	if got := texts(t, c, `SELECT concat_ws('|', object_id, head_version) FROM cks_objects ORDER BY object_id`); !slices.Equal(got, []string{"1|2", "2|1"}) {
		t.Errorf("objects' head versions %q, want 2 and 1", got)
	}
	sameSchema(t, "the opened schema", schemaOf(t, url), freshSchema(t))
	if after := rowsOf(t, url, cols); !slices.Equal(after, before) {
		a, b := diff(before, after)
		t.Fatalf("rows changed:\nbefore:\n%s\nafter:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// upgradeFrom runs the statements of testdata/file in a fresh schema, opens
// it with the driver (twice: the second open must change nothing), checks
// that its schema equals a fresh one's, and returns its URL.
func upgradeFrom(t *testing.T, file string) string {
	t.Helper()
	q, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	url := backendtest.PostgresURL(t)
	if err := rawExec(t, url, string(q)); err != nil {
		t.Fatalf("old shape: %v", err)
	}
	return upgradeIn(t, url)
}

// upgradeIn opens the schema of url twice and checks the result.
func upgradeIn(t *testing.T, url string) string {
	t.Helper()
	open(t, url).Close()
	cols := columnsOf(t, url)
	upgraded := rowsOf(t, url, cols)
	open(t, url).Close()
	if again := rowsOf(t, url, cols); !slices.Equal(again, upgraded) {
		t.Fatalf("the second open changed rows:\n%s\nthen\n%s", strings.Join(upgraded, "\n"), strings.Join(again, "\n"))
	}
	sameSchema(t, "the upgraded schema", schemaOf(t, url), freshSchema(t))
	return url
}

// TestUpgradesOlderLiveness: cks_agent_liveness before current_task_* and
// desired_state; the old rows read as idle, with no stop requested.
func TestUpgradesOlderLiveness(t *testing.T) {
	d := open(t, upgradeFrom(t, "old_liveness.sql"))
	all, err := d.Executor().LivenessList(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].InstanceID != "old-2" || all[1].InstanceID != "old-1" || all[1].LivenessIntervalS != 30 ||
		!all[1].LastHeartbeatAt.Equal(drivertest.T0.Add(30e9)) || all[1].CurrentTaskID != 0 || all[1].DesiredState != "" {
		t.Fatalf("upgraded rows %+v", all)
	}
}

// TestUpgradesOlderTasks: cks_outbox_tasks lacking most of today's columns;
// the old row gets the defaults and state_changed_at = updated_at.
func TestUpgradesOlderTasks(t *testing.T) {
	url := upgradeFrom(t, "old_tasks.sql")
	got := texts(t, conn(t, url), `SELECT concat_ws('|', task_id, type, title, payload, state, priority, max_attempts, revision,
		lease_token_hash, metadata, created_at = updated_at, state_changed_at = updated_at) FROM cks_outbox_tasks`)
	if want := []string{`1|critique||{"object_id": 7}|OPEN|2|3|1||{}|t|t`}; !slices.Equal(got, want) {
		t.Fatalf("upgraded task %q, want %q", got, want)
	}
}

// TestUpgradesOlderEvidence: evidence before restart, tasks before
// metadata, no aborts or decisions tables.
func TestUpgradesOlderEvidence(t *testing.T) {
	url := backendtest.PostgresURL(t)
	open(t, url).Close()
	for _, q := range []string{
		"INSERT INTO cks_outbox_tasks (type, state, created_at, updated_at) VALUES ('a', 'RUNNING', now(), now())",
		"INSERT INTO cks_task_evidence (task_id, attempt, revision, kind, body, created_at) VALUES (1, 1, 1, 'log', 'x', now())",
		"ALTER TABLE cks_task_evidence DROP COLUMN restart",
		"ALTER TABLE cks_outbox_tasks DROP COLUMN metadata",
		"DROP TABLE cks_task_aborts",
		"DROP TABLE cks_task_decisions",
	} {
		if err := rawExec(t, url, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	upgradeIn(t, url)
	got := texts(t, conn(t, url), `SELECT concat_ws('|', t.metadata, e.restart, e.body) FROM cks_outbox_tasks t
		JOIN cks_task_evidence e ON e.task_id = t.task_id`)
	if want := []string{"{}|0|x"}; !slices.Equal(got, want) {
		t.Fatalf("upgraded task and evidence %q, want %q", got, want)
	}
}

// TestUpgradeBackfillsVersions: knowledge tables from before versions; every
// object gets one head version 1 equal to its content, by its creator, at
// its last update, and points at it.
func TestUpgradeBackfillsVersions(t *testing.T) {
	c := conn(t, upgradeFrom(t, "old_knowledge.sql"))
	got := texts(t, c, `SELECT concat_ws('|', version_id, object_id, version, parents, content, content_hash, author, created_at AT TIME ZONE 'UTC', is_head)
		FROM cks_object_versions ORDER BY version_id`)
	want := []string{
		`1|1|1|{}|{"n":1,"q":"why?"}|h1|cli|2026-11-30 12:00:05|t`,
		`2|2|1|{}|{}|h2|researcher|2026-11-30 12:01:00.5|t`,
		`3|3|1|{}|{"n":1,"q":"why?"}|h1||2026-11-30 12:02:00|t`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("backfilled versions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if objs := texts(t, c, `SELECT concat_ws('|', object_id, head_version, heads) FROM cks_objects ORDER BY object_id`); !slices.Equal(objs, []string{"1|1|1", "2|1|1", "3|1|1"}) {
		t.Fatalf("objects after the backfill: %q", objs)
	}
}

// TestUpgradeNumbersVersionsPerObject: versions numbered by one sequence
// across objects are numbered 1, 2, 3 … within each object in id order;
// parents and head_version follow, nothing else of the rows changes, and the
// append-only trigger (dropped for the backfill) freezes the number too.
func TestUpgradeNumbersVersionsPerObject(t *testing.T) {
	q, err := os.ReadFile(filepath.Join("testdata", "old_versions.sql"))
	if err != nil {
		t.Fatal(err)
	}
	url := backendtest.PostgresURL(t)
	if err := rawExec(t, url, string(q)); err != nil {
		t.Fatalf("old shape: %v", err)
	}
	rest := `SELECT concat_ws('|', version_id, object_id, content, content_hash, author, created_at, is_head) FROM cks_object_versions ORDER BY version_id`
	before := texts(t, conn(t, url), rest)
	upgradeIn(t, url)
	c := conn(t, url)
	got := texts(t, c, `SELECT concat_ws('|', version_id, object_id, version, parents) FROM cks_object_versions ORDER BY version_id`)
	want := []string{"1|1|1|{}", "2|2|1|{}", "3|1|2|{1}", "4|2|2|{1}", "5|1|3|{1}", "6|1|4|{2,3}", "7|2|3|{2}",
		"8|3|1|{}", "9|3|2|{1}", "10|3|3|{1}"}
	if !slices.Equal(got, want) {
		t.Fatalf("numbered versions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if after := texts(t, c, rest); !slices.Equal(after, before) {
		t.Fatalf("the upgrade changed more than numbers:\n%s\nwas\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if objs := texts(t, c, `SELECT concat_ws('|', object_id, head_version, heads) FROM cks_objects ORDER BY object_id`); !slices.Equal(objs, []string{"1|4|1", "2|3|1", "3|3|2"}) {
		t.Fatalf("objects after the upgrade: %q", objs)
	}
	if err := rawExec(t, url, `UPDATE cks_object_versions SET version = 7 WHERE version_id = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("changing a number after the upgrade: err = %v, want the append-only refusal", err)
	}
	forks, err := open(t, url).Executor().ForkList(testCtx(t), driver.ForkListParams{Limit: 10})
	if err != nil || fmt.Sprint(forks) != "[{3 [2 3]}]" {
		t.Fatalf("forks after the upgrade: %v, %v", forks, err)
	}
}

// TestConcurrentOpen opens one empty schema from many drivers at once, as
// several hubs starting together would: the advisory lock serialises the
// schema step.
func TestConcurrentOpen(t *testing.T) {
	url := backendtest.PostgresURL(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	drivers := make([]*postgres.Driver, n)
	for i := range n {
		wg.Go(func() { drivers[i], errs[i] = postgres.Open(testCtx(t), url) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("open %d: %v", i, errs[i])
		} else {
			drivers[i].Close()
		}
	}
	sameSchema(t, "the schema opened at once", schemaOf(t, url), freshSchema(t))
}

// TestUpgradeHashesPlainLeaseTokens: a schema from before lease tokens were
// stored hashed (issue 12) keeps its live lease and pending abort (their
// tokens now stored as the hash a fenced call compares), loses the plain
// column and its index, and binds the claim credentials of that time to the
// lease their worker holds (or to none).
func TestUpgradeHashesPlainLeaseTokens(t *testing.T) {
	url := upgradeFrom(t, "old_leases.sql")
	c := conn(t, url)
	h0, h1 := store.HashLeaseToken("plain-0"), store.HashLeaseToken("plain-1")
	for _, q := range []struct {
		q    string
		want []string
	}{
		{`SELECT concat_ws('|', task_id, lease_token_hash) FROM cks_outbox_tasks ORDER BY task_id`, []string{"1|" + h1, "2|"}},
		{`SELECT concat_ws('|', abort_id, lease_token_hash) FROM cks_task_aborts`, []string{"1|" + h0}},
		{`SELECT concat_ws('|', principal_id, coalesce(task_id::text, 'none'), coalesce(lease_token_hash, 'none'))
			FROM cks_principals ORDER BY principal_id`,
			[]string{"p-admin|none|none", "p-claim|1|" + h1, "p-gone|2|", "p-op|none|none"}},
	} {
		if got := texts(t, c, q.q); !slices.Equal(got, q.want) {
			t.Errorf("%s:\n got %q\nwant %q", q.q, got, q.want)
		}
	}
	d := open(t, url)
	for tok, live := range map[string]bool{"h-claim": true, "h-gone": false, "h-op": true, "h-admin": true} {
		_, err := d.Executor().PrincipalByTokenHash(context.Background(), tok)
		if live != (err == nil) {
			t.Errorf("principal of %s: %v, want it authenticating: %v", tok, err, live)
		}
	}
}
