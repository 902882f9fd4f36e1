package schema

import (
	"slices"
	"strings"
	"testing"
)

// current returns the Existing of a database of the current shape in d.
func current(d Dialect) Existing {
	have := Existing{Columns: map[string]map[string]bool{}, Indexes: map[string]bool{}, Triggers: map[string]bool{},
		References: map[string]string{}, PrimaryKeys: map[string]string{}, Options: map[string]map[string]bool{}}
	for _, t := range TablesOf(d) {
		if o := storageOption(t, d); o != "" {
			have.Options[t.Name] = map[string]bool{o: true}
		}
		have.Columns[t.Name] = map[string]bool{}
		for _, c := range t.Columns {
			have.Columns[t.Name][c.Name] = true
			if c.References != "" {
				have.References[t.Name+"."+c.Name] = t.Name + "_" + c.Name + "_fkey"
			}
		}
		for _, ix := range t.Indexes {
			if ix.In(d) {
				have.Indexes[ix.Name] = true
			}
		}
		for _, tr := range Triggers(t, d) {
			have.Triggers[tr.Name] = true
		}
		if len(t.PrimaryKey) > 0 && t.primaryKeyIn(d) {
			have.PrimaryKeys[t.Name] = strings.Join(t.PrimaryKey, ",")
		}
	}
	return have
}

// TestUpgradeReplacesTheEventsKey: a Postgres database whose events are
// keyed by event_id alone, with the task's index beside it, gets the key
// (task_id, event_id) in their place; SQLite, whose rowid is the event id,
// keeps both.
func TestUpgradeReplacesTheEventsKey(t *testing.T) {
	for _, d := range Dialects {
		have := current(d)
		have.PrimaryKeys["cks_task_events"] = "event_id"
		have.Indexes["idx_task_events_task"] = true
		var want []string
		if d == Postgres {
			want = []string{"DROP INDEX idx_task_events_task",
				"ALTER TABLE cks_task_events DROP CONSTRAINT cks_task_events_pkey",
				"ALTER TABLE cks_task_events ADD PRIMARY KEY (task_id, event_id)"}
		}
		if got := Plan(d, have, Upgrade{}); !slices.Equal(got, want) {
			t.Errorf("%s: Plan =\n%q\nwant\n%q", d, got, want)
		}
	}
	if sql := CreateSQL(taskEvents(), SQLite); strings.Contains(sql, "PRIMARY KEY (") ||
		!strings.Contains(sql, "event_id INTEGER PRIMARY KEY AUTOINCREMENT") {
		t.Errorf("SQLite's events are not keyed by their rowid: %s", sql)
	}
}

func TestPlanOfCurrentDatabaseIsEmpty(t *testing.T) {
	for _, d := range Dialects {
		if got := Plan(d, current(d), Upgrade{}); len(got) != 0 {
			t.Errorf("%s: Plan of a current database = %q, want nothing", d, got)
		}
	}
}

func TestFreshCreatesEverythingOnce(t *testing.T) {
	for _, d := range Dialects {
		fresh := Fresh(d)
		seen := map[string]bool{}
		for _, s := range fresh {
			if seen[s] {
				t.Errorf("%s: statement twice: %s", d, s)
			}
			seen[s] = true
		}
		for _, tb := range TablesOf(d) {
			if !slices.Contains(fresh, CreateSQL(tb, d)) {
				t.Errorf("%s: no CREATE TABLE %s", d, tb.Name)
			}
			for _, ix := range tb.Indexes {
				if ix.In(d) != slices.Contains(fresh, IndexSQL(tb, ix, d)) {
					t.Errorf("%s: index %s present %v, want %v", d, ix.Name, !ix.In(d), ix.In(d))
				}
			}
		}
		// Every CREATE TABLE precedes every index and trigger.
		last := -1
		for i, s := range fresh {
			if strings.HasPrefix(s, "CREATE TABLE") {
				last = i
			}
		}
		for i, s := range fresh[:last+1] {
			if !strings.HasPrefix(s, "CREATE TABLE") {
				t.Errorf("%s: statement %d before the last CREATE TABLE: %s", d, i, s)
			}
		}
	}
}

