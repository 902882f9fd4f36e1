package drivertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// Scratch is a dialect's access to scratch databases for the schema tests,
// outside the driver: making one, running SQL in it, reading its catalog,
// and how its query results show values. The checks below (the first
// backends' databases, the upgrades of older ones) are written once over it;
// each driver's tests give its Scratch and the facts of its dialect.
type Scratch struct {
	// NewDB makes an empty database, as for the conformance suite.
	NewDB NewDB
	// Query reads q's rows as "a|b|…" lines of the columns' text, NULL as
	// "NULL".
	Query func(t testing.TB, db, q string) []string
	// Schema describes db's schema as its catalog reports it, one sorted
	// line per fact.
	Schema func(t testing.TB, db string) []string
	// Columns returns db's tables' columns: table → names.
	Columns func(t testing.TB, db string) map[string][]string
	// TimeLayout, True and Brackets are how Query shows a time (a
	// time.Format layout, of UTC), true, and an integer list (between the
	// two brackets, comma-separated).
	TimeLayout, True, Brackets string
	// VersionsTrigger names the append-only trigger of versions, which the
	// first backend's database has under the same name and another body.
	VersionsTrigger string
	// Retired and Added are the prefixes of the Schema lines the dialect
	// retired or added since its first backend, beyond those of both
	// dialects (issue 14: the events' foreign key and the parents' index
	// went everywhere; Postgres replaced two state indexes by partial ones).
	Retired, Added []string
}

// Run runs every schema check, each a subtest.
func (s Scratch) Run(t *testing.T) {
	for _, c := range []struct {
		name  string
		check func(*testing.T)
	}{
		{"RendersTheFirstBackendsSchema", s.CheckFirstBackendSchema},
		{"OpensTheFirstBackendsDatabase", s.CheckFirstBackendDatabase},
		{"UpgradesOlderLiveness", s.CheckUpgradesOlderLiveness},
		{"UpgradesOlderTasks", s.CheckUpgradesOlderTasks},
		{"UpgradeBackfillsVersions", s.CheckUpgradeBackfillsVersions},
		{"UpgradeNumbersVersionsPerObject", s.CheckUpgradeNumbersVersionsPerObject},
		{"UpgradeHashesPlainLeaseTokens", s.CheckUpgradeHashesPlainLeaseTokens},
	} {
		t.Run(c.name, c.check)
	}
}

