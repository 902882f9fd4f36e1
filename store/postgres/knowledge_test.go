package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

// TestTransitionLogAppendOnly checks that the database itself refuses every
// change of cks_transition_log but INSERT: UPDATE, DELETE, TRUNCATE, and a
// TRUNCATE of cks_objects that would cascade to it.
func TestTransitionLogAppendOnly(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	ctx := testCtx(t)
	o, err := s.CreateObject(ctx, store.NewObject{Kind: "question", Status: "awaiting_research", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`UPDATE cks_transition_log SET action = 'forged'`,
		`DELETE FROM cks_transition_log`,
		`TRUNCATE cks_transition_log`,
		`TRUNCATE cks_objects CASCADE`,
		`TRUNCATE cks_objects, cks_edges, cks_transition_log, cks_object_versions`,
	} {
		_, err := conn.Exec(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want an append-only refusal", q, err)
		}
	}
	got, err := s.GetObject(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Log) != 1 || got.Log[0].Action != "created" {
		t.Fatalf("log after the refused changes = %+v, want the one created entry", got.Log)
	}
	// Appending still works.
	if _, err := conn.Exec(ctx, `INSERT INTO cks_transition_log (object_id, ts, agent, action, transitioned_to, content_hash)
VALUES ($1, now(), 'test', 'noted', 'awaiting_research', $2)`, o.ID, o.ContentHash); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

// TestClaimObjectsConcurrent claims from many goroutines (each call on a pool
// connection of its own store handle or of a shared one) and checks that no
// object is claimed twice and every object is claimed once.
func TestClaimObjectsConcurrent(t *testing.T) {
	_, u := freshSchema(t)
	shared := open(t, u)
	other := open(t, u)
	ctx := testCtx(t)
	const objects = 120
	for i := range objects {
		if _, err := shared.CreateObject(ctx, store.NewObject{Kind: "question", Title: fmt.Sprint(i),
			Status: "awaiting_research"}); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 12
	var (
		mu      sync.Mutex
		claimed = map[int64]string{}
		tokens  = map[string]bool{}
		wg      sync.WaitGroup
		errs    = make(chan error, workers)
	)
	for w := range workers {
		s := shared
		if w%2 == 1 {
			s = other
		}
		name := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			for {
				got, err := s.ClaimObjects(ctx, "awaiting_research", name, 3)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, o := range got {
					if prev, dup := claimed[o.ID]; dup {
						errs <- fmt.Errorf("object %d claimed by %s and %s", o.ID, prev, name)
					}
					claimed[o.ID] = name
					if tokens[o.ClaimToken] {
						errs <- fmt.Errorf("token %q issued twice", o.ClaimToken)
					}
					tokens[o.ClaimToken] = true
					if o.ClaimedBy != name || o.ClaimToken == "" || o.ClaimedAt.IsZero() {
						errs <- fmt.Errorf("claimed object %+v: want claimed_by %s, a token and claimed_at", o, name)
					}
				}
				mu.Unlock()
				if !slices.IsSortedFunc(got, func(x, y store.Object) int { return int(x.ID - y.ID) }) {
					errs <- fmt.Errorf("claim returned %v, want oldest first", got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(claimed) != objects {
		t.Fatalf("%d objects claimed, want %d", len(claimed), objects)
	}
}

// TestClaimObjectsSkipsLocked holds row locks on some objects in an open
// transaction (as a concurrent claim or transition would) and checks that
// ClaimObjects does not wait for them: it claims the others at once.
func TestClaimObjectsSkipsLocked(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	ctx := testCtx(t)
	var ids []int64
	for range 6 {
		o, err := s.CreateObject(ctx, store.NewObject{Kind: "claim", Status: "awaiting_critique"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	// The two oldest are held, as by a claimer whose transaction is open.
	if _, err := tx.Exec(ctx, `SELECT object_id FROM cks_objects WHERE object_id = ANY($1) FOR UPDATE`, ids[:2]); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	got, err := s.ClaimObjects(short, "awaiting_critique", "critic-1", 10)
	if err != nil {
		t.Fatalf("claim while two objects are locked: %v (after %v)", err, time.Since(start))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("claim took %v: it waited for the locked rows", d)
	}
	var gotIDs []int64
	for _, o := range got {
		gotIDs = append(gotIDs, o.ID)
	}
	if !slices.Equal(gotIDs, ids[2:]) {
		t.Fatalf("claimed %v, want the unlocked %v", gotIDs, ids[2:])
	}

	// A transition holding its object's lock does not stall a claimer of
	// another status either, and once the lock is gone the held ones are
	// claimable.
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = s.ClaimObjects(ctx, "awaiting_critique", "critic-2", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != ids[0] || got[1].ID != ids[1] {
		t.Fatalf("after the rollback claimed %+v, want objects %v", got, ids[:2])
	}
}

// TestReleaseStaleClaimsSkipsLocked: the reaper does not wait for an object a
// concurrent writer (a touch in progress) holds, and releases the others.
func TestReleaseStaleClaimsSkipsLocked(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	ctx := testCtx(t)
	for range 3 {
		if _, err := s.CreateObject(ctx, store.NewObject{Kind: "claim", Status: "awaiting_critique"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ClaimObjects(ctx, "awaiting_critique", "critic", 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("claim: %v, %v", got, err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT 1 FROM cks_objects WHERE object_id = $1 FOR UPDATE`, got[0].ID); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	n, err := s.ReleaseStaleClaims(short, time.Now().Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("ReleaseStaleClaims = %d, %v; want 2 (the locked one skipped)", n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchClaim(ctx, got[0].ID, got[0].ClaimToken); err != nil {
		t.Fatalf("touch of the skipped claim: %v", err)
	}
}

// TestObjectContentBytes checks that content reads back as the canonical
// bytes (the column is TEXT: JSONB would re-encode numbers and spacing).
func TestObjectContentBytes(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	ctx := testCtx(t)
	in := `{"z": 1.50, "a": {"y": [1e3, "é<>&"], "b": null}}`
	want, err := store.CanonicalJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.CreateObject(ctx, store.NewObject{Kind: "note", Content: []byte(in)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetObject(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Content) != string(want) || string(o.Content) != string(want) {
		t.Fatalf("content = %s (create %s), want %s", got.Content, o.Content, want)
	}
}
