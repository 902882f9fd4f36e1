package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
)

// TestServeRefusesReadOnlyDatabase: `cks serve` on a database it cannot
// write exits non-zero at once with an error that says so, instead of
// serving 500s behind a healthy /healthz.
func TestServeRefusesReadOnlyDatabase(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		url := db.url
		if db.backend == "sqlite" {
			path := strings.TrimPrefix(url, "sqlite:")
			s, err := backend.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			backendtest.ReadOnlyFile(t, path)
		} else {
			url += "&default_transaction_read_only=on"
		}
		res := runCKS(t, nil, "serve", "--listen", "127.0.0.1:0", "--database", url, "--data-dir", filepath.Join(t.TempDir(), "data"))
		lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
		if last := lines[len(lines)-1]; res.code != 1 || !strings.Contains(last, "storage_read_only") || !strings.Contains(last, "read-only") {
			t.Fatalf("cks serve on a read-only %s database: exit %d, last line %q; want exit 1 saying it is read-only\n%s", db.backend, res.code, last, res.stderr)
		}
	})
}
