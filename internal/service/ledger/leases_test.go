package ledger_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestLeases: lease tokens (shown only to the
// claimer, stored hashed) and principals bound to a lease, on both
// backends.
func TestLeases(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"LeaseTokenOnlyForTheClaimer":    testLeaseTokenOnlyForTheClaimer,
		"LeasePrincipalEndsWithItsLease": testLeasePrincipalEndsWithItsLease,
		"LeasePrincipalOfAnotherLease":   testLeasePrincipalOfAnotherLease,
		"LeasePrincipalBadInput":         testLeasePrincipalBadInput,
	})
}

// testLeaseTokenOnlyForTheClaimer: a claim returns a fresh token per task;
// no read of the task (GetTask, ListTasks, their JSON) shows it; every
// fenced call compares it, and the hash the store keeps is no token.
func testLeaseTokenOnlyForTheClaimer(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	for range 3 {
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t"})
	}
	backendtest.MustEnqueue(t, s, cks.NewTask{Type: "r"})
	claimed, err := s.Tasks.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"t"}, N: 3, Lease: backendtest.Lease})
	if err != nil || len(claimed) != 3 {
		t.Fatalf("Claim = %d tasks, %v; want 3", len(claimed), err)
	}
	seen := map[string]bool{}
	for _, c := range claimed {
		if len(c.LeaseToken) < 32 || seen[c.LeaseToken] {
			t.Fatalf("claim of task %d: token %q; want a fresh token of at least 128 bits per task", c.ID, c.LeaseToken)
		}
		seen[c.LeaseToken] = true
		if b, _ := json.Marshal(c); !strings.Contains(string(b), `"lease_token":"`+c.LeaseToken+`"`) {
			t.Fatalf("the claimer's view lacks lease_token: %s", b)
		}
	}
	// The reviewer's lease too.
	rc := backendtest.ClaimType(t, s, "w", "r")
	if _, err := s.Tasks.Complete(ctx(t), rc.ID, rc.LeaseToken, true, "draft"); err != nil {
		t.Fatal(err)
	}
	review, err := s.Tasks.ClaimReview(ctx(t), rc.ID, "rev", backendtest.Lease)
	if err != nil || review.LeaseToken == "" || seen[review.LeaseToken] || review.LeaseToken == rc.LeaseToken {
		t.Fatalf("ClaimReview = %q, %v; want a fresh token", review.LeaseToken, err)
	}
	seen[review.LeaseToken] = true

	reads := []any{}
	for _, c := range claimed {
		reads = append(reads, backendtest.MustGet(t, s, c.ID))
	}
	reads = append(reads, backendtest.MustGet(t, s, rc.ID))
	page, err := s.Tasks.ListTasks(ctx(t), cks.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	reads = append(reads, page)
	for _, r := range reads {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		for tok := range seen {
			if strings.Contains(string(b), tok) || strings.Contains(string(b), driver.HashLeaseToken(tok)) {
				t.Fatalf("a read of the ledger shows a lease token (or its hash): %s", b)
			}
		}
		if strings.Contains(string(b), "lease_token") {
			t.Fatalf("a read of the ledger has a lease_token field: %s", b)
		}
	}
	c := claimed[0]
	// The stored form is not a token: presenting it fences nothing.
	hash := driver.HashLeaseToken(c.LeaseToken)
	if held, err := s.Tasks.LeaseHeld(ctx(t), c.ID, hash); held || err != nil {
		t.Fatalf("LeaseHeld(hash of the token) = %v, %v; want false", held, err)
	}
	if _, err := s.Tasks.MarkRunning(ctx(t), c.ID, hash); !errors.Is(err, cks.ErrLeaseLost) {
		t.Fatalf("MarkRunning with the token's hash: %v, want ErrLeaseLost", err)
	}
	// Another task's token fences nothing either.
	if _, err := s.Tasks.Complete(ctx(t), c.ID, claimed[1].LeaseToken, false, "x"); !errors.Is(err, cks.ErrLeaseLost) {
		t.Fatalf("Complete with another task's token: %v, want ErrLeaseLost", err)
	}
	if _, err := s.Tasks.Approve(ctx(t), rc.ID, rc.LeaseToken, "x"); !errors.Is(err, cks.ErrLeaseLost) {
		t.Fatalf("Approve with the executor's token: %v, want ErrLeaseLost", err)
	}
	if _, err := s.Tasks.Approve(ctx(t), rc.ID, review.LeaseToken, "ok"); err != nil {
		t.Fatalf("Approve with the reviewer's token: %v", err)
	}
	for _, c := range claimed {
		if held := mustHeld(t, s, c.ID, c.LeaseToken); !held {
			t.Fatalf("task %d: its own token is not held", c.ID)
		}
		if _, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "done"); err != nil {
			t.Fatalf("Complete of task %d with its token: %v", c.ID, err)
		}
	}
}

