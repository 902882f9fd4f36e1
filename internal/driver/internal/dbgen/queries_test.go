package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/driver/schema"
)

// TestAnalyze: what a parameter and a result column are, by the rules of
// infer.go, and the SQL sent (stars expanded, parameters numbered).
func TestAnalyze(t *testing.T) {
	for _, c := range []struct {
		name    string
		d       schema.Dialect
		sql     string
		params  string // "name:type …" in order, Go types
		columns string
		model   string
		send    string // a part of the SQL sent
		err     string
	}{
		{name: "cast", d: schema.Postgres, sql: "SELECT task_id FROM cks_outbox_tasks WHERE parent_id = @parent::bigint AND task_id > @after LIMIT @max",
			params: "parent:int64 after:int64 max:int32", columns: "task_id:int64", send: "parent_id = $1::bigint AND task_id > $2 LIMIT $3"},
		{name: "a nullable column makes a nullable parameter", d: schema.Postgres, sql: "SELECT * FROM cks_outbox_tasks WHERE run_after <= @now",
			params: "now:pgtype.Timestamptz", model: "cks_outbox_tasks", send: "SELECT task_id, type, title,"},
		{name: "collation", d: schema.Postgres, sql: `SELECT instance_id FROM cks_agent_liveness WHERE instance_id COLLATE "C" > @after_instance_id`,
			params: "after_instance_id:string", columns: "instance_id:string"},
		{name: "insert by place", d: schema.SQLite, sql: "INSERT INTO cks_task_deps (task_id, depends_on) VALUES (@a, @b)",
			params: "a:int64 b:int64", send: "VALUES (?1, ?2)"},
		{name: "sqlite cast", d: schema.SQLite, sql: "SELECT task_id FROM cks_outbox_tasks WHERE (CAST(@match AS TEXT) = '' OR title = @match)",
			params: "match:string", columns: "task_id:int64"},
		{name: "narg", d: schema.Postgres, sql: "UPDATE cks_outbox_tasks SET title = sqlc.narg(title) WHERE task_id = @id",
			params: "title:*string id:int64", send: "SET title = $1 WHERE task_id = $2"},
		{name: "alias star and a column of an expression", d: schema.Postgres,
			sql:     "SELECT t.*, count(*) AS n FROM cks_outbox_tasks t GROUP BY t.task_id",
			columns: "task_id:int64 type:string", send: "SELECT t.task_id, t.type, t.title"},
		{name: "a subquery's columns", d: schema.SQLite,
			sql:    "SELECT k.task_id FROM (SELECT task_id, state = @s AS done FROM cks_outbox_tasks) k ORDER BY k.done",
			params: "s:string", columns: "task_id:int64"},
		{name: "unknown", d: schema.Postgres, sql: "SELECT task_id FROM cks_outbox_tasks WHERE @x", err: "cannot tell the type of @x"},
		{name: "unknown column", d: schema.Postgres, sql: "SELECT nope FROM cks_outbox_tasks", err: "no column nope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			toks, err := lex(c.sql)
			if err != nil {
				t.Fatal(err)
			}
			a, err := newCatalog(c.d).analyze(&sqlQuery{name: "Q", kind: ":many", toks: toks})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ps []string
			for _, p := range a.params {
				ps = append(ps, p.name+":"+goType(c.d, p.typ))
			}
			if got := strings.Join(ps, " "); got != c.params {
				t.Errorf("params %q, want %q", got, c.params)
			}
			if c.columns != "" {
				var cs []string
				for _, col := range a.columns {
					cs = append(cs, col.name+":"+goType(c.d, col.typ))
				}
				if got := strings.Join(cs, " "); !strings.HasPrefix(got, c.columns) {
					t.Errorf("columns %q, want %q…", got, c.columns)
				}
			}
			if a.model != c.model {
				t.Errorf("model %q, want %q", a.model, c.model)
			}
			if !strings.Contains(a.sql, c.send) {
				t.Errorf("SQL sent %q lacks %q", a.sql, c.send)
			}
		})
	}
}

