package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/service/auth"
)

func openStore(t testing.TB, dir string) *backend.Backend {
	t.Helper()
	s, err := backend.Open(context.Background(), filepath.Join(dir, "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEnsureAdminToken(t *testing.T) {
	ctx := context.Background()
	dir := datadir.Dir(t.TempDir())
	s := openStore(t, string(dir))
	c := clock.NewFake(backendtest.T0)

	created, err := auth.EnsureAdminToken(ctx, s.Principals, dir, c)
	if err != nil || !created {
		t.Fatalf("first start: created=%v err=%v, want a new token", created, err)
	}
	st, err := os.Stat(dir.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", st.Mode().Perm())
	}
	tok, err := dir.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Principals.Authenticate(ctx, tok)
	if err != nil || p.Name != "admin" {
		t.Fatalf("stored token does not authenticate: %+v %v", p, err)
	}
	grants, err := s.Principals.GrantsOf(ctx, p.ID)
	if err != nil || len(grants) != 1 || grants[0] != (cks.Grant{Resource: "/", Permission: auth.PermAdmin}) {
		t.Fatalf("admin grants = %v, %v", grants, err)
	}
	// Only the hash is in the database.
	db, _ := os.ReadFile(filepath.Join(string(dir), "cks.db"))
	wal, _ := os.ReadFile(filepath.Join(string(dir), "cks.db-wal"))
	if strings.Contains(string(db)+string(wal), tok) {
		t.Fatal("the plain token is stored in the database")
	}

	created, err = auth.EnsureAdminToken(ctx, s.Principals, dir, c)
	if err != nil || created {
		t.Fatalf("second start: created=%v err=%v, want the existing token kept", created, err)
	}
	if again, _ := dir.ReadToken(); again != tok {
		t.Fatal("second start replaced a valid token")
	}

	// Same data directory, fresh database: the stale file is replaced.
	other := openStore(t, t.TempDir())
	created, err = auth.EnsureAdminToken(ctx, other.Principals, dir, c)
	if err != nil || !created {
		t.Fatalf("fresh database: created=%v err=%v, want a new token", created, err)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	s := openStore(t, t.TempDir())
	a := s.Principals
	unknown, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, tok, want string }{
		{"missing", "", "missing token"},
		{"no prefix", "abc", "malformed token"},
		{"short", "cks_abc", "malformed token"},
		{"bad alphabet", "cks_" + strings.Repeat("!", 43), "malformed token"},
		{"unknown", unknown, "unknown token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := a.Authenticate(context.Background(), c.tok)
			if !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrUnauthenticated saying %q", err, c.want)
			}
		})
	}
}
