package backend_test

// Facts of the Postgres database under the services, moved here from the
// driver's tests (which use only the driver): what waits on row locks and
// what does not, what rows hold, how racing writers of one object end.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestClaimObjectsConcurrent claims from many goroutines (each call on a pool
// connection of its own store handle or of a shared one) and checks that no
// object is claimed twice and every object is claimed once.
func TestClaimObjectsConcurrent(t *testing.T) {
	u := backendtest.PostgresURL(t)
	shared := opener(u)(t)
	other := opener(u)(t)
	ctx := backendtest.Ctx(t)
	const objects = 120
	for i := range objects {
		if _, err := shared.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "question", Title: fmt.Sprint(i),
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
				got, err := s.Objects.ClaimObjects(ctx, "awaiting_research", name, 3)
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
				if !slices.IsSortedFunc(got, func(x, y cks.Object) int { return int(x.ID - y.ID) }) {
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
	u := backendtest.PostgresURL(t)
	s := opener(u)(t)
	ctx := backendtest.Ctx(t)
	var ids []int64
	for range 6 {
		o, err := s.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "claim", Status: "awaiting_critique"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	// The two oldest are held, as by a claimer whose transaction is open.
	release := holdObjects(t, u, ids[:2]...)

	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	got, err := s.Objects.ClaimObjects(short, "awaiting_critique", "critic-1", 10)
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
	release()
	got, err = s.Objects.ClaimObjects(ctx, "awaiting_critique", "critic-2", 10)
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
	u := backendtest.PostgresURL(t)
	s := opener(u)(t)
	ctx := backendtest.Ctx(t)
	for range 3 {
		if _, err := s.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "claim", Status: "awaiting_critique"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Objects.ClaimObjects(ctx, "awaiting_critique", "critic", 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("claim: %v, %v", got, err)
	}
	release := holdObjects(t, u, got[0].ID)
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	n, err := s.Objects.ReleaseStaleClaims(short, time.Now().Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("ReleaseStaleClaims = %d, %v; want 2 (the locked one skipped)", n, err)
	}
	release()
	if err := s.Objects.TouchClaim(ctx, got[0].ID, got[0].ClaimToken); err != nil {
		t.Fatalf("touch of the skipped claim: %v", err)
	}
}

// TestObjectContentBytes checks that content reads back as the canonical
// bytes (the column is TEXT: JSONB would re-encode numbers and spacing).
func TestObjectContentBytes(t *testing.T) {
	u := backendtest.PostgresURL(t)
	s := opener(u)(t)
	ctx := backendtest.Ctx(t)
	in := `{"z": 1.50, "a": {"y": [1e3, "é<>&"], "b": null}}`
	want, err := cks.CanonicalJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "note", Content: []byte(in)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Objects.GetObject(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Content) != string(want) || string(o.Content) != string(want) {
		t.Fatalf("content = %s (create %s), want %s", got.Content, o.Content, want)
	}
}

// checkHeadsConsistent checks every object row against its versions: heads
// is the number of head versions, head_version one of them and its content
// the object's.
func checkHeadsConsistent(t testing.TB, dbURL string) {
	t.Helper()
	ctx := backendtest.Ctx(t)
	conn := pgConn(t, dbURL)
	rows, err := conn.Query(ctx, `SELECT o.object_id::text || ': heads ' || o.heads || ', head_version ' || o.head_version
FROM cks_objects o
WHERE o.heads <> (SELECT count(*) FROM cks_object_versions v WHERE v.object_id = o.object_id AND v.is_head)
	OR NOT EXISTS (SELECT 1 FROM cks_object_versions v WHERE v.version = o.head_version AND v.object_id = o.object_id
		AND v.is_head AND v.content = o.content AND v.content_hash = o.content_hash)
ORDER BY o.object_id`)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("objects whose row disagrees with their versions: %v", bad)
	}
}

// holdObjects locks the rows of objects ids in a transaction on a
// connection of its own (as a writer in the middle of a transaction would)
// and returns the function that releases them (also called when t ends).
func holdObjects(t *testing.T, dbURL string, ids ...int64) func() {
	t.Helper()
	ctx := backendtest.Ctx(t)
	conn := pgConn(t, dbURL)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM cks_objects WHERE object_id = ANY($1) FOR UPDATE`, ids); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			tx.Rollback(ctx) //nolint:errcheck // releases the lock
			conn.Close(ctx)
		})
	}
	t.Cleanup(release)
	return release
}

// waitLockWaiters waits until n sessions of the database wait for a lock.
func waitLockWaiters(t *testing.T, dbURL string, n int) {
	t.Helper()
	ctx := backendtest.Ctx(t)
	conn := pgConn(t, dbURL)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions wait for a lock after 10s, want %d", waiting, n)
		}
	}
}

// TestWriteVersionRaceForks makes two WriteVersion calls from one base wait
// on the object's row lock together, on two connections of one pool, and
// releases them at once: both versions are kept, as two heads, and the
// object row agrees with them.
func TestWriteVersionRaceForks(t *testing.T) {
	u := backendtest.PostgresURL(t)
	s := opener(u)(t)
	ctx := backendtest.Ctx(t)
	for round := range 5 {
		o, err := s.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"base":true}`), Title: fmt.Sprint(round)})
		if err != nil {
			t.Fatal(err)
		}
		release := holdObjects(t, u, o.ID)
		var (
			wg   sync.WaitGroup
			got  [2]cks.Version
			errs [2]error
		)
		for i := range 2 {
			wg.Go(func() {
				got[i], errs[i] = s.Objects.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(fmt.Sprintf(`{"writer":%d}`, i)), fmt.Sprintf("w%d", i))
			})
		}
		waitLockWaiters(t, u, 2)
		release()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: writer %d: %v", round, i, err)
			}
			if !slices.Equal(got[i].Parents, []int64{o.HeadVersion}) {
				t.Fatalf("round %d: writer %d wrote %+v, want parents [%d]", round, i, got[i], o.HeadVersion)
			}
		}
		hs, err := s.Objects.Heads(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{min(got[0].Version, got[1].Version), max(got[0].Version, got[1].Version)}
		if ids := []int64{hs[0].Version, hs[len(hs)-1].Version}; len(hs) != 2 || !slices.Equal(ids, want) {
			t.Fatalf("round %d: heads %+v, want %v", round, hs, want)
		}
		vs, err := s.Objects.ObjectVersions(ctx, o.ID)
		if err != nil || len(vs) != 3 {
			t.Fatalf("round %d: versions %+v, %v; want the base and both writes", round, vs, err)
		}
		g, err := s.Objects.GetObject(ctx, o.ID)
		if err != nil || !g.Forked || g.HeadVersion != want[1] {
			t.Fatalf("round %d: object %+v, %v; want forked at the later write %d", round, g, err, want[1])
		}
		checkHeadsConsistent(t, u)
	}
	fs, err := s.Objects.ForkedObjects(ctx, 0, cks.MaxListLimit)
	if err != nil || len(fs) != 5 {
		t.Fatalf("ForkedObjects = %+v, %v; want the 5 objects", fs, err)
	}
}

