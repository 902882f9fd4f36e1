package auth_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
)

// TestPrincipals: the principals' records (CreatePrincipal, the lookup by
// token hash, the grants, ListPrincipals and DeletePrincipal) and the
// studio's sessions, on both backends.
func TestPrincipals(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"Principals":                       testPrincipals,
		"PrincipalsList":                   testPrincipalsList,
		"PrincipalsDelete":                 testPrincipalsDelete,
		"PrincipalsDeleteLastAdmin":        testPrincipalsDeleteLastAdmin,
		"PrincipalsDeleteConcurrentAdmins": testPrincipalsDeleteConcurrentAdmins,
		"Sessions":                         testSessions,
		"AuthenticateWithGrants":           testAuthenticateWithGrants,
		"SessionsExpire":                   testSessionsExpire,
		"SessionsCapped":                   testSessionsCapped,
		"SessionsPaged":                    testSessionsPaged,
	})
}

func mustPrincipal(t *testing.T, s *backend.Backend, id string, at time.Time, grants ...cks.Grant) {
	t.Helper()
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: id, Name: "name-" + id, CreatedAt: at}, "hash-"+id, grants); err != nil {
		t.Fatalf("create principal %s: %v", id, err)
	}
}

var adminGrant = cks.Grant{Resource: auth.AdminResource, Permission: auth.AdminPermission}

func testPrincipalsList(t *testing.T, open backendtest.Opener) {
	s := open(t)
	if ps, err := s.Principals.ListPrincipals(ctx(t)); err != nil || len(ps) != 0 {
		t.Fatalf("empty store: %v, %v; want none", ps, err)
	}
	mustPrincipal(t, s, "b", backendtest.T0.Add(time.Minute), cks.Grant{Resource: "/tasks/12", Permission: "read"},
		cks.Grant{Resource: "/tasks/12", Permission: "append"}, cks.Grant{Resource: "/tasks", Permission: "create"})
	mustPrincipal(t, s, "a", backendtest.T0, adminGrant)
	mustPrincipal(t, s, "c", backendtest.T0.Add(time.Minute)) // no grants; same time as b, after it by id
	ps, err := s.Principals.ListPrincipals(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "[{a name-a [{/ admin}]} {b name-b [{/tasks create} {/tasks/12 append} {/tasks/12 read}]} {c name-c []}]"
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("{%s %s %v}", p.ID, p.Name, p.Grants))
	}
	if fmt.Sprint(got) != want {
		t.Fatalf("ListPrincipals = %v, want %s", got, want)
	}
	if !ps[0].CreatedAt.Equal(backendtest.T0) || !ps[1].CreatedAt.Equal(backendtest.T0.Add(time.Minute)) {
		t.Fatalf("created_at = %v, %v; want %v, %v", ps[0].CreatedAt, ps[1].CreatedAt, backendtest.T0, backendtest.T0.Add(time.Minute))
	}
	if ps[2].Grants == nil {
		t.Fatal("a principal without grants lists nil grants; want an empty list")
	}
}