// From makes a database holding the statements of the files of the
// driver's testdata directory (its old databases: first_backend_*.sql,
// old_*.sql).
func (s Scratch) From(t testing.TB, files ...string) DB {
	t.Helper()
	db := s.NewDB(t)
	for _, f := range files {
		q, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Exec(t, string(q)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return db
}

// Fresh is the schema the driver creates in an empty database.
func (s Scratch) Fresh(t testing.TB) []string {
	t.Helper()
	db := s.NewDB(t)
	db.Open(t).Close()
	return s.Schema(t, db.Name)
}

// Rows dumps every row of the tables and columns in cols, sorted.
func (s Scratch) Rows(t testing.TB, db DB, cols map[string][]string) []string {
	t.Helper()
	var out []string
	for tb, names := range cols {
		for _, r := range s.Query(t, db.Name, `SELECT `+strings.Join(names, ", ")+` FROM `+tb) {
			out = append(out, tb+": "+r)
		}
	}
	slices.Sort(out)
	return out
}

// SameSchema fails the test unless got is the fresh schema.
func SameSchema(t testing.TB, what string, got, fresh []string) {
	t.Helper()
	if a, b := Diff(got, fresh); len(a)+len(b) > 0 {
		t.Fatalf("%s differs from a fresh schema:\nonly it has:\n%s\nonly the fresh one has:\n%s",
			what, strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// Diff returns the lines of a not in b and of b not in a.
func Diff(a, b []string) (onlyA, onlyB []string) {
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

// UpgradeFrom makes a database of testdata/file, upgrades it (UpgradeIn)
// and returns it.
func (s Scratch) UpgradeFrom(t testing.TB, file string) DB {
	t.Helper()
	return s.UpgradeIn(t, s.From(t, file))
}

// UpgradeIn opens db with the driver twice — the second open must change
// nothing — and checks that its schema is a fresh one's.
func (s Scratch) UpgradeIn(t testing.TB, db DB) DB {
	t.Helper()
	db.Open(t).Close()
	cols := s.Columns(t, db.Name)
	upgraded := s.Rows(t, db, cols)
	db.Open(t).Close()
	if again := s.Rows(t, db, cols); !slices.Equal(again, upgraded) {
		t.Fatalf("the second open changed rows:\n%s\nthen\n%s", strings.Join(upgraded, "\n"), strings.Join(again, "\n"))
	}
	SameSchema(t, "the upgraded schema", s.Schema(t, db.Name), s.Fresh(t))
	return db
}

// want fails the test unless q's lines in db are want.
func (s Scratch) want(t testing.TB, db DB, what, q string, want ...string) {
	t.Helper()
	if got := s.Query(t, db.Name, q); !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// CheckFirstBackendSchema: an empty database made by the first backend of
// the dialect (testdata/first_backend_schema.sql) has exactly the schema
// the driver creates (Schema's lines of a column begin "column|TABLE|"),
// but for what was added since: the lease binding of principals, and the
// per-object version numbers (their column and index, and the append-only
// trigger that freezes them too), the studio's sessions (issue 22: their
// table, its keys and indexes), the exit time of a process and the
// changes of an edit's event (issue 24), the leaders (issue 26: their
// table and key), the attempt an event ends (issue 27: claimed_at,
// started_at, worker), the alive_until of a process and the indexes of the
// history and the alive instances, the children index of the retention
// sweeper (issue 26), the sweepers' passes (issue 24: their table, key and
// indexes), the reporter of a process (issue 41), the agent credential of
// a task's lease (issue 41), the paused task types, the index of the delayed
// tasks, the attempt timeout, the expiry and their indexes, the schedules
// (their table and key), the concurrency keys, their index and the limits
// (their table, key and pattern index) and the starts of rate-limited
// keys (their table, key and index; issue 42); and for what was retired since (Retired,
// Added, and the index of parents, read by no query).
func (s Scratch) CheckFirstBackendSchema(t *testing.T) {
	old, fresh := Diff(s.Schema(t, s.From(t, "first_backend_schema.sql").Name), s.Fresh(t))
	trigger := "trigger|" + s.VersionsTrigger + "|"
	old = WithoutPrefixes(old, append([]string{trigger, "index|idx_outbox_tasks_parent|"}, s.Retired...)...)
	fresh = WithoutPrefixes(fresh, append([]string{"column|cks_principals|lease_", "column|cks_object_versions|version|",
		"index|idx_object_versions_version|", trigger,
		"column|cks_sessions|", "fk|cks_sessions|", "constraint|cks_sessions|", "index|idx_sessions_", "index|cks_sessions_",
		"index|sqlite_autoindex_cks_sessions_", "column|cks_agent_liveness|exited_at|", "column|cks_agent_liveness|task_types|",
		"column|cks_agent_liveness|alive_until|", "column|cks_agent_liveness|reported_by|", "index|idx_agent_liveness_started|", "index|idx_agent_liveness_alive|", "index|idx_outbox_tasks_parent_of|", "index|idx_outbox_tasks_updated|", "index|idx_outbox_tasks_due|",
		"column|cks_task_events|changes|", "column|cks_task_events|claimed_at|", "column|cks_task_events|started_at|",
		"column|cks_task_events|worker|", "column|cks_outbox_tasks|agent_token_hash|",
		"column|cks_outbox_tasks|attempt_timeout_ms|", "index|idx_outbox_tasks_timed|",
		"column|cks_outbox_tasks|expires_at|", "index|idx_outbox_tasks_expiring|",
		"column|cks_leaders|", "constraint|cks_leaders|", "index|cks_leaders_", "index|sqlite_autoindex_cks_leaders_",
		"column|cks_sweeper_passes|", "constraint|cks_sweeper_passes|", "index|cks_sweeper_passes_", "index|idx_sweeper_passes_",
		"column|cks_paused_types|", "constraint|cks_paused_types|", "index|cks_paused_types_", "index|sqlite_autoindex_cks_paused_types_",
		"column|cks_schedules|", "constraint|cks_schedules|", "index|cks_schedules_", "index|sqlite_autoindex_cks_schedules_",
		"column|cks_outbox_tasks|concurrency_keys|", "index|idx_outbox_tasks_keys_held|",
		"column|cks_limits|", "constraint|cks_limits|", "index|cks_limits_", "index|sqlite_autoindex_cks_limits_", "index|idx_limits_pattern|",
		"column|cks_outbox_tasks|traceparent|",
		"column|cks_key_starts|", "constraint|cks_key_starts|", "index|cks_key_starts_", "index|idx_key_starts_at|",
		"column|cks_usage|", "constraint|cks_usage|", "index|cks_usage_", "index|idx_usage_",
		"column|cks_task_spend|", "constraint|cks_task_spend|", "index|cks_task_spend_", "index|sqlite_autoindex_cks_task_spend_",
		"column|cks_limits|max_tokens|", "column|cks_limits|max_cost_nanos|", "column|cks_limits|window_ms|",
		"column|cks_key_spend|", "constraint|cks_key_spend|", "index|cks_key_spend_", "index|sqlite_autoindex_cks_key_spend_",
		"column|cks_task_output|", "constraint|cks_task_output|", "fk|cks_task_output|", "index|cks_task_output_", "index|idx_task_output_seq|"}, s.Added...)...)
	if len(old) > 0 || len(fresh) > 0 {
		t.Fatalf("schema of the first backend differs:\nonly the old one has:\n%s\nonly the driver's has:\n%s",
			strings.Join(old, "\n"), strings.Join(fresh, "\n"))
	}
}

// CheckFirstBackendDatabase: a database the first backend created and
// filled (testdata/first_backend_*.sql) opens with the driver, which reads
// what was written (CheckLegacy); then its schema is a fresh one's and no
// row changed, but for the versions, which it numbered per object.
func (s Scratch) CheckFirstBackendDatabase(t *testing.T) {
	db := s.From(t, "first_backend_schema.sql", "first_backend_rows.sql")
	cols := s.Columns(t, db.Name)
	// The version numbers: their own check below.
	cols["cks_objects"] = slices.DeleteFunc(cols["cks_objects"], func(c string) bool { return c == "head_version" })
	before := s.Rows(t, db, cols)
	d := db.Open(t)
	CheckLegacy(t, d)
	d.Close()
	a := s.Array
	s.want(t, db, "versions, numbered 1 and 2 of object 1 and 1 of object 2",
		`SELECT version_id, object_id, version, parents FROM cks_object_versions ORDER BY version_id`,
		"1|1|1|"+a(), "2|2|1|"+a(), "3|1|2|"+a(1))
	s.want(t, db, "objects' head versions", `SELECT object_id, head_version FROM cks_objects ORDER BY object_id`, "1|2", "2|1")
	SameSchema(t, "the opened schema", s.Schema(t, db.Name), s.Fresh(t))
	if after := s.Rows(t, db, cols); !slices.Equal(after, before) {
		a, b := Diff(before, after)
		t.Fatalf("rows changed:\nbefore:\n%s\nafter:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// CheckUpgradesOlderLiveness: cks_agent_liveness before current_task_*,
// desired_state and exited_at; the old rows read as idle, with no stop
// requested, and the one whose exit wrote a heartbeat backdated to the
// epoch as exited at its start, with that for its last heartbeat (the
// only time it is known to have been alive); the others are alive until
// their last heartbeat plus 3 intervals (alive_until, backfilled).
func (s Scratch) CheckUpgradesOlderLiveness(t *testing.T) {
	all, err := s.UpgradeFrom(t, "old_liveness.sql").Open(t).Executor().LivenessList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", all)
	want := "[{InstanceID:old-2 ProcessKind:pipeline Hostname:h PID:11 LivenessIntervalS:15 StartedAt:2026-11-30 12:01:00 +0000 UTC " +
		"LastHeartbeatAt:2026-11-30 12:01:00 +0000 UTC CurrentTaskID:0 CurrentTaskType: DesiredState: ExitedAt:0001-01-01 00:00:00 +0000 UTC TaskTypes: AliveUntil:2026-11-30 12:01:45 +0000 UTC ReportedBy:} " +
		"{InstanceID:old-1 ProcessKind:critic Hostname:h PID:10 LivenessIntervalS:30 StartedAt:2026-11-30 12:00:00 +0000 UTC " +
		"LastHeartbeatAt:2026-11-30 12:00:30 +0000 UTC CurrentTaskID:0 CurrentTaskType: DesiredState: ExitedAt:0001-01-01 00:00:00 +0000 UTC TaskTypes: AliveUntil:2026-11-30 12:02:00 +0000 UTC ReportedBy:} " +
		"{InstanceID:old-exited ProcessKind:critic Hostname:h PID:9 LivenessIntervalS:30 StartedAt:2026-11-30 11:00:00 +0000 UTC " +
		"LastHeartbeatAt:2026-11-30 11:00:00 +0000 UTC CurrentTaskID:0 CurrentTaskType: DesiredState: ExitedAt:2026-11-30 11:00:00 +0000 UTC TaskTypes: AliveUntil:0001-01-01 00:00:00 +0000 UTC ReportedBy:}]"
	if got != want {
		t.Fatalf("upgraded rows\n got: %s\nwant: %s", got, want)
	}
}

// CheckUpgradesOlderTasks: cks_outbox_tasks lacking most of today's
// columns; the old row gets the defaults and state_changed_at = updated_at.
func (s Scratch) CheckUpgradesOlderTasks(t *testing.T) {
	db := s.UpgradeFrom(t, "old_tasks.sql")
	s.want(t, db, "the upgraded task", `SELECT task_id, type, title, payload, state, priority, max_attempts, revision,
		lease_token_hash, metadata, created_at, updated_at, state_changed_at FROM cks_outbox_tasks`,
		`1|critique||{"object_id": 7}|OPEN|2|3|1||{}|`+s.Time(T0)+"|"+s.Time(T0)+"|"+s.Time(T0))
}

// CheckUpgradeBackfillsVersions: knowledge tables from before versions;
// every object gets one head version 1 equal to its content, by its
// creator, at its last update, and points at it; the edges stay.
func (s Scratch) CheckUpgradeBackfillsVersions(t *testing.T) {
	db := s.UpgradeFrom(t, "old_knowledge.sql")
	at := func(d time.Duration) string { return s.Time(T0.Add(d)) }
	s.want(t, db, "the backfilled versions", `SELECT version_id, object_id, version, parents, content, content_hash, author, created_at, is_head
		FROM cks_object_versions ORDER BY version_id`,
		`1|1|1|`+s.Array()+`|{"n":1,"q":"why?"}|h1|cli|`+at(5*time.Second)+"|"+s.True,
		`2|2|1|`+s.Array()+`|{}|h2|researcher|`+at(60500*time.Millisecond)+"|"+s.True,
		`3|3|1|`+s.Array()+`|{"n":1,"q":"why?"}|h1||`+at(2*time.Minute)+"|"+s.True)
	s.want(t, db, "objects after the backfill", `SELECT object_id, head_version, heads FROM cks_objects ORDER BY object_id`,
		"1|1|1", "2|1|1", "3|1|1")
	s.want(t, db, "edges after the upgrade", `SELECT src, dst FROM cks_edges`, "2|1")
}

// CheckUpgradeNumbersVersionsPerObject: versions numbered by one sequence
// across objects are numbered 1, 2, 3 … within each object in id order;
// parents and head_version follow, nothing else of the rows changes, and
// the append-only trigger (dropped for the backfill) freezes the number
// too.
func (s Scratch) CheckUpgradeNumbersVersionsPerObject(t *testing.T) {
	db := s.From(t, "old_versions.sql")
	rest := `SELECT version_id, object_id, content, content_hash, author, created_at, is_head FROM cks_object_versions ORDER BY version_id`
	before := s.Query(t, db.Name, rest)
	s.UpgradeIn(t, db)
	a := s.Array
	s.want(t, db, "the numbered versions", `SELECT version_id, object_id, version, parents FROM cks_object_versions ORDER BY version_id`,
		"1|1|1|"+a(), "2|2|1|"+a(), "3|1|2|"+a(1), "4|2|2|"+a(1), "5|1|3|"+a(1), "6|1|4|"+a(2, 3), "7|2|3|"+a(2),
		"8|3|1|"+a(), "9|3|2|"+a(1), "10|3|3|"+a(1))
	s.want(t, db, "the versions but their numbers", rest, before...)
	s.want(t, db, "objects after the upgrade", `SELECT object_id, head_version, heads FROM cks_objects ORDER BY object_id`,
		"1|4|1", "2|3|1", "3|3|2")
	if err := db.Exec(t, `UPDATE cks_object_versions SET version = 7 WHERE version_id = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("changing a number after the upgrade: err = %v, want the append-only refusal", err)
	}
	forks, err := db.Open(t).Executor().ForkList(Ctx(t), driver.ForkListParams{Limit: 10})
	if err != nil || fmt.Sprint(forks) != "[{3 [2 3]}]" {
		t.Fatalf("forks after the upgrade: %v, %v", forks, err)
	}
}

// CheckUpgradeHashesPlainLeaseTokens: a database from before lease tokens
// were stored hashed (issue 12) keeps its live lease and pending abort
// (their tokens now stored as the hash a fenced call compares), loses the
// plain column and its index, and binds the claim credentials of that time
// to the lease their worker holds (or to none).
func (s Scratch) CheckUpgradeHashesPlainLeaseTokens(t *testing.T) {
	db := s.UpgradeFrom(t, "old_leases.sql")
	h0, h1 := driver.HashLeaseToken("plain-0"), driver.HashLeaseToken("plain-1")
	s.want(t, db, "tasks", `SELECT task_id, lease_token_hash FROM cks_outbox_tasks ORDER BY task_id`, "1|"+h1, "2|")
	s.want(t, db, "aborts", `SELECT abort_id, lease_token_hash FROM cks_task_aborts`, "1|"+h0)
	s.want(t, db, "principals", `SELECT principal_id, coalesce(CAST(task_id AS TEXT), 'none'), coalesce(lease_token_hash, 'none')
		FROM cks_principals ORDER BY principal_id`,
		"p-admin|none|none", "p-claim|1|"+h1, "p-gone|2|", "p-op|none|none")
	d := db.Open(t)
	for tok, live := range map[string]bool{"h-claim": true, "h-gone": false, "h-op": true, "h-admin": true} {
		_, err := d.Executor().PrincipalByTokenHash(context.Background(), tok)
		if live != (err == nil) {
			t.Errorf("principal of %s: %v, want it authenticating: %v", tok, err, live)
		}
	}
}

// Time is how Query shows at.
func (s Scratch) Time(at time.Time) string { return at.UTC().Format(s.TimeLayout) }

// Array is how Query shows an integer list.
func (s Scratch) Array(v ...int64) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return s.Brackets[:1] + strings.Join(parts, ",") + s.Brackets[1:]
}
