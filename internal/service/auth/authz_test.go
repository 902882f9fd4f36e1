package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
)

func TestCovers(t *testing.T) {
	cases := []struct {
		prefix, res string
		want        bool
	}{
		{"/", "/", true},
		{"/", "/tasks/12", true},
		{"/tasks", "/tasks", true},
		{"/tasks", "/tasks/12", true},
		{"/tasks/1", "/tasks/1", true},
		{"/tasks/1", "/tasks/12", false},
		{"/tasks/1", "/tasks", false},
		{"/tasks", "/tasksx", false},
		{"/tasks", "/", false},
		{"/sweepers/a", "/sweepers/ab", false},
	}
	for _, c := range cases {
		if got := auth.Covers(c.prefix, c.res); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.prefix, c.res, got, c.want)
		}
	}
}

// TestAllowsWithin: a grant of the permission (or admin) on the node, an
// ancestor or a node below it counts, by whole segments; another
// permission, or a grant beside the node, does not.
func TestAllowsWithin(t *testing.T) {
	for _, c := range []struct {
		grant cks.Grant
		want  bool
	}{
		{cks.Grant{Resource: "/tasks/5", Permission: auth.PermStop}, true},
		{cks.Grant{Resource: "/tasks", Permission: auth.PermStop}, true},
		{cks.Grant{Resource: "/", Permission: auth.PermAdmin}, true},
		{cks.Grant{Resource: "/tasks/5", Permission: auth.PermAdmin}, true},
		{cks.Grant{Resource: "/tasks/5", Permission: auth.PermStart}, false},
		{cks.Grant{Resource: "/", Permission: auth.PermRead}, false},
		{cks.Grant{Resource: "/taskset", Permission: auth.PermStop}, false},
		{cks.Grant{Resource: "/objects/5", Permission: auth.PermStop}, false},
	} {
		if got := auth.AllowsWithin([]cks.Grant{c.grant}, auth.PermStop, "/tasks"); got != c.want {
			t.Errorf("AllowsWithin(%+v, stop, /tasks) = %v, want %v", c.grant, got, c.want)
		}
	}
}

