package drivertest

import (
	"path/filepath"
	"testing"

	"github.com/cks-dev/cks/internal/driver/internal/querytext"
)

// Queries reads the named queries of the query files of the driver under
// test (internal/dbsqlc/*.sql of the test's directory, but the schema), as
// querytext renders them: every variant of a family by its name, fragments
// included, the parameters by their names. The plan tests of both drivers
// check what these files say, so a query edited there is checked as it
// runs.
func Queries(t testing.TB) map[string]string {
	t.Helper()
	qs, err := querytext.ReadDir(filepath.Join("internal", "dbsqlc"))
	if err != nil || len(qs) == 0 {
		t.Fatalf("query files: %d queries, %v", len(qs), err)
	}
	out := map[string]string{}
	for _, q := range qs {
		out[q.Name] = q.Text + "\n"
	}
	return out
}