func testPrincipalsDelete(t *testing.T, open backendtest.Opener) {
	s := open(t)
	mustPrincipal(t, s, "admin", backendtest.T0, adminGrant)
	mustPrincipal(t, s, "agent", backendtest.T0, cks.Grant{Resource: "/tasks/1", Permission: "read"})
	if err := s.Principals.DeletePrincipal(ctx(t), "agent"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-agent"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("deleted principal's token: err = %v, want ErrNotFound", err)
	}
	if gs, err := s.Principals.GrantsOf(ctx(t), "agent"); err != nil || len(gs) != 0 {
		t.Fatalf("deleted principal's grants = %v, %v; want none", gs, err)
	}
	if err := s.Principals.DeletePrincipal(ctx(t), "agent"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("second delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Principals.DeletePrincipal(ctx(t), "nobody"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("unknown id: err = %v, want ErrNotFound", err)
	}
	// A new principal may reuse the deleted one's id; it starts without the old grants.
	mustPrincipal(t, s, "agent", backendtest.T0)
	if gs, err := s.Principals.GrantsOf(ctx(t), "agent"); err != nil || len(gs) != 0 {
		t.Fatalf("recreated principal's grants = %v, %v; want none", gs, err)
	}
}

func testPrincipalsDeleteLastAdmin(t *testing.T, open backendtest.Opener) {
	s := open(t)
	mustPrincipal(t, s, "admin-1", backendtest.T0, adminGrant)
	// Admin on a subtree is not admin on /.
	mustPrincipal(t, s, "sub", backendtest.T0, cks.Grant{Resource: "/tasks", Permission: auth.AdminPermission})
	err := s.Principals.DeletePrincipal(ctx(t), "admin-1")
	if !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("deleting the last admin: err = %v, want ErrConflict", err)
	}
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-admin-1"); err != nil {
		t.Fatalf("refused delete removed the admin: %v", err)
	}
	mustPrincipal(t, s, "admin-2", backendtest.T0, adminGrant)
	if err := s.Principals.DeletePrincipal(ctx(t), "admin-1"); err != nil {
		t.Fatalf("deleting one of two admins: %v", err)
	}
	if err := s.Principals.DeletePrincipal(ctx(t), "admin-2"); !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("deleting the remaining admin: err = %v, want ErrConflict", err)
	}
	if err := s.Principals.DeletePrincipal(ctx(t), "sub"); err != nil {
		t.Fatalf("deleting a non-admin: %v", err)
	}
}

