package backendtest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, for fixtures written in SQL
)

// ExecSQL runs stmts in order on the database of backend name ("sqlite":
// the file at url; "postgres": the database url names) over a connection
// of its own: the fixtures benchmarks write by INSERT … SELECT, in seconds
// where the services would take hours.
func ExecSQL(tb testing.TB, name, url string, stmts ...string) {
	tb.Helper()
	if name == "sqlite" {
		db, err := sql.Open("sqlite", url)
		if err != nil {
			tb.Fatal(err)
		}
		defer db.Close()
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				tb.Fatalf("%s: %v", q, err)
			}
		}
		return
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range stmts {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}