// leaseEnders end the lease of a claimed (CLAIMED or RUNNING) task c each in
// one of the ways the ledger has.
func leaseEnders(s *backend.Backend, clk interface{ Advance(time.Duration) }) []struct {
	name string
	end  func(t *testing.T, c cks.ClaimedTask)
} {
	type ender = struct {
		name string
		end  func(t *testing.T, c cks.ClaimedTask)
	}
	must := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	return []ender{
		{"Complete", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, false, "ok")
			must(t, "Complete", err)
		}},
		{"Complete for review", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.Complete(ctx(t), c.ID, c.LeaseToken, true, "draft")
			must(t, "Complete", err)
		}},
		{"retryable Fail", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, true, "again")
			must(t, "Fail", err)
		}},
		{"Fail", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.Fail(ctx(t), c.ID, c.LeaseToken, false, "broken")
			must(t, "Fail", err)
		}},
		{"RequestInput", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.RequestInput(ctx(t), c.ID, c.LeaseToken, "which?")
			must(t, "RequestInput", err)
		}},
		{"Stop", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: c.ID, Actor: "op", Reason: "hold"})
			must(t, "Stop", err)
		}},
		{"restarting Update", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.UpdateTask(ctx(t), ledger.UpdateParams{ID: c.ID, Actor: "op", Patch: cks.TaskPatch{Description: ptr("new")}})
			must(t, "Update", err)
		}},
		{"Cancel", func(t *testing.T, c cks.ClaimedTask) {
			_, err := s.Tasks.Cancel(ctx(t), c.ID, "op", "gone")
			must(t, "Cancel", err)
		}},
		{"ReclaimExpired", func(t *testing.T, c cks.ClaimedTask) {
			clk.Advance(2 * backendtest.Lease)
			if n, err := s.Tasks.ReclaimExpired(ctx(t), c.LeaseExpiresAt.Add(2*backendtest.Lease)); err != nil || n != 1 {
				t.Fatalf("ReclaimExpired = %d, %v; want 1", n, err)
			}
		}},
	}
}

// testLeasePrincipalEndsWithItsLease: a principal bound to a lease
// authenticates while the lease is current and is refused (ErrNotFound) the
// moment any operation ends it — before DeleteEndedCredentials runs,
// which then removes exactly the ended ones.
func testLeasePrincipalEndsWithItsLease(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	operator := cks.Principal{ID: "op", Name: "task/1", CreatedAt: backendtest.T0} // cks token create --task: unbound
	if err := s.Principals.CreatePrincipal(ctx(t), operator, "hash-op", []cks.Grant{{Resource: "/tasks/1", Permission: "read"}}); err != nil {
		t.Fatal(err)
	}
	for i, e := range leaseEnders(s, clk) {
		typ := "end-" + strings.ReplaceAll(e.name, " ", "-")
		var c cks.ClaimedTask
		if i%2 == 0 {
			c = mustRunning(t, s, typ, "w")
		} else { // half of them still CLAIMED
			c = claimedOnly(t, s, typ, "w")
		}
		id, hash := "p-"+e.name, "hash-"+e.name
		p := cks.Principal{ID: id, Name: "task worker", CreatedAt: backendtest.T0,
			Lease: &cks.LeaseBinding{TaskID: c.ID, LeaseTokenHash: driver.HashLeaseToken(c.LeaseToken)}}
		if err := s.Principals.CreatePrincipal(ctx(t), p, hash, []cks.Grant{{Resource: "/tasks", Permission: "read"}}); err != nil {
			t.Fatalf("%s: CreatePrincipal: %v", e.name, err)
		}
		got, err := s.Principals.PrincipalByTokenHash(ctx(t), hash)
		if err != nil || got.ID != id || got.Lease == nil || got.Lease.TaskID != c.ID {
			t.Fatalf("%s: the bound principal while its lease runs: %+v, %v", e.name, got, err)
		}
		e.end(t, c)
		if got, err := s.Principals.PrincipalByTokenHash(ctx(t), hash); !errors.Is(err, cks.ErrNotFound) {
			t.Fatalf("%s: the bound principal after its lease ended: %+v, %v; want ErrNotFound", e.name, got, err)
		}
		if gs, err := s.Principals.GrantsOf(ctx(t), id); err != nil || len(gs) != 1 {
			t.Fatalf("%s: grants of the refused principal = %v, %v; want its row kept until the cleanup", e.name, gs, err)
		}
	}
	// A live bound principal and the operator's are kept by the cleanup.
	live := mustRunning(t, s, "live", "w")
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: "live", Name: "task worker", CreatedAt: backendtest.T0,
		Lease: &cks.LeaseBinding{TaskID: live.ID, LeaseTokenHash: driver.HashLeaseToken(live.LeaseToken)}}, "hash-live", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Principals.DeleteEndedCredentials(ctx(t), clk.Now()); err != nil || n != len(leaseEnders(s, clk)) {
		t.Fatalf("DeleteEndedCredentials = %d, %v; want %d", n, err, len(leaseEnders(s, clk)))
	}
	if n, err := s.Principals.DeleteEndedCredentials(ctx(t), clk.Now()); err != nil || n != 0 {
		t.Fatalf("second DeleteEndedCredentials = %d, %v; want 0", n, err)
	}
	ps, err := s.Principals.ListPrincipals(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, ",") != "live,op" && strings.Join(ids, ",") != "op,live" {
		t.Fatalf("principals after the cleanup: %v; want live and op", ids)
	}
	for _, h := range []string{"hash-live", "hash-op"} {
		if _, err := s.Principals.PrincipalByTokenHash(ctx(t), h); err != nil {
			t.Fatalf("%s after the cleanup: %v", h, err)
		}
	}
	if gs, err := s.Principals.GrantsOf(ctx(t), "p-Complete"); err != nil || len(gs) != 0 {
		t.Fatalf("grants of a deleted principal = %v, %v; want none", gs, err)
	}
}