func testPrincipalsDeleteConcurrentAdmins(t *testing.T, open backendtest.Opener) {
	s := open(t)
	const n = 4
	for i := range n {
		mustPrincipal(t, s, fmt.Sprint("admin-", i), backendtest.T0, adminGrant)
	}
	var (
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		deleted, conflicted int
	)
	for i := range n {
		wg.Go(func() {
			err := s.Principals.DeletePrincipal(ctx(t), fmt.Sprint("admin-", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				deleted++
			case errors.Is(err, cks.ErrConflict):
				conflicted++
			default:
				t.Errorf("delete admin-%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if deleted != n-1 || conflicted != 1 {
		t.Fatalf("concurrent deletes of %d admins: %d deleted, %d refused; want %d and 1", n, deleted, conflicted, n-1)
	}
}

func mustSession(t *testing.T, s *backend.Backend, id, principal string, at time.Time, ttl time.Duration) cks.Session {
	t.Helper()
	sess := cks.Session{ID: id, PrincipalID: principal, CreatedAt: at, ExpiresAt: at.Add(ttl)}
	if err := s.Principals.CreateSession(ctx(t), sess, "secret-"+id); err != nil {
		t.Fatalf("create session %s: %v", id, err)
	}
	sess.PrincipalName = "name-" + principal
	return sess
}

// testSessions: a session authenticates its principal by its secret's
// hash, lists without it, is deleted by id, and goes with its principal.
func testSessions(t *testing.T, open backendtest.Opener) {
	s := open(t)
	mustPrincipal(t, s, "admin", backendtest.T0, adminGrant)
	mustPrincipal(t, s, "reader", backendtest.T0, cks.Grant{Resource: "/", Permission: "read"})
	a := mustSession(t, s, "s-a", "admin", backendtest.T0, time.Hour)
	r := mustSession(t, s, "s-r", "reader", backendtest.T0.Add(time.Second), time.Hour)
	if err := s.Principals.CreateSession(ctx(t), cks.Session{ID: "s-x", PrincipalID: "nobody", CreatedAt: backendtest.T0, ExpiresAt: backendtest.T0.Add(time.Hour)},
		"secret-x"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("session of an unknown principal: err = %v, want ErrNotFound", err)
	}
	if err := s.Principals.CreateSession(ctx(t), cks.Session{ID: "s-a", PrincipalID: "admin", CreatedAt: backendtest.T0, ExpiresAt: backendtest.T0.Add(time.Hour)},
		"secret-other"); !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("duplicate session id: err = %v, want ErrConflict", err)
	}
	var fe *cks.FieldError
	if err := s.Principals.CreateSession(ctx(t), cks.Session{ID: "s-y", PrincipalID: "admin", CreatedAt: backendtest.T0, ExpiresAt: backendtest.T0},
		"secret-y"); !errors.As(err, &fe) || fe.Field != "expires_at" {
		t.Fatalf("session expiring at its creation: err = %v, want a FieldError naming expires_at", err)
	}
	p, got, err := s.Principals.SessionBySecretHash(ctx(t), "secret-s-r", backendtest.T0.Add(time.Minute))
	if err != nil || p.ID != "reader" || got != r {
		t.Fatalf("by secret = %+v, %+v, %v; want reader's %+v", p, got, err, r)
	}
	if _, _, err := s.Principals.SessionBySecretHash(ctx(t), "secret-nope", backendtest.T0); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("unknown secret: err = %v, want ErrNotFound", err)
	}
	list, err := s.Principals.ListSessions(ctx(t), cks.ListSessionsInput{})
	if err != nil || len(list.Sessions) != 2 || list.Sessions[0] != r || list.Sessions[1] != a || list.Total != 2 || list.Next != "" {
		t.Fatalf("ListSessions = %+v, %v; want %+v, %+v (newest first), total 2", list, err, r, a)
	}
	if err := s.Principals.DeleteSession(ctx(t), "s-a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Principals.SessionBySecretHash(ctx(t), "secret-s-a", backendtest.T0); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("deleted session: err = %v, want ErrNotFound", err)
	}
	if err := s.Principals.DeleteSession(ctx(t), "s-a"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("second delete: err = %v, want ErrNotFound", err)
	}
	// Revoking the principal ends its sessions.
	if err := s.Principals.DeletePrincipal(ctx(t), "reader"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Principals.SessionBySecretHash(ctx(t), "secret-s-r", backendtest.T0); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("session of a deleted principal: err = %v, want ErrNotFound", err)
	}
	if list, err := s.Principals.ListSessions(ctx(t), cks.ListSessionsInput{}); err != nil || len(list.Sessions) != 0 || list.Total != 0 {
		t.Fatalf("sessions left: %+v, %v; want none", list, err)
	}
}

// testSessionsCapped (issue 38.6): a principal keeps at most
// MaxSessionsPerPrincipal sessions — a sign-in past them signs out its
// oldest, the new one always kept, even when all were opened at the same
// instant — and another principal's sessions are untouched; on main a
// token opened 20,000.
func testSessionsCapped(t *testing.T, open backendtest.Opener) {
	s := open(t)
	mustPrincipal(t, s, "admin", backendtest.T0, adminGrant)
	mustPrincipal(t, s, "reader", backendtest.T0, cks.Grant{Resource: "/tasks/1", Permission: "read"})
	mustSession(t, s, "admin-1", "admin", backendtest.T0, time.Hour)
	const n = auth.MaxSessionsPerPrincipal + 5
	var last cks.Session
	for i := range n {
		// The last six all at one instant: the new one is kept whatever its id.
		at := backendtest.T0.Add(time.Duration(min(i, n-6)) * time.Second)
		last = mustSession(t, s, fmt.Sprintf("r%02d", n-i), "reader", at, time.Hour)
		if _, _, err := s.Principals.SessionBySecretHash(ctx(t), "secret-"+last.ID, at); err != nil {
			t.Fatalf("the session just opened, %s: %v", last.ID, err)
		}
	}
	list, err := s.Principals.ListSessions(ctx(t), cks.ListSessionsInput{Limit: cks.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	readers := 0
	for _, x := range list.Sessions {
		if x.PrincipalID == "reader" {
			readers++
		}
	}
	if readers != auth.MaxSessionsPerPrincipal || list.Total != readers+1 || !slices.ContainsFunc(list.Sessions, func(x cks.Session) bool { return x.ID == "admin-1" }) {
		t.Fatalf("after %d sign-ins: %d of reader's sessions, total %d; want %d, and admin's kept", n, readers, list.Total, auth.MaxSessionsPerPrincipal)
	}
	if _, _, err := s.Principals.SessionBySecretHash(ctx(t), fmt.Sprintf("secret-r%02d", n), backendtest.T0); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("the oldest session after the cap: %v, want signed out", err)
	}
}

// testSessionsPaged (issue 38.6): list_sessions pages newest first, every
// session once, each page at most its limit, total on every page; a bad
// cursor or limit is a FieldError naming it.
func testSessionsPaged(t *testing.T, open backendtest.Opener) {
	s := open(t)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("p%d", i)
		mustPrincipal(t, s, id, backendtest.T0, adminGrant)
		for j := range 3 {
			sess := mustSession(t, s, fmt.Sprintf("%s-%d", id, j), id, backendtest.T0.Add(time.Duration(j)*time.Second), time.Hour)
			want = append(want, sess.ID)
		}
	}
	var got []string
	in := cks.ListSessionsInput{Limit: 4}
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("list_sessions does not end")
		}
		page, err := s.Principals.ListSessions(ctx(t), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) > 4 || page.Total != len(want) {
			t.Fatalf("page of %d sessions, total %d; want at most 4, total %d", len(page.Sessions), page.Total, len(want))
		}
		for i, x := range page.Sessions {
			if x.PrincipalName != "name-"+x.PrincipalID {
				t.Fatalf("session %s names principal %q", x.ID, x.PrincipalName)
			}
			if i > 0 && x.CreatedAt.After(page.Sessions[i-1].CreatedAt) {
				t.Fatalf("page not newest first: %+v", page.Sessions)
			}
			got = append(got, x.ID)
		}
		if page.Next == "" {
			break
		}
		in.Cursor = page.Next
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("paged %q, want every session once: %q", got, want)
	}
	for _, c := range []struct {
		in    cks.ListSessionsInput
		field string
	}{{cks.ListSessionsInput{Limit: -1}, "limit"}, {cks.ListSessionsInput{Limit: cks.MaxListLimit + 1}, "limit"},
		{cks.ListSessionsInput{Cursor: "nope"}, "cursor"}, {cks.ListSessionsInput{Cursor: "1.\x00"}, "cursor"}} {
		if _, err := s.Principals.ListSessions(ctx(t), c.in); !cks.IsFieldError(err, c.field) {
			t.Errorf("ListSessions(%+v) = %v, want a FieldError naming %s", c.in, err, c.field)
		}
	}
}

// testSessionsExpire: from its expires_at on a session is refused and
// deleted; DeleteEndedCredentials removes the expired ones nobody presents.
func testSessionsExpire(t *testing.T, open backendtest.Opener) {
	s := open(t)
	mustPrincipal(t, s, "admin", backendtest.T0, adminGrant)
	mustSession(t, s, "short", "admin", backendtest.T0, time.Minute)
	mustSession(t, s, "idle", "admin", backendtest.T0, time.Minute)
	long := mustSession(t, s, "long", "admin", backendtest.T0, time.Hour)
	if _, _, err := s.Principals.SessionBySecretHash(ctx(t), "secret-short", backendtest.T0.Add(time.Minute-time.Microsecond)); err != nil {
		t.Fatalf("a session just before its expiry: %v", err)
	}
	if _, _, err := s.Principals.SessionBySecretHash(ctx(t), "secret-short", backendtest.T0.Add(time.Minute)); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("a session at its expiry: err = %v, want ErrNotFound", err)
	}
	if list, _ := s.Principals.ListSessions(ctx(t), cks.ListSessionsInput{}); len(list.Sessions) != 2 {
		t.Fatalf("after an expired session was presented: %+v, want it deleted", list)
	}
	if n, err := s.Principals.DeleteEndedCredentials(ctx(t), backendtest.T0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("DeleteEndedCredentials = %d, %v; want 1 (idle)", n, err)
	}
	if list, _ := s.Principals.ListSessions(ctx(t), cks.ListSessionsInput{}); len(list.Sessions) != 1 || list.Sessions[0] != long {
		t.Fatalf("sessions left: %+v, want only %+v", list, long)
	}
}

