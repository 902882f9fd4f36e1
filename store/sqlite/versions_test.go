package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/sqlite"
	"github.com/cks-dev/cks/store/storetest"
)

// TestUpgradeBackfillsVersions opens a database whose knowledge tables
// predate versions (no cks_object_versions, no head_version or heads on
// cks_objects): every object gets one head version equal to its content, by
// its creator, at its last update, and the object points at it.
func TestUpgradeBackfillsVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	c1, h1, err := store.CanonicalContent(json.RawMessage(`{"q": "why?", "n": 1}`), "content")
	if err != nil {
		t.Fatal(err)
	}
	c2, h2, err := store.CanonicalContent(json.RawMessage(`{}`), "content")
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE cks_objects (
		object_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
		content TEXT NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL, current_status TEXT NOT NULL DEFAULT '',
		claimed_by TEXT NOT NULL DEFAULT '', claim_token TEXT NOT NULL DEFAULT '', claimed_at TEXT,
		round INTEGER NOT NULL DEFAULT 0, created_by TEXT NOT NULL DEFAULT '',
		created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
	CREATE TABLE cks_edges (
		edge_id INTEGER PRIMARY KEY AUTOINCREMENT, src INTEGER NOT NULL REFERENCES cks_objects(object_id),
		dst INTEGER NOT NULL REFERENCES cks_objects(object_id), base_type TEXT NOT NULL,
		semantic_type TEXT NOT NULL DEFAULT '', weight REAL, created_at TEXT NOT NULL);
	CREATE TABLE cks_transition_log (
		seq INTEGER PRIMARY KEY AUTOINCREMENT, object_id INTEGER NOT NULL REFERENCES cks_objects(object_id),
		ts TEXT NOT NULL, agent TEXT NOT NULL DEFAULT '', action TEXT NOT NULL,
		transitioned_to TEXT NOT NULL DEFAULT '', reasoning_node_id INTEGER REFERENCES cks_objects(object_id),
		content_hash TEXT NOT NULL, round INTEGER NOT NULL DEFAULT 0)`)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	old := []struct {
		content, hash, by, updated string
	}{
		{string(c1), h1, "cli", "2026-11-30T12:00:05.000000000Z"},
		{string(c2), h2, "researcher", "2026-11-30T12:01:00.500000000Z"},
		{string(c1), h1, "", "2026-11-30T12:02:00.000000000Z"},
	}
	for _, o := range old {
		if _, err := db.Exec(`INSERT INTO cks_objects (kind, content, content_hash, current_status, created_by, created_at, updated_at)
VALUES ('question', ?, ?, 'awaiting_research', ?, '2026-11-30T12:00:00.000000000Z', ?)`, o.content, o.hash, o.by, o.updated); err != nil {
			db.Close()
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO cks_edges (src, dst, base_type, created_at) VALUES (2, 1, 'depends_on', '2026-11-30T12:03:00.000000000Z')`); err != nil {
		db.Close()
		t.Fatal(err)
	}
	db.Close()

	s := open(t, path)
	ctx := t.Context()
	for i, o := range old {
		id := int64(i + 1)
		obj, err := s.GetObject(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		heads, err := s.Heads(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.ObjectVersions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(heads) != 1 || len(all) != 1 {
			t.Fatalf("object %d: %d heads, %d versions after the upgrade, want 1 and 1", id, len(heads), len(all))
		}
		v := heads[0]
		if v.ObjectID != id || len(v.Parents) != 0 || string(v.Content) != o.content || v.ContentHash != o.hash ||
			v.Author != o.by || v.CreatedAt.Format("2006-01-02T15:04:05.000000000Z") != o.updated {
			t.Errorf("object %d: backfilled version %+v, want content %s hash %s by %q at %s", id, v, o.content, o.hash, o.by, o.updated)
		}
		if obj.HeadVersion != v.Version || obj.Forked || string(obj.Content) != o.content {
			t.Errorf("object %d after the upgrade: head_version %d (want %d), forked %v, content %s",
				id, obj.HeadVersion, v.Version, obj.Forked, obj.Content)
		}
	}
	// The upgraded objects take versions like new ones.
	v, err := s.WriteVersion(ctx, 1, 1, json.RawMessage(`{"q": "how?"}`), "editor")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteVersion(ctx, 1, 1, json.RawMessage(`{"q": "when?"}`), "editor"); err != nil {
		t.Fatal(err)
	}
	forks, err := s.ForkedObjects(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(forks) != 1 || forks[0].ObjectID != 1 || len(forks[0].Heads) != 2 || forks[0].Heads[0] != v.Version {
		t.Fatalf("forks after two writes from the backfilled version: %+v", forks)
	}
	edges, err := s.ListEdges(ctx, 0, 10)
	if err != nil || len(edges) != 1 || edges[0].Src != 2 {
		t.Fatalf("edges after the upgrade: %+v, %v", edges, err)
	}

	// Reopening runs no second backfill.
	s.Close()
	s = open(t, path)
	for id := int64(1); id <= 3; id++ {
		all, err := s.ObjectVersions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if id == 1 {
			want = 3 // the backfilled one and the two writes
		}
		if len(all) != want {
			t.Errorf("object %d after reopening: %d versions, want %d", id, len(all), want)
		}
	}
}

// TestForkedObjectsUseIndexes checks that ForkedObjects reads the forked
// objects from idx_objects_forked and their heads from
// idx_object_versions_head, scanning neither table, before and after
// ANALYZE; and that a version write counts the heads on the latter.
func TestForkedObjectsUseIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	ctx := t.Context()
	for i := range 50 {
		o, err := s.CreateObject(ctx, store.NewObject{Kind: "claim", Content: json.RawMessage(`{"n": 0}`)})
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			for range 2 {
				if _, err := s.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(`{"n": 1}`), "editor"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	forks, err := s.ForkedObjects(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(forks) != 10 {
		t.Fatalf("%d forks, want 10: %+v", len(forks), forks)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := db.Exec(`ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		plan := queryPlan(t, db, sqlite.ForkedObjectsSQL, 0, 100)
		t.Logf("fork plan (analyzed %v):\n%s", analyzed, plan)
		for _, want := range []string{"idx_objects_forked", "idx_object_versions_head"} {
			if !strings.Contains(plan, want) {
				t.Errorf("the fork listing does not use %s:\n%s", want, plan)
			}
		}
		for _, bad := range []string{"SCAN cks_objects", "SCAN v", "SCAN cks_object_versions"} {
			if strings.Contains(plan, bad) {
				t.Errorf("the fork listing plan has %q:\n%s", bad, plan)
			}
		}
		plan = queryPlan(t, db, sqlite.CountHeadsSQL, 1)
		t.Logf("head count plan (analyzed %v):\n%s", analyzed, plan)
		if !strings.Contains(plan, "idx_object_versions_head") || strings.Contains(plan, "SCAN") {
			t.Errorf("the head count of a version write does not search idx_object_versions_head:\n%s", plan)
		}
	}
}

// TestVersionsImmutable: the database refuses to rewrite or delete a
// version; only is_head may change.
func TestVersionsImmutable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	storetest.MustCreateObject(t, s, store.NewObject{Kind: "note", Content: []byte(`{"a":1}`)})
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`UPDATE cks_object_versions SET content = '{"a":2}'`,
		`UPDATE cks_object_versions SET parents = '[7]'`,
		`DELETE FROM cks_object_versions`,
	} {
		if _, err := db.Exec(stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
	if _, err := db.Exec(`UPDATE cks_object_versions SET is_head = 1`); err != nil {
		t.Errorf("is_head refused: %v", err)
	}
}
