package drivertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Queries reads the named queries of the query files of the driver under
// test (internal/dbsqlc/*.sql of the test's directory, but the schema): the
// text of each "-- name: X" block without its comment lines. The plan tests
// of both drivers check what these files say, so a query edited there is
// checked as it runs.
func Queries(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("internal", "dbsqlc", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("query files: %v, %v", files, err)
	}
	out := map[string]string{}
	for _, f := range files {
		if filepath.Base(f) == "schema.sql" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := ""
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "-- name: "); ok {
				name = strings.Fields(rest)[0]
				continue
			}
			if name == "" || strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			out[name] += line + "\n"
		}
	}
	return out
}