// claimedOnly enqueues a task of type typ and claims it for worker (CLAIMED,
// not RUNNING).
func claimedOnly(t testing.TB, s *backend.Backend, typ, worker string) cks.ClaimedTask {
	t.Helper()
	backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ, Title: typ})
	return backendtest.ClaimType(t, s, worker, typ)
}

// testLeasePrincipalOfAnotherLease: a principal bound to a lease of task T
// is refused once T is leased again by someone else (same task, new lease),
// and a binding naming a hash that is not T's lease never authenticates.
func testLeasePrincipalOfAnotherLease(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	c := mustRunning(t, s, "t", "w1")
	bind := func(id string, task int64, hash string) {
		t.Helper()
		if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: id, Name: id, CreatedAt: backendtest.T0,
			Lease: &cks.LeaseBinding{TaskID: task, LeaseTokenHash: hash}}, "hash-"+id, nil); err != nil {
			t.Fatal(err)
		}
	}
	bind("first", c.ID, driver.HashLeaseToken(c.LeaseToken))
	bind("wrong", c.ID, driver.HashLeaseToken("not the token"))
	bind("plain", c.ID, c.LeaseToken) // the token itself is not its hash
	bind("missing", 999, driver.HashLeaseToken(c.LeaseToken))
	for _, id := range []string{"wrong", "plain", "missing"} {
		if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-"+id); !errors.Is(err, cks.ErrNotFound) {
			t.Fatalf("principal %s: %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.Tasks.StopTask(ctx(t), ledger.StopParams{ID: c.ID, Actor: "op", Reason: "hold"}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, s, c.ID)
	again := backendtest.ClaimType(t, s, "w2", "t")
	if again.ID != c.ID || again.State != cks.TaskClaimed {
		t.Fatalf("re-claim: %+v", again)
	}
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-first"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("the first lease's principal while the task runs under another lease: %v, want ErrNotFound", err)
	}
	bind("second", c.ID, driver.HashLeaseToken(again.LeaseToken))
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-second"); err != nil {
		t.Fatalf("the second lease's principal: %v", err)
	}
}

// testLeasePrincipalBadInput: a lease binding without a task or a hash is
// refused, naming lease, and stores nothing.
func testLeasePrincipalBadInput(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	for i, b := range []cks.LeaseBinding{{TaskID: 0, LeaseTokenHash: "h"}, {TaskID: 1, LeaseTokenHash: ""}} {
		p := cks.Principal{ID: "p" + string(rune('a'+i)), Name: "n", CreatedAt: backendtest.T0, Lease: &b}
		if err := s.Principals.CreatePrincipal(ctx(t), p, "hash-"+p.ID, nil); !cks.IsFieldError(err, "lease") {
			t.Errorf("CreatePrincipal with binding %+v: %v, want a FieldError naming lease", b, err)
		}
	}
	if ps, err := s.Principals.ListPrincipals(ctx(t)); err != nil || len(ps) != 0 {
		t.Fatalf("principals after refused creates: %v, %v", ps, err)
	}
}