// TestUpgrade is the add-missing-column planner's table (moved here from
// store/internal/schema): missing tables first, then each missing column in
// column order, the retired columns (carried, their indexes dropped, then
// dropped), the backfills, then what is missing of indexes and triggers.
func TestUpgrade(t *testing.T) {
	const d = SQLite
	tasks := outboxTasks()
	versions := objectVersions()
	dedupe := slices.IndexFunc(tasks.Indexes, func(ix Index) bool { return ix.Name == "idx_outbox_tasks_dedupe" })
	up := Upgrade{
		Backfill: Backfill{"cks_outbox_tasks.state_changed_at": {"BACKFILL state_changed_at"}},
		Retire:   map[string][]string{"cks_task_aborts.lease_token": {"CARRY lease_token"}},
	}
	drop := func(have Existing, table string, cols ...string) {
		for _, c := range cols {
			delete(have.Columns[table], c)
		}
	}
	col := func(tb Table, name string) Column {
		c, ok := tb.Column(name)
		if !ok {
			t.Fatalf("no column %s.%s", tb.Name, name)
		}
		return c
	}
	cases := []struct {
		name string
		edit func(Existing)
		want []string
	}{
		{"one column with a backfill", func(h Existing) { drop(h, "cks_outbox_tasks", "state_changed_at") },
			[]string{AddColumnSQL(tasks, col(tasks, "state_changed_at"), d), "BACKFILL state_changed_at"}},
		{"two columns, in column order", func(h Existing) { drop(h, "cks_outbox_tasks", "metadata", "title") },
			[]string{AddColumnSQL(tasks, col(tasks, "title"), d), AddColumnSQL(tasks, col(tasks, "metadata"), d)}},
		{"a table, before the column of another", func(h Existing) {
			drop(h, "cks_outbox_tasks", "title")
			delete(h.Columns, "cks_object_versions")
		}, []string{CreateSQL(versions, d), AddColumnSQL(tasks, col(tasks, "title"), d)}},
		{"backfills after every column is added", func(h Existing) { drop(h, "cks_outbox_tasks", "state_changed_at", "metadata") },
			[]string{AddColumnSQL(tasks, col(tasks, "state_changed_at"), d), AddColumnSQL(tasks, col(tasks, "metadata"), d),
				"BACKFILL state_changed_at"}},
		{"a retired column: carried, its index dropped, then it", func(h Existing) {
			h.Columns["cks_task_aborts"]["lease_token"] = true
			h.Indexes["idx_task_aborts_task"] = true
		}, []string{"CARRY lease_token", "DROP INDEX idx_task_aborts_task", "ALTER TABLE cks_task_aborts DROP COLUMN lease_token"}},
		{"a retired column replaced by an added one, before the backfills", func(h Existing) {
			drop(h, "cks_outbox_tasks", "state_changed_at")
			drop(h, "cks_task_aborts", "lease_token_hash")
			h.Columns["cks_task_aborts"]["lease_token"] = true
		}, []string{AddColumnSQL(tasks, col(tasks, "state_changed_at"), d),
			AddColumnSQL(taskAborts(), col(taskAborts(), "lease_token_hash"), d),
			"CARRY lease_token", "ALTER TABLE cks_task_aborts DROP COLUMN lease_token", "BACKFILL state_changed_at"}},
		{"an index", func(h Existing) { delete(h.Indexes, "idx_outbox_tasks_dedupe") },
			[]string{IndexSQL(tasks, tasks.Indexes[dedupe], d)}},
		{"a trigger", func(h Existing) { delete(h.Triggers, "cks_object_versions_no_delete") },
			[]string{Triggers(versions, d)[1].SQL}},
	}
	for _, c := range cases {
		have := current(d)
		c.edit(have)
		if got := Plan(d, have, up); !slices.Equal(got, c.want) {
			t.Errorf("%s: Plan =\n%q\nwant\n%q", c.name, got, c.want)
		}
	}
}

// TestUpgradeRetiresIndexesAndReferences: an index the table list retired
// is dropped where the database has it (before the indexes are created);
// a retired foreign key is dropped as a constraint on Postgres, and on
// SQLite by rebuilding its table, whose indexes and triggers are then
// created again; a database without them needs nothing.
func TestUpgradeRetiresIndexesAndReferences(t *testing.T) {
	events := taskEvents()
	tasks := outboxTasks()
	if !slices.Contains(events.RetiredReferences, "task_id") {
		t.Fatalf("cks_task_events retires no foreign key: %+v", events.RetiredReferences)
	}
	for _, d := range Dialects {
		if got := Plan(d, current(d), Upgrade{}); len(got) != 0 {
			t.Fatalf("%s: Plan of a current database = %q", d, got)
		}
		have := current(d)
		for _, ix := range tasks.RetiredIndexes {
			if ix.Only == "" || ix.Only == d {
				have.Indexes[ix.Name] = true
			}
		}
		have.References["cks_task_events.task_id"] = "cks_task_events_task_id_fkey"
		var want []string
		for _, ix := range tasks.RetiredIndexes {
			if ix.Only == "" || ix.Only == d {
				want = append(want, "DROP INDEX "+ix.Name)
			}
		}
		if d == Postgres {
			want = append(want, "ALTER TABLE cks_task_events DROP CONSTRAINT cks_task_events_task_id_fkey")
		} else {
			cols := "event_id, task_id, at, actor, from_state, to_state, attempt, reason, changes, claimed_at, started_at, worker"
			want = append(want, "ALTER TABLE cks_task_events RENAME TO cks_task_events__rebuilt", CreateSQL(events, d),
				"INSERT INTO cks_task_events ("+cols+") SELECT "+cols+" FROM cks_task_events__rebuilt",
				"DROP TABLE cks_task_events__rebuilt")
			for _, ix := range events.Indexes {
				if ix.In(d) {
					want = append(want, IndexSQL(events, ix, d))
				}
			}
			for _, tr := range Triggers(events, d) {
				want = append(want, tr.SQL)
			}
		}
		if got := Plan(d, have, Upgrade{}); !slices.Equal(got, want) {
			t.Errorf("%s: Plan =\n%q\nwant\n%q", d, got, want)
		}
		if strings.Contains(CreateSQL(events, d), "REFERENCES") {
			t.Errorf("%s: cks_task_events still references: %s", d, CreateSQL(events, d))
		}
	}
}

