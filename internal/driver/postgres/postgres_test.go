package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/postgres"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testCtx bounds a test's calls (drivertest.Ctx).
var testCtx = drivertest.Ctx

// open opens a Driver on url, closed when t ends.
func open(t testing.TB, url string, opts ...driver.Option) *postgres.Driver {
	t.Helper()
	d, err := postgres.Open(testCtx(t), url, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// rawExec runs q on a connection of its own to url (the scratch schema).
func rawExec(t testing.TB, url, q string, args ...any) error {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("raw connection: %v", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, q, args...)
	return err
}

// newDB is a fresh scratch schema on CKS_TEST_DATABASE_URL's server.
func newDB(t testing.TB) drivertest.DB {
	url := drivertest.PostgresURL(t)
	return drivertest.DB{
		Name: url,
		Open: func(t testing.TB, opts ...driver.Option) driver.Driver { return open(t, url, opts...) },
		Exec: func(t testing.TB, q string) error { return rawExec(t, url, q) },
	}
}

func TestConformance(t *testing.T) { drivertest.Run(t, newDB) }