// ctx bounds a test's calls: backendtest.Ctx.
var ctx = backendtest.Ctx

func testPrincipals(t *testing.T, open backendtest.Opener) {
	s := open(t)
	p := cks.Principal{ID: "p-1", Name: "admin", CreatedAt: backendtest.T0}
	grants := []cks.Grant{{Resource: "/", Permission: "admin"}, {Resource: "/", Permission: "read"}}
	if err := s.Principals.CreatePrincipal(ctx(t), p, "hash-1", grants); err != nil {
		t.Fatal(err)
	}
	got, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != p.ID || got.Name != p.Name || !got.CreatedAt.Equal(p.CreatedAt) {
		t.Fatalf("principal = %+v, want %+v", got, p)
	}
	gs, err := s.Principals.GrantsOf(ctx(t), "p-1")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gs) != fmt.Sprint(grants) {
		t.Fatalf("grants = %v, want %v", gs, grants)
	}
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "other"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("unknown hash: err = %v, want ErrNotFound", err)
	}
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: "p-2", Name: "x", CreatedAt: backendtest.T0}, "hash-1", nil); !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("duplicate token hash: err = %v, want ErrConflict", err)
	}
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: "p-1", Name: "x", CreatedAt: backendtest.T0}, "hash-2", nil); !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("duplicate id: err = %v, want ErrConflict", err)
	}
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-2"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("rejected principal was stored: err = %v", err)
	}
}