// TestUpgradeRenewsTriggersOfAGrownTable: an append-only table that gains a
// column gets its triggers dropped before the column is added (its backfill
// may have to write the rows they guard) and created again after every
// backfill, naming the new column among the frozen ones.
func TestUpgradeRenewsTriggersOfAGrownTable(t *testing.T) {
	versions := objectVersions()
	number, _ := versions.Column("version")
	up := Upgrade{Backfill: Backfill{"cks_object_versions.version": {"BACKFILL version"}}}
	for _, d := range Dialects {
		have := current(d)
		delete(have.Columns["cks_object_versions"], "version")
		delete(have.Indexes, "idx_object_versions_version")
		var want []string
		for _, tr := range Triggers(versions, d) {
			want = append(want, DropTriggerSQL(versions, tr, d))
		}
		want = append(want, AddColumnSQL(versions, number, d), "BACKFILL version")
		for _, ix := range versions.Indexes {
			if ix.Name == "idx_object_versions_version" {
				want = append(want, IndexSQL(versions, ix, d))
			}
		}
		if d == Postgres {
			want = append(want, rejectFunctionSQL)
		}
		for _, tr := range Triggers(versions, d) {
			want = append(want, tr.SQL)
		}
		if got := Plan(d, have, up); !slices.Equal(got, want) {
			t.Errorf("%s: Plan =\n%q\nwant\n%q", d, got, want)
		}
		if tr := Triggers(versions, d)[0].SQL; !strings.Contains(tr, "version") {
			t.Errorf("%s: the renewed trigger does not freeze version: %s", d, tr)
		}
	}
}

// TestPostgresRejectFunctionBeforeTriggers: a missing Postgres trigger is
// created after (re)creating the function it runs, once.
func TestPostgresRejectFunctionBeforeTriggers(t *testing.T) {
	have := current(Postgres)
	delete(have.Triggers, "cks_task_events_no_truncate")
	delete(have.Triggers, "cks_transition_log_no_change")
	got := Plan(Postgres, have, Upgrade{})
	if len(got) != 3 || got[0] != rejectFunctionSQL || !strings.Contains(got[1], "cks_task_events_no_truncate") ||
		!strings.Contains(got[2], "cks_transition_log_no_change") {
		t.Fatalf("Plan = %q", got)
	}
}

// TestDialectsDescribeOneSchema: both dialects have the same tables (but
// SQLite's change counters), with the same columns in the same order, the
// same nullability and the same append-only rules; the indexes differ only
// where the table list says so.
func TestDialectsDescribeOneSchema(t *testing.T) {
	var names [2][]string
	for i, d := range Dialects {
		for _, tb := range TablesOf(d) {
			names[i] = append(names[i], tb.Name)
		}
	}
	if want := slices.DeleteFunc(slices.Clone(names[0]), func(n string) bool { return n == "cks_changes" }); !slices.Equal(names[1], want) {
		t.Fatalf("tables: sqlite %v, postgres %v", names[0], names[1])
	}
	for _, tb := range Tables() {
		for _, c := range tb.Columns {
			if (c.Default.SQLite == "") != (c.Default.Postgres == "") && !legacyDefault[tb.Name+"."+c.Name] {
				t.Errorf("%s.%s has a default in one dialect only (%+v) and is not a known legacy difference", tb.Name, c.Name, c.Default)
			}
		}
		for _, ix := range tb.Indexes {
			if ix.Only != "" && !legacyIndex[ix.Name] && !dialectIndex[ix.Name] {
				t.Errorf("index %s exists in %s only and is not a known legacy difference", ix.Name, ix.Only)
			}
		}
		for _, d := range Dialects {
			for _, tr := range Triggers(tb, d) {
				if !strings.Contains(tr.SQL, " ON "+tb.Name) {
					t.Errorf("%s: trigger %s is not on %s: %s", d, tr.Name, tb.Name, tr.SQL)
				}
			}
		}
	}
}

