package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/postgres"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestUpgradeBackfillsVersions opens a schema whose objects predate versions
// (no cks_object_versions, no head_version or heads columns) and finds every
// object with one head version: its content and hash, by its creator, at
// its updated_at, with the object pointing to it. A second open adds nothing.
func TestUpgradeBackfillsVersions(t *testing.T) {
	_, u := freshSchema(t)
	ctx := testCtx(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := open(t, u, store.WithClock(clk))
	var ids []int64
	for i, n := range []store.NewObject{
		{Kind: "question", Content: json.RawMessage(`{"q":"why?","n":1}`), Status: "awaiting_research", CreatedBy: "operator"},
		{Kind: "claim", Content: json.RawMessage(`{"text":"x"}`), CreatedBy: "researcher"},
		{Kind: "critique"},
	} {
		clk.Advance(time.Duration(i+1) * time.Minute)
		o, err := s.CreateObject(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	// The question moves on with new content (and an attachment) later, so
	// its updated_at is not its created_at.
	claimed, err := s.ClaimObjects(ctx, "awaiting_research", "researcher", 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	clk.Advance(time.Hour)
	_, atts, err := s.TransitionObject(ctx, ids[0], claimed[0].ClaimToken, store.ObjectTransition{From: "awaiting_research",
		To: "awaiting_critique", Action: "completed", Agent: "researcher", Content: json.RawMessage(`{"q":"why?","n":2}`),
		Attach:    []store.Attachment{{Object: store.NewObject{Kind: "claim", Content: json.RawMessage(`{"found":true}`)}, BaseType: "depends_on", SemanticType: "supports"}},
		Reasoning: -1})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, atts[0].ID)
	// Fork one of them: the upgrade forgets the history, not the content.
	c1, err := s.WriteVersion(ctx, ids[1], mustHeadVersion(t, s, ids[1]), json.RawMessage(`{"text":"y"}`), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteVersion(ctx, ids[1], c1.Parents[0], json.RawMessage(`{"text":"z"}`), "bob"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Back to the shape before versions.
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP TABLE cks_object_versions;
ALTER TABLE cks_objects DROP COLUMN head_version, DROP COLUMN heads`); err != nil {
		t.Fatal(err)
	}
	type old struct {
		content, hash, createdBy string
		updatedAt                time.Time
	}
	rows, err := conn.Query(ctx, `SELECT object_id, content, content_hash, created_by, updated_at FROM cks_objects ORDER BY object_id`)
	if err != nil {
		t.Fatal(err)
	}
	before := map[int64]old{}
	for rows.Next() {
		var (
			id int64
			o  old
		)
		if err := rows.Scan(&id, &o.content, &o.hash, &o.createdBy, &o.updatedAt); err != nil {
			t.Fatal(err)
		}
		before[id] = o
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(before) != len(ids) {
		t.Fatalf("%d objects before the upgrade, want %d", len(before), len(ids))
	}

	check := func(what string, s *postgres.Store) {
		t.Helper()
		for _, id := range ids {
			b := before[id]
			hs, err := s.Heads(ctx, id)
			if err != nil {
				t.Fatalf("%s: Heads(%d): %v", what, id, err)
			}
			vs, err := s.ObjectVersions(ctx, id)
			if err != nil {
				t.Fatalf("%s: ObjectVersions(%d): %v", what, id, err)
			}
			if len(hs) != 1 || len(vs) != 1 || vs[0].Version != hs[0].Version {
				t.Fatalf("%s: object %d: heads %v, versions %v; want one version, its head", what, id, hs, vs)
			}
			v := hs[0]
			if string(v.Content) != b.content || v.ContentHash != b.hash || v.Author != b.createdBy ||
				!v.CreatedAt.Equal(b.updatedAt) || len(v.Parents) != 0 || v.ObjectID != id {
				t.Errorf("%s: object %d: version %+v\nwant content %s, hash %s, author %q, at %v, no parents",
					what, id, v, b.content, b.hash, b.createdBy, b.updatedAt)
			}
			o, err := s.GetObject(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if o.HeadVersion != v.Version || o.Forked || string(o.Content) != b.content {
				t.Errorf("%s: object %d: head_version %d forked %v, want %d, not forked", what, id, o.HeadVersion, o.Forked, v.Version)
			}
		}
		if fs, err := s.ForkedObjects(ctx, 0, store.MaxListLimit); err != nil || len(fs) != 0 {
			t.Errorf("%s: ForkedObjects = %v, %v; want none", what, fs, err)
		}
		checkHeadsConsistent(t, u)
	}
	s2 := open(t, u, store.WithClock(clk))
	check("after the upgrade", s2)
	s2.Close()
	s3 := open(t, u, store.WithClock(clk))
	check("after a second open", s3)
	for _, idx := range []string{"idx_object_versions_object", "idx_object_versions_heads", "idx_objects_forked"} {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, idx).Scan(&n); err != nil || n != 1 {
			t.Errorf("index %s: %d, %v; want it created by the upgrade", idx, n, err)
		}
	}
	// Versions written after the upgrade take ids the backfill did not.
	head := mustHeadVersion(t, s3, ids[2])
	w, err := s3.WriteVersion(ctx, ids[2], head, json.RawMessage(`{"after":"upgrade"}`), "editor")
	if err != nil || w.Version <= head {
		t.Fatalf("write after the upgrade = %+v, %v", w, err)
	}
	o, err := s3.CreateObject(ctx, store.NewObject{Kind: "claim"})
	if err != nil || o.HeadVersion <= w.Version {
		t.Fatalf("create after the upgrade = %+v, %v", o, err)
	}
	checkHeadsConsistent(t, u)
}

func mustHeadVersion(t testing.TB, s *postgres.Store, id int64) int64 {
	t.Helper()
	o, err := s.GetObject(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return o.HeadVersion
}

// checkHeadsConsistent checks every object row against its versions: heads
// is the number of head versions, head_version one of them and its content
// the object's.
func checkHeadsConsistent(t testing.TB, dbURL string) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT o.object_id::text || ': heads ' || o.heads || ', head_version ' || o.head_version
FROM cks_objects o
WHERE o.heads <> (SELECT count(*) FROM cks_object_versions v WHERE v.object_id = o.object_id AND v.is_head)
	OR NOT EXISTS (SELECT 1 FROM cks_object_versions v WHERE v.version_id = o.head_version AND v.object_id = o.object_id
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

// holdObject locks object id's row in a transaction on a connection of its
// own (as a writer in the middle of a transaction would) and returns the
// function that releases it.
func holdObject(t *testing.T, dbURL string, id int64) func() {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM cks_objects WHERE object_id = $1 FOR UPDATE`, id); err != nil {
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
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
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
	_, u := freshSchema(t)
	s := open(t, u)
	ctx := testCtx(t)
	for round := range 5 {
		o, err := s.CreateObject(ctx, store.NewObject{Kind: "claim", Content: json.RawMessage(`{"base":true}`), Title: fmt.Sprint(round)})
		if err != nil {
			t.Fatal(err)
		}
		release := holdObject(t, u, o.ID)
		var (
			wg   sync.WaitGroup
			got  [2]store.Version
			errs [2]error
		)
		for i := range 2 {
			wg.Go(func() {
				got[i], errs[i] = s.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(fmt.Sprintf(`{"writer":%d}`, i)), fmt.Sprintf("w%d", i))
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
		hs, err := s.Heads(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{min(got[0].Version, got[1].Version), max(got[0].Version, got[1].Version)}
		if ids := []int64{hs[0].Version, hs[len(hs)-1].Version}; len(hs) != 2 || !slices.Equal(ids, want) {
			t.Fatalf("round %d: heads %+v, want %v", round, hs, want)
		}
		vs, err := s.ObjectVersions(ctx, o.ID)
		if err != nil || len(vs) != 3 {
			t.Fatalf("round %d: versions %+v, %v; want the base and both writes", round, vs, err)
		}
		g, err := s.GetObject(ctx, o.ID)
		if err != nil || !g.Forked || g.HeadVersion != want[1] {
			t.Fatalf("round %d: object %+v, %v; want forked at the later write %d", round, g, err, want[1])
		}
		checkHeadsConsistent(t, u)
	}
	fs, err := s.ForkedObjects(ctx, 0, store.MaxListLimit)
	if err != nil || len(fs) != 5 {
		t.Fatalf("ForkedObjects = %+v, %v; want the 5 objects", fs, err)
	}
}

// TestMergeVersionsRace makes two merges of one fork wait on the object's row
// lock together and releases them at once: one wins, the other is
// ErrConflict naming the winner's version as the head, and only the
// winner's reason node exists.
func TestMergeVersionsRace(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	ctx := testCtx(t)
	o, err := s.CreateObject(ctx, store.NewObject{Kind: "claim"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(`{"side":"a"}`), "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(`{"side":"b"}`), "bob")
	if err != nil {
		t.Fatal(err)
	}
	release := holdObject(t, u, o.ID)
	var (
		wg      sync.WaitGroup
		got     [2]store.Version
		reasons [2]*store.Object
		errs    [2]error
	)
	for i := range 2 {
		wg.Go(func() {
			got[i], reasons[i], errs[i] = s.MergeVersions(ctx, o.ID, []int64{a.Version, b.Version}, json.RawMessage(fmt.Sprintf(`{"merger":%d}`, i)),
				fmt.Sprintf("fr%d", i), &store.Attachment{Object: store.NewObject{Kind: "rationale"}, BaseType: "depends_on", SemanticType: "resolves"})
		})
	}
	waitLockWaiters(t, u, 2)
	release()
	wg.Wait()
	w := 0
	if errs[0] != nil {
		w = 1
	}
	if errs[w] != nil || !errors.Is(errs[1-w], store.ErrConflict) || reasons[1-w] != nil || reasons[w] == nil {
		t.Fatalf("merges: errors %v, reasons %+v; want one success and one ErrConflict", errs, reasons)
	}
	if msg := errs[1-w].Error(); !containsAll(msg, fmt.Sprint(got[w].Version), fmt.Sprint(a.Version), fmt.Sprint(b.Version)) {
		t.Errorf("conflict %q: want it to name the current head %d and the given ones", msg, got[w].Version)
	}
	hs, err := s.Heads(ctx, o.ID)
	if err != nil || len(hs) != 1 || hs[0].Version != got[w].Version || !slices.Equal(hs[0].Parents, []int64{a.Version, b.Version}) {
		t.Fatalf("heads %+v, %v; want the merge %d of %d and %d alone", hs, err, got[w].Version, a.Version, b.Version)
	}
	g, err := s.GetObject(ctx, o.ID)
	if err != nil || g.Forked || g.HeadVersion != got[w].Version || len(g.Edges) != 1 || g.Edges[0].Src != reasons[w].ID {
		t.Fatalf("object %+v, %v; want merged, with the winner's reason edge alone", g, err)
	}
	page, err := s.ListObjects(ctx, store.ObjectFilter{Kinds: []string{"rationale"}})
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

// TestVersionsImmutable: the database refuses to rewrite, delete or
// truncate versions; only is_head may change.
func TestVersionsImmutable(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	storetest.MustCreateObject(t, s, store.NewObject{Kind: "note", Content: []byte(`{"a":1}`)})
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`UPDATE cks_object_versions SET content = '{"a":2}'`,
		`UPDATE cks_object_versions SET parents = '{7}'`,
		`DELETE FROM cks_object_versions`,
		`TRUNCATE cks_object_versions CASCADE`,
	} {
		if _, err := conn.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE cks_object_versions SET is_head = true`); err != nil {
		t.Errorf("is_head refused: %v", err)
	}
}