// TestMergeVersionsRace makes two merges of one fork wait on the object's row
// lock together and releases them at once: one wins, the other is
// ErrConflict naming the winner's version as the head, and only the
// winner's reason node exists.
func TestMergeVersionsRace(t *testing.T) {
	u := backendtest.PostgresURL(t)
	s := opener(u)(t)
	ctx := backendtest.Ctx(t)
	o, err := s.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "claim"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Objects.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(`{"side":"a"}`), "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Objects.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(`{"side":"b"}`), "bob")
	if err != nil {
		t.Fatal(err)
	}
	release := holdObjects(t, u, o.ID)
	var (
		wg      sync.WaitGroup
		got     [2]cks.Version
		reasons [2]*cks.Object
		errs    [2]error
	)
	for i := range 2 {
		wg.Go(func() {
			got[i], reasons[i], errs[i] = s.Objects.MergeVersions(ctx, o.ID, []int64{a.Version, b.Version}, json.RawMessage(fmt.Sprintf(`{"merger":%d}`, i)),
				fmt.Sprintf("fr%d", i), &knowledge.Attachment{Object: knowledge.NewObject{Kind: "rationale"}, BaseType: "depends_on", SemanticType: "resolves"})
		})
	}
	waitLockWaiters(t, u, 2)
	release()
	wg.Wait()
	w := 0
	if errs[0] != nil {
		w = 1
	}
	if errs[w] != nil || !errors.Is(errs[1-w], cks.ErrConflict) || reasons[1-w] != nil || reasons[w] == nil {
		t.Fatalf("merges: errors %v, reasons %+v; want one success and one ErrConflict", errs, reasons)
	}
	if msg := errs[1-w].Error(); !containsAll(msg, fmt.Sprint(got[w].Version), fmt.Sprint(a.Version), fmt.Sprint(b.Version)) {
		t.Errorf("conflict %q: want it to name the current head %d and the given ones", msg, got[w].Version)
	}
	hs, err := s.Objects.Heads(ctx, o.ID)
	if err != nil || len(hs) != 1 || hs[0].Version != got[w].Version || !slices.Equal(hs[0].Parents, []int64{a.Version, b.Version}) {
		t.Fatalf("heads %+v, %v; want the merge %d of %d and %d alone", hs, err, got[w].Version, a.Version, b.Version)
	}
	g, err := s.Objects.GetObject(ctx, o.ID)
	if err != nil || g.Forked || g.HeadVersion != got[w].Version || len(g.Edges) != 1 || g.Edges[0].Src != reasons[w].ID {
		t.Fatalf("object %+v, %v; want merged, with the winner's reason edge alone", g, err)
	}
	page, err := s.Objects.ListObjects(ctx, cks.ObjectFilter{Kinds: []string{"rationale"}})
	if err != nil || len(page.Objects) != 1 {
		t.Fatalf("reason nodes %+v, %v; want one", page, err)
	}
	checkHeadsConsistent(t, u)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