// The differences the first two backends had drifted into; a new one is a
// decision to write down here.
var (
	legacyDefault = map[string]bool{
		"cks_task_decisions.restart":      true,
		"cks_task_aborts.restart":         true,
		"cks_task_aborts.outcome":         true,
		"cks_object_versions.content":     true,
		"cks_transition_log.content_hash": true,
	}
	legacyIndex = map[string]bool{
		"idx_task_aborts_task": true, "idx_task_aborts_token": true,
		"idx_objects_claim": true, "idx_objects_status": true, "idx_objects_claimed_at": true,
		"idx_object_versions_head": true, "idx_object_versions_heads": true,
	}
	// The indexes a dialect's queries need differently (issue 14): on
	// Postgres, whose planner matches a state list against an index's WHERE,
	// partial ones on state; on SQLite, whose queries take states as JSON,
	// one on the lease expiry alone and the claim index of a type partial.
	// SQLite's events keep the task's index beside the rowid; Postgres's
	// primary key is that index. The events' time: a B-tree on SQLite, a
	// block range index on Postgres (issue 27).
	dialectIndex = map[string]bool{
		"idx_task_events_task": true, "idx_task_events_at": true, "idx_task_events_at_brin": true,
		"idx_outbox_tasks_stopped": true,
		"idx_outbox_tasks_leased":  true, "idx_outbox_tasks_lease_expires": true,
		"idx_outbox_tasks_settled": true, "idx_outbox_tasks_state": true,
	}
)

func TestVersionsTriggerFreezesAllButIsHead(t *testing.T) {
	v := objectVersions()
	want := "UPDATE OF object_id, parents, content, content_hash, author, created_at, version"
	for _, d := range Dialects {
		if tr := Triggers(v, d); len(tr) != 2 || !strings.Contains(tr[0].SQL, want) {
			t.Errorf("%s: versions triggers %q, want the first to contain %q", d, tr, want)
		}
	}
	if got := Triggers(v, SQLite)[0].SQL; !strings.Contains(got, "UPDATE refused (only is_head changes)") {
		t.Errorf("sqlite versions trigger message: %s", got)
	}
}

// TestFillFactor: the task table is created with its fillfactor on
// Postgres and with none on SQLite, and an existing Postgres table without
// it gets it (ALTER TABLE … SET), once.
func TestFillFactor(t *testing.T) {
	tasks := func(d Dialect) Table {
		for _, tb := range TablesOf(d) {
			if tb.Name == "cks_outbox_tasks" {
				return tb
			}
		}
		t.Fatal("no cks_outbox_tasks")
		return Table{}
	}
	if got := CreateSQL(tasks(Postgres), Postgres); !strings.HasSuffix(got, ") WITH (fillfactor=70)") {
		t.Errorf("Postgres create ends %q, want WITH (fillfactor=70)", got[max(0, len(got)-40):])
	}
	if got := CreateSQL(tasks(SQLite), SQLite); strings.Contains(got, "WITH") {
		t.Errorf("SQLite create has storage parameters: %q", got[max(0, len(got)-40):])
	}
	have := current(Postgres)
	delete(have.Options, "cks_outbox_tasks")
	want := []string{"ALTER TABLE cks_outbox_tasks SET (fillfactor=70)"}
	if got := Plan(Postgres, have, Upgrade{}); !slices.Equal(got, want) {
		t.Errorf("plan of a table without its fillfactor %q, want %q", got, want)
	}
	have.Options["cks_outbox_tasks"] = map[string]bool{"fillfactor=90": true}
	if got := Plan(Postgres, have, Upgrade{}); !slices.Equal(got, want) {
		t.Errorf("plan of a table with another fillfactor %q, want %q", got, want)
	}
}

// TestEventsTimeIndex: the events' time is a block range index on Postgres
// (summarized as ranges fill) and a B-tree on SQLite.
func TestEventsTimeIndex(t *testing.T) {
	for d, want := range map[Dialect]string{
		Postgres: "CREATE INDEX IF NOT EXISTS idx_task_events_at_brin ON cks_task_events USING brin(at) WITH (autosummarize = on)",
		SQLite:   "CREATE INDEX IF NOT EXISTS idx_task_events_at ON cks_task_events(at)",
	} {
		var got []string
		for _, tb := range TablesOf(d) {
			for _, ix := range tb.Indexes {
				if tb.Name == "cks_task_events" && ix.In(d) && slices.Equal(ix.Keys, []Key{K("at")}) {
					got = append(got, IndexSQL(tb, ix, d))
				}
			}
		}
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%s: the events' time index %q, want %q", d, got, want)
		}
	}
}