func TestValidGrant(t *testing.T) {
	for _, ok := range []string{"read:/", "admin:/", "append:/tasks/42", "control:/sweepers/lease_reaper",
		"read:/processes/critic", "update:/objects/x1", "create:/tasks"} {
		if _, err := auth.ParseGrant(ok); err != nil {
			t.Errorf("ParseGrant(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"read", "write:/", "read:tasks", "read:/tasks/", "read:/tasks/abc", "read:/tasks/0",
		"read:/tasks/01", "read:/tasks/1/2", "read:/other", "read:/tasks/1 "} {
		if _, err := auth.ParseGrant(bad); !errors.Is(err, cks.ErrInvalid) {
			t.Errorf("ParseGrant(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestAllowsNoImplication(t *testing.T) {
	for _, held := range auth.Permissions {
		for _, want := range auth.Permissions {
			got := auth.Allows([]cks.Grant{{Resource: "/", Permission: held}}, want, "/tasks/1")
			if exp := held == want || held == auth.PermAdmin; got != exp {
				t.Errorf("holding %s, Allows(%s) = %v, want %v", held, want, got, exp)
			}
		}
	}
}

func TestCheckAndRequire(t *testing.T) {
	ctx := context.Background()
	s, err := backend.Open(ctx, filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 1; i <= 7; i++ {
		typ := "other"
		if i == 7 {
			typ = "mine"
		}
		if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	claimed := backendtest.ClaimType(t, s, "worker", "mine")
	if claimed.ID != 7 {
		t.Fatalf("claim of task 7: %+v", claimed)
	}
	tok, err := auth.IssueTaskToken(ctx, s.Principals, claimed, "worker")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Principals.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "task/7 worker" {
		t.Fatalf("name %q", p.Name)
	}
	az := s.Principals
	for _, perm := range []string{auth.PermRead, auth.PermAppend, auth.PermCreate} {
		if err := az.Check(ctx, p, perm, "/tasks/7"); err != nil {
			t.Errorf("task token %s on /tasks/7: %v", perm, err)
		}
	}
	for _, perm := range []string{auth.PermUpdate, auth.PermStop, auth.PermStart, auth.PermCancel, auth.PermControl, auth.PermAdmin} {
		err := az.Check(ctx, p, perm, "/tasks/7")
		var fe *auth.ForbiddenError
		if !errors.Is(err, auth.ErrForbidden) || !errors.As(err, &fe) || fe.Permission != perm || fe.Resource != "/tasks/7" ||
			!strings.Contains(err.Error(), "needs "+perm+" on /tasks/7") {
			t.Errorf("task token %s on /tasks/7: %v, want forbidden naming it", perm, err)
		}
	}
	if err := az.Check(ctx, p, auth.PermRead, "/tasks/70"); !errors.Is(err, auth.ErrForbidden) {
		t.Errorf("task token read on /tasks/70: %v", err)
	}
	// Require: the caller in the context; none fails closed; local is admin.
	if err := auth.Require(auth.WithPrincipal(ctx, az, p), auth.PermAppend, "/tasks/7"); err != nil {
		t.Errorf("Require with the principal: %v", err)
	}
	if err := auth.Require(ctx, auth.PermRead, "/"); !errors.Is(err, auth.ErrForbidden) {
		t.Errorf("Require without a caller: %v, want forbidden", err)
	}
	if err := auth.Require(auth.WithLocalOperator(ctx), auth.PermAdmin, "/"); err != nil {
		t.Errorf("Require as the local operator: %v", err)
	}
	if _, ok := auth.PrincipalFrom(auth.WithLocalOperator(ctx)); ok {
		t.Error("the local operator is not a principal")
	}
}

// TestTaskTokenEndsWithItsLease: the credential IssueTaskToken makes for a
// claim authenticates while the lease runs and not a moment after it ends;
// DeleteEndedCredentials then deletes it, and leaves alone a credential an
// operator made for the same task (unbound) and one of a live lease.
func TestTaskTokenEndsWithItsLease(t *testing.T) {
	ctx := context.Background()
	s, err := backend.Open(ctx, filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, typ := range []string{"done", "live"} {
		if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(typ string) cks.ClaimedTask {
		t.Helper()
		return backendtest.ClaimType(t, s, "w", typ)
	}
	done, live := claim("done"), claim("live")
	if _, err := auth.IssueTaskToken(ctx, s.Principals, cks.ClaimedTask{Task: done.Task}, "w"); !cks.IsFieldError(err, "task_id") {
		t.Fatalf("IssueTaskToken without the lease token: %v, want a FieldError", err)
	}
	doneTok, err := auth.IssueTaskToken(ctx, s.Principals, done, "w")
	if err != nil {
		t.Fatal(err)
	}
	liveTok, err := auth.IssueTaskToken(ctx, s.Principals, live, "w")
	if err != nil {
		t.Fatal(err)
	}
	_, opTok, err := auth.CreateToken(ctx, s.Principals, nil, "task/1", auth.TaskTokenGrants(done.ID))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Principals
	for _, tok := range []string{doneTok, liveTok, opTok} {
		if _, err := a.Authenticate(ctx, tok); err != nil {
			t.Fatalf("before the lease ended: %v", err)
		}
	}
	if _, err := s.Tasks.Complete(ctx, done.ID, done.LeaseToken, false, "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, doneTok); !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("the credential of the completed claim: %v, want unauthenticated saying the lease ended", err)
	}
	for _, tok := range []string{liveTok, opTok} {
		if _, err := a.Authenticate(ctx, tok); err != nil {
			t.Fatalf("after another lease ended: %v", err)
		}
	}
	if n, err := s.Principals.DeleteEndedCredentials(ctx, backendtest.T0); err != nil || n != 1 {
		t.Fatalf("DeleteEndedCredentials = %d, %v; want 1", n, err)
	}
	ps, err := s.Principals.ListPrincipals(ctx)
	if err != nil || len(ps) != 2 {
		t.Fatalf("principals after the cleanup: %+v, %v; want the live claim's and the operator's", ps, err)
	}
}
