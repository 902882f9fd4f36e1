package main

import (
	"testing"

	"github.com/cks-dev/cks/internal/driver/schema"
)

// FuzzAnalyze: no query text makes the lexer or the analysis panic.
func FuzzAnalyze(f *testing.F) {
	f.Add("SELECT * FROM cks_outbox_tasks WHERE task_id = @id")
	f.Add("WITH x(a) AS (SELECT task_id FROM cks_outbox_tasks) SELECT x.* FROM x")
	f.Add("INSERT INTO cks_task_deps (task_id, depends_on) SELECT @a, unnest(@b::bigint[])")
	f.Add("WITH")
	f.Add("SELECT 'unterminated")
	cats := []*catalog{newCatalog(schema.Postgres), newCatalog(schema.SQLite)}
	f.Fuzz(func(t *testing.T, sql string) {
		toks, err := lex(sql)
		if err != nil {
			return
		}
		for _, c := range cats {
			_, _ = c.analyze(&sqlQuery{name: "Q", kind: ":many", toks: toks})
		}
	})
}
