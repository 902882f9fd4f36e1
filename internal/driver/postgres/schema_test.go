package postgres_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/postgres"
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
// identity), constraint, index, trigger, function and table's storage
// parameters, with the schema's own name taken out. Column order is not a
// fact: a column added by an upgrade comes last.
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
	out = append(out, texts(t, c, `SELECT concat_ws('|', 'options', relname, array_to_string(reloptions, ',')) FROM pg_class
	WHERE relnamespace = current_schema()::regnamespace AND reloptions IS NOT NULL`)...)
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

// TestUpgradesOlderEvidence: evidence before restart, tasks before
// metadata, no aborts or decisions tables.
func TestUpgradesOlderEvidence(t *testing.T) {
	db := newDB(t)
	url := db.Name
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
	scratch.UpgradeIn(t, db)
	got := texts(t, conn(t, url), `SELECT concat_ws('|', t.metadata, e.restart, e.body) FROM cks_outbox_tasks t
		JOIN cks_task_evidence e ON e.task_id = t.task_id`)
	if want := []string{"{}|0|x"}; !slices.Equal(got, want) {
		t.Fatalf("upgraded task and evidence %q, want %q", got, want)
	}
}

// TestConcurrentOpen opens one empty schema from many drivers at once, as
// several hubs starting together would: the advisory lock serialises the
// schema step.
func TestConcurrentOpen(t *testing.T) {
	url := drivertest.PostgresURL(t)
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
	drivertest.SameSchema(t, "the schema opened at once", schemaOf(t, url), scratch.Fresh(t))
}

// lines reads q's rows in url as "a|b|…" lines of Postgres' text of each
// column (NULL as "NULL"), times in UTC.
func lines(t testing.TB, url, q string) []string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	c, err := pgx.ConnectConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(testCtx(t), q, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		raw := rows.RawValues()
		parts := make([]string, len(raw))
		for i, v := range raw {
			parts[i] = "NULL"
			if v != nil {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// scratch is the schema tests' access to scratch schemas.
var scratch = drivertest.Scratch{
	NewDB:           newDB,
	Query:           lines,
	Schema:          schemaOf,
	Columns:         columnsOf,
	TimeLayout:      "2006-01-02 15:04:05.999999-07",
	True:            "t",
	Brackets:        "{}",
	VersionsTrigger: "cks_object_versions_no_change",
	Retired: []string{"constraint|cks_task_events|cks_task_events_task_id_fkey|",
		"index|idx_outbox_tasks_lease|", "index|idx_outbox_tasks_state_changed|", "index|idx_outbox_tasks_claim|",
		"index|idx_task_events_task|", "constraint|cks_task_events|cks_task_events_pkey|PRIMARY KEY (event_id)",
		"index|cks_task_events_pkey|CREATE UNIQUE INDEX cks_task_events_pkey ON SCHEMA.cks_task_events USING btree (event_id)"},
	Added: []string{"index|idx_outbox_tasks_leased|", "options|cks_outbox_tasks|fillfactor=70", "index|idx_task_events_at_brin|", "options|idx_task_events_at_brin|", "index|idx_outbox_tasks_stopped|",
		"index|idx_outbox_tasks_claim_type|", "index|idx_outbox_tasks_settled|",
		"constraint|cks_task_events|cks_task_events_pkey|PRIMARY KEY (task_id, event_id)",
		"index|cks_task_events_pkey|CREATE UNIQUE INDEX cks_task_events_pkey ON SCHEMA.cks_task_events USING btree (task_id, event_id)"},
}

// TestSchema runs the schema checks (drivertest.Scratch) on this dialect.
func TestSchema(t *testing.T) { scratch.Run(t) }
