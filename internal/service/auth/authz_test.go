package auth_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
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
	claimed, tok := backendtest.ClaimAgent(t, s, "worker", "mine")
	if claimed.ID != 7 {
		t.Fatalf("claim of task 7: %+v", claimed)
	}
	p, err := s.Principals.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "task/7 worker" || p.ID != "task/7" || p.Lease == nil || p.Lease.TaskID != 7 {
		t.Fatalf("principal of the task token: %+v", p)
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

// TestTaskTokenEndsWithItsLease: the agent token a claim issues
// authenticates while its lease runs and not a moment after it ends,
// however it ends (completed; failed and claimed again, by a claim with a
// token or without), with no principal row of its own; a token of another
// task or with another secret never does; an operator's token for the same
// task (unbound) stays. DeleteEndedCredentials deletes the lease-bound
// principal rows claims of earlier versions wrote, once their lease ends.
func TestTaskTokenEndsWithItsLease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		ctx := context.Background()
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		for _, typ := range []string{"done", "live", "again"} {
			if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, MaxAttempts: 3}); err != nil {
				t.Fatal(err)
			}
		}
		done, doneTok := backendtest.ClaimAgent(t, s, "w", "done")
		live, liveTok := backendtest.ClaimAgent(t, s, "w", "live")
		again, againTok := backendtest.ClaimAgent(t, s, "w", "again")
		_, opTok, err := auth.CreateToken(ctx, s.Principals, nil, "ops", auth.TaskTokenGrants(done.ID))
		if err != nil {
			t.Fatal(err)
		}
		// A principal row bound to done's lease, as claims wrote them before.
		oldTok, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		old := cks.Principal{ID: "legacy", Name: fmt.Sprintf("task/%d w", done.ID), CreatedAt: backendtest.T0,
			Lease: &cks.LeaseBinding{TaskID: done.ID, LeaseTokenHash: driver.HashLeaseToken(done.LeaseToken)}}
		if err := s.Principals.CreatePrincipal(ctx, old, auth.HashToken(oldTok), auth.TaskTokenGrants(done.ID)); err != nil {
			t.Fatal(err)
		}
		a := s.Principals
		authenticates := func(what, tok string, want bool) {
			t.Helper()
			_, err := a.Authenticate(ctx, tok)
			if want && err != nil {
				t.Fatalf("%s: %v, want it to authenticate", what, err)
			}
			if !want && (!errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "lease")) {
				t.Fatalf("%s: %v, want unauthenticated saying the lease may have ended", what, err)
			}
		}
		for _, tok := range []string{doneTok, liveTok, againTok, opTok, oldTok} {
			authenticates("before any lease ended", tok, true)
		}
		_, secret, _ := strings.Cut(strings.TrimPrefix(liveTok, "ckt_"), "_")
		authenticates("live's secret on done", auth.TaskToken(done.ID, secret), false)
		authenticates("a secret of no claim", auth.TaskToken(live.ID, strings.Repeat("0", len(secret))), false)
		authenticates("no such task", auth.TaskToken(99, secret), false)
		if ps, err := s.Principals.ListPrincipals(ctx); err != nil || len(ps) != 2 {
			t.Fatalf("principals: %+v, %v; want the operator's and the legacy one: claims write none", ps, err)
		}

		if _, err := s.Tasks.Complete(ctx, done.ID, done.LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		authenticates("the completed claim's token", doneTok, false)
		authenticates("the completed claim's legacy row", oldTok, false)
		authenticates("another claim's token after done's lease ended", liveTok, true)
		authenticates("the operator's token after the lease ended", opTok, true)

		// Failed retryably and claimed again: the old token is dead, with
		// the new lease's token or without one.
		if _, err := s.Tasks.Fail(ctx, again.ID, again.LeaseToken, true, "again"); err != nil {
			t.Fatal(err)
		}
		authenticates("the failed claim's token", againTok, false)
		c.Advance(time.Hour) // past the retry's backoff
		again2, again2Tok := backendtest.ClaimAgent(t, s, "w2", "again")
		authenticates("the first lease's token after a second claim", againTok, false)
		authenticates("the second lease's token", again2Tok, true)
		if _, err := s.Tasks.Fail(ctx, again2.ID, again2.LeaseToken, true, "again"); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Hour)
		backendtest.ClaimType(t, s, "w3", "again")
		authenticates("the second lease's token after a claim without one", again2Tok, false)

		if n, err := s.Principals.DeleteEndedCredentials(ctx, backendtest.T0); err != nil || n != 1 {
			t.Fatalf("DeleteEndedCredentials = %d, %v; want 1 (the legacy row)", n, err)
		}
		if ps, err := s.Principals.ListPrincipals(ctx); err != nil || len(ps) != 1 || ps[0].Name != "ops" {
			t.Fatalf("principals after the cleanup: %+v, %v; want the operator's", ps, err)
		}
	})
}
