package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/sqlite"
)

// TestTransitionLogAppendOnly checks that the database itself refuses UPDATE
// and DELETE on cks_transition_log, whoever connects.
func TestTransitionLogAppendOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	o, err := s.CreateObject(t.Context(), store.NewObject{Kind: "question", Status: "awaiting_research", CreatedBy: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`UPDATE cks_transition_log SET action = 'rewritten'`,
		`UPDATE cks_transition_log SET transitioned_to = 'resolved' WHERE object_id = 1`,
		`DELETE FROM cks_transition_log`,
	} {
		_, err := db.Exec(stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
	if _, err := db.Exec(`INSERT INTO cks_transition_log (object_id, ts, agent, action, transitioned_to, content_hash)
VALUES (?, '2026-01-01T00:00:00.000000000Z', 'test', 'noted', 'awaiting_research', ?)`, o.ID, o.ContentHash); err != nil {
		t.Errorf("insert refused: %v", err)
	}
	got, err := s.GetObject(t.Context(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Log) != 2 || got.Log[0].Action != "created" || got.Log[0].Agent != "cli" || got.Log[1].Action != "noted" {
		t.Fatalf("log after refused writes: %+v", got.Log)
	}
}

// queryPlan returns the EXPLAIN QUERY PLAN details of q, one per line.
func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var (
			id, parent, notused int
			detail              string
		)
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestObjectQueriesUseIndexes checks that the claim query finds its
// candidates through idx_objects_claim, in claim order (no sort, no scan of
// cks_objects), and that ReleaseStaleClaims reads idx_objects_claimed_at.
func TestObjectQueriesUseIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	for i := range 50 { // some rows, so the plan is not of an empty table
		st := []string{"awaiting_research", "awaiting_critique", ""}[i%3]
		if _, err := s.CreateObject(t.Context(), store.NewObject{Kind: "question", Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ClaimObjects(t.Context(), "awaiting_critique", "critic-1", 5); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	plan := queryPlan(t, db, sqlite.ClaimObjectsSQL, "w", "2026-01-01T00:00:00.000000000Z",
		"2026-01-01T00:00:00.000000000Z", "awaiting_critique", 10)
	t.Logf("claim plan:\n%s", plan)
	if !strings.Contains(plan, "idx_objects_claim (current_status=? AND claimed_by=?)") {
		t.Errorf("the claim query does not search idx_objects_claim on (current_status, claimed_by):\n%s", plan)
	}
	for _, bad := range []string{"SCAN c", "TEMP B-TREE"} {
		if strings.Contains(plan, bad) {
			t.Errorf("the claim query plan has %q:\n%s", bad, plan)
		}
	}

	plan = queryPlan(t, db, sqlite.ReleaseStaleSQL, "2026-01-01T00:00:00.000000000Z", "2026-01-01T00:00:00.000000000Z")
	t.Logf("release plan:\n%s", plan)
	if !strings.Contains(plan, "idx_objects_claimed_at") || strings.Contains(plan, "SCAN cks_objects") {
		t.Errorf("ReleaseStaleClaims does not search idx_objects_claimed_at:\n%s", plan)
	}

	plan = queryPlan(t, db, `SELECT edge_id FROM cks_edges WHERE src = ? OR dst = ? ORDER BY edge_id`, 1, 1)
	t.Logf("edges plan:\n%s", plan)
	if !strings.Contains(plan, "idx_edges_src") || !strings.Contains(plan, "idx_edges_dst") {
		t.Errorf("the edges of an object are not read through idx_edges_src and idx_edges_dst:\n%s", plan)
	}
}

// TestClaimObjectsAcrossHandles claims from one file through several handles
// (each its own writer connection, as separate processes would have) at
// once: every object is claimed exactly once, each with its own token.
func TestClaimObjectsAcrossHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	handles := []*sqlite.Store{open(t, path), open(t, path), open(t, path)}
	const total = 60
	for range total {
		if _, err := handles[0].CreateObject(t.Context(), store.NewObject{Kind: "question", Status: "awaiting_critique"}); err != nil {
			t.Fatal(err)
		}
	}
	type claim struct {
		id    int64
		token string
	}
	results := make(chan []claim, 2*len(handles))
	errs := make(chan error, 2*len(handles))
	for i := range 2 * len(handles) {
		go func() {
			var got []claim
			for {
				objs, err := handles[i%len(handles)].ClaimObjects(t.Context(), "awaiting_critique", fmt.Sprintf("critic-%d", i), 4)
				if err != nil {
					errs <- err
					return
				}
				if len(objs) == 0 {
					results <- got
					return
				}
				for _, o := range objs {
					got = append(got, claim{o.ID, o.ClaimToken})
				}
			}
		}()
	}
	seen := map[int64]bool{}
	tokens := map[string]bool{}
	for range 2 * len(handles) {
		select {
		case err := <-errs:
			t.Fatal(err)
		case got := <-results:
			for _, c := range got {
				if seen[c.id] {
					t.Errorf("object %d claimed twice", c.id)
				}
				if c.token == "" || tokens[c.token] {
					t.Errorf("object %d: claim token %q empty or reused", c.id, c.token)
				}
				seen[c.id], tokens[c.token] = true, true
			}
		}
	}
	if len(seen) != total {
		t.Fatalf("claimed %d objects, want %d", len(seen), total)
	}
}
