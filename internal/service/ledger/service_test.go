package ledger_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/postgres"
	"github.com/cks-dev/cks/internal/driver/sqlite"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// BenchmarkLedger is backendtest.BenchLedger over the service, per dialect.
func BenchmarkLedger(b *testing.B) {
	for _, d := range backendtest.All() {
		b.Run(d.Name, func(b *testing.B) {
			backendtest.BenchLedger(b, func(t testing.TB) *backend.Backend { return d.NewDB(t)(t) })
		})
	}
}

// TestStorageFaults: the service's writes on a database that refuses them
// (a read-only SQLite file, a Postgres server that runs transactions
// read-only) fail with cks.ErrStorageReadOnly — the drivers classify the
// error, the service passes it on — and write nothing, while reads go on.
// (backendtest.StorageFaults checks the composite store; a full database is
// the drivers' own test: the service adds nothing to the error.)
func TestStorageFaults(t *testing.T) {
	seeded := func(t testing.TB, d driver.Driver) {
		t.Helper()
		if _, _, err := ledger.NewService(d, nil).Enqueue(context.Background(), backendtest.SeedTask); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	for _, c := range []struct {
		name     string
		readOnly func(t *testing.T) driver.Driver
	}{
		{"sqlite", func(t *testing.T) driver.Driver {
			path := filepath.Join(t.TempDir(), "cks.db")
			d, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			seeded(t, d)
			backendtest.ReadOnlyFile(t, path)
			if d, err = sqlite.Open(context.Background(), path); err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"postgres", func(t *testing.T) driver.Driver {
			url := backendtest.PostgresURL(t)
			d, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			seeded(t, d)
			if d, err = postgres.Open(context.Background(), backendtest.ReadOnlyURL(url)); err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := c.readOnly(t)
			t.Cleanup(func() { d.Close() })
			s, ctx := ledger.NewService(d, nil), context.Background()
			writes := map[string]func() error{
				"Enqueue": func() error { _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "t"}); return err },
				"Claim": func() error {
					_, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", N: 1, Lease: time.Minute})
					return err
				},
				"Cancel": func() error { _, err := s.Cancel(ctx, 1, "op", "no"); return err },
				"Update": func() error {
					title := "x"
					_, err := s.UpdateTask(ctx, ledger.UpdateParams{ID: 1, Actor: "op", Patch: cks.TaskPatch{Title: &title}})
					return err
				},
			}
			if c.name == "postgres" {
				// With no abort due, the sweep writes nothing; Postgres refuses
				// even its locking read (FOR UPDATE) in a read-only
				// transaction, SQLite lets a write transaction that writes
				// nothing commit.
				writes["ExpireAborts"] = func() error { _, err := s.ExpireAborts(ctx, time.Now()); return err }
			}
			for name, write := range writes {
				if err := write(); !errors.Is(err, cks.ErrStorageReadOnly) || !errors.Is(err, cks.ErrUnavailable) {
					t.Errorf("%s on a read-only database: %v, want ErrStorageReadOnly", name, err)
				}
			}
			page, err := s.ListTasks(ctx, cks.TaskFilter{})
			if err != nil || len(page.Tasks) != 1 || page.Tasks[0].Title != backendtest.SeedTask.Title || page.Tasks[0].State != cks.TaskOpen {
				t.Fatalf("reads of a read-only database: %+v %v, want the seed task alone, OPEN", page.Tasks, err)
			}
		})
	}
}