// testAuthenticateWithGrants: a bearer token's principal and grants come
// back together; the checks of a context that carries them use them (not
// a read: they stand after the principal is gone), and ForgetGrants makes
// its checks read again (the principal gone: refused).
func testAuthenticateWithGrants(t *testing.T, open backendtest.Opener) {
	s := open(t)
	_, tok, err := auth.CreateToken(ctx(t), s.Principals, nil, "reader", []cks.Grant{
		{Resource: "/tasks", Permission: auth.PermRead}, {Resource: "/objects", Permission: auth.PermCreate}})
	if err != nil {
		t.Fatal(err)
	}
	p, grants, err := s.Principals.AuthenticateWithGrants(ctx(t), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := []cks.Grant{{Resource: "/objects", Permission: auth.PermCreate}, {Resource: "/tasks", Permission: auth.PermRead}}
	if p.Name != "reader" || fmt.Sprint(grants) != fmt.Sprint(want) {
		t.Fatalf("authenticated %+v with %v, want reader with %v", p, grants, want)
	}
	if _, _, err := s.Principals.AuthenticateWithGrants(ctx(t), "not-a-token"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("a malformed token: %v, want ErrUnauthenticated", err)
	}
	c := auth.WithPrincipalGrants(ctx(t), s.Principals, p, grants)
	if err := auth.Require(c, auth.PermRead, "/tasks/3"); err != nil {
		t.Errorf("read on /tasks/3 with the grants read: %v", err)
	}
	if err := auth.Require(c, auth.PermStop, "/tasks/3"); !errors.Is(err, auth.ErrForbidden) {
		t.Errorf("stop on /tasks/3: %v, want forbidden", err)
	}
	if err := s.Principals.DeletePrincipal(ctx(t), p.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Principals.AuthenticateWithGrants(ctx(t), tok); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("a deleted token: %v, want ErrUnauthenticated", err)
	}
	if err := auth.Require(c, auth.PermRead, "/tasks/3"); err != nil {
		t.Errorf("the request's own grants after the delete: %v, want them used, not read again", err)
	}
	if err := auth.Require(auth.ForgetGrants(c), auth.PermRead, "/tasks/3"); !errors.Is(err, auth.ErrForbidden) {
		t.Errorf("ForgetGrants after the delete: %v, want the grants read again and none found", err)
	}
}
