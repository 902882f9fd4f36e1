package drivertest

import (
	"context"
	"net/url"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver/internal/scratch"
)

// The test databases' support every test shares, from the drivers' own up:
// a scratch Postgres schema, URL settings, a read-only file and a test's
// context. internal/backend/backendtest builds its openers on them.

// Ctx returns a context that ends 30 s after the call, or when t ends: the
// bound on a test's database calls.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// PostgresURL creates a scratch schema on CKS_TEST_DATABASE_URL's server,
// dropped at the end of the test, and returns its URL. Without the
// variable the test is skipped, or fails when CI=true (scripts/test starts
// a server).
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("CKS_TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CKS_TEST_DATABASE_URL not set but CI=true (use scripts/test)")
		}
		t.Skip("CKS_TEST_DATABASE_URL not set: Postgres tests skipped")
	}
	url, drop, err := scratch.Schema(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(context.Background()) })
	return url
}

// ReadOnlyURL returns the Postgres URL u with every transaction of its
// connections read-only (default_transaction_read_only), as on a hot
// standby. Only connections opened with the URL are affected.
func ReadOnlyURL(u string) string { return WithParam(u, "default_transaction_read_only", "on") }

// WithParam returns the Postgres URL u with the parameter key=value added
// (a run-time setting of its connections, or a pgxpool one such as
// pool_max_conns), in either of the URL's forms.
func WithParam(u, key, value string) string {
	if !strings.Contains(u, "://") { // keyword/value form: host=… dbname=…
		return u + " " + key + "=" + value
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + key + "=" + value
}

// ReadOnlyFile makes the file at path unwritable for this process until the
// test ends: mode 0444, or, for root (whom modes do not stop), the
// immutable attribute (chattr +i). The test is skipped when neither can be
// had (root on a file system without chattr).
func ReadOnlyFile(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(path, st.Mode().Perm()) })
		return
	}
	if out, err := osexec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s read-only for root (chattr +i: %v %s)", path, err, out)
	}
	t.Cleanup(func() {
		if out, err := osexec.Command("chattr", "-i", path).CombinedOutput(); err != nil {
			t.Errorf("chattr -i %s: %v %s", path, err, out)
		}
	})
}

// PoolerURL creates a scratch database on CKS_TEST_DATABASE_URL's server,
// dropped at the end of the test, and returns its URL through the
// transaction-mode PgBouncer of CKS_TEST_POOLER_URL (scripts/with-postgres
// starts one when PgBouncer is installed), with cks_pooler=transaction, and
// with cks_listen naming the server itself when listen is set. Without the
// variables the test is skipped, or fails when CI=true.
func PoolerURL(t testing.TB, listen bool) string {
	t.Helper()
	direct, pooler := os.Getenv("CKS_TEST_DATABASE_URL"), os.Getenv("CKS_TEST_POOLER_URL")
	if direct == "" || pooler == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CKS_TEST_POOLER_URL not set but CI=true (scripts/test starts PgBouncer when it is installed: apt-get install pgbouncer)")
		}
		t.Skip("CKS_TEST_POOLER_URL not set: tests behind a pooler skipped")
	}
	name, drop, err := scratch.Database(context.Background(), direct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(context.Background()) })
	pu, err := url.Parse(pooler)
	if err != nil {
		t.Fatal(err)
	}
	pu.Path = "/" + name
	q := pu.Query()
	q.Set("cks_pooler", "transaction")
	if listen {
		du, err := url.Parse(direct)
		if err != nil {
			t.Fatal(err)
		}
		q.Set("cks_listen", du.Host)
	}
	pu.RawQuery = q.Encode()
	return pu.String()
}