// TestQueriesMethodsCalled (issue 40): every method queries_gen.go has is
// called by the driver (its own files, tests or executor_gen.go): the
// generator writes no method nothing calls.
func TestQueriesMethodsCalled(t *testing.T) {
	method := regexp.MustCompile(`(?m)^func \(q \*Queries\) (\w+)\(`)
	for _, d := range schema.Dialects {
		dir := filepath.Join("..", "..", string(d))
		gen, err := os.ReadFile(filepath.Join(dir, "internal", "dbsqlc", queriesFile))
		if err != nil {
			t.Fatal(err)
		}
		var callers strings.Builder
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			callers.WriteString(string(b))
		}
		ms := method.FindAllStringSubmatch(string(gen), -1)
		if len(ms) == 0 {
			t.Fatalf("%s: no methods in %s", d, queriesFile)
		}
		calls := matches(callers.String(), `(?:^|\W)q\.(\w+)`)
		for _, m := range ms {
			if !calls[m[1]] {
				t.Errorf("%s: dbsqlc's %s is called by nothing", d, m[1])
			}
		}
	}
}

// TestUnusedQueryRefused: a query that nothing uses is an error of
// generate, naming it.
func TestUnusedQueryRefused(t *testing.T) {
	root := t.TempDir()
	copyTree(t, filepath.Join("..", "..", "driver.go"), filepath.Join(root, "driver.go"))
	dir := filepath.Join(root, "sqlite")
	copyTree(t, filepath.Join("..", "..", "sqlite"), dir)
	f := filepath.Join(dir, "internal", "dbsqlc", "tasks.sql")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "\n-- name: NobodysQuery :one\nSELECT count(*) FROM cks_outbox_tasks;\n"...)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := render(dir); err == nil || !strings.Contains(err.Error(), "NobodysQuery") {
		t.Fatalf("render = %v, want an error naming NobodysQuery", err)
	}
}

// copyTree copies the file or the directory from to to (Go and SQL files).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".sql") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVariants: a family is written once and rendered per variant; a
// fragment is included where a query names it; a malformed marker is an
// error.
func TestVariants(t *testing.T) {
	file := `-- fragment: mine
AND created_by = @me;

-- The doc.
-- name: TaskGet :many
-- variants: ForUpdate Desc Old
SELECT * FROM cks_outbox_tasks WHERE task_id > @after /*include mine*/
ORDER BY task_id /*if Desc Old*/DESC/*elif ForUpdate*/ASC/*else*/NULLS LAST/*end*/ /*lock*/;
`
	qs, err := parseQueryFile("f.sql", file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"TaskGet":          "SELECT * FROM cks_outbox_tasks WHERE task_id > @after AND created_by = @me ORDER BY task_id NULLS LAST",
		"TaskGetForUpdate": "SELECT * FROM cks_outbox_tasks WHERE task_id > @after AND created_by = @me ORDER BY task_id ASC FOR UPDATE",
		"TaskGetDesc":      "SELECT * FROM cks_outbox_tasks WHERE task_id > @after AND created_by = @me ORDER BY task_id DESC",
		"TaskGetOld":       "SELECT * FROM cks_outbox_tasks WHERE task_id > @after AND created_by = @me ORDER BY task_id DESC",
	}
	if len(qs) != len(want) {
		t.Fatalf("%d queries, want %d", len(qs), len(want))
	}
	for _, q := range qs {
		got := strings.Join(strings.Fields(joinText(q.toks)), " ")
		if got != want[q.name] {
			t.Errorf("%s:\n got %s\nwant %s", q.name, got, want[q.name])
		}
		if strings.Join(q.doc, "|") != "The doc." {
			t.Errorf("%s: doc %q", q.name, q.doc)
		}
	}
	for _, bad := range []string{
		"-- name: Q :one\nSELECT 1 /*if A*/x/*end*/;\n",                          // no variants declared
		"-- name: Q :one\n-- variants: A\nSELECT 1 /*if A*/x;\n",                 // no end
		"-- name: Q :one\n-- variants: A\nSELECT 1 /*if A*/x/*if A*/y/*end*/;\n", // nested
		"-- name: Q :one\nSELECT 1 /*include nope*/;\n",                          // no such fragment
	} {
		if _, err := parseQueryFile("f.sql", bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
