package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/sqlite"
	"github.com/cks-dev/cks/store/storetest"
)

// TestLeaseTokensStoredHashed: the database file (and its WAL) never holds
// a plain lease token — not of a live lease, not of an aborted one — only
// its hash.
func TestLeaseTokensStoredHashed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	storetest.MustEnqueue(t, s, store.NewTask{Type: "t"})
	first := storetest.MustClaimOne(t, s, "w1")
	if _, _, err := s.Stop(t.Context(), first.ID, "op", "hold", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(t.Context(), first.ID, "op", ""); err != nil {
		t.Fatal(err)
	}
	second := storetest.MustClaimOne(t, s, "w2")
	var content strings.Builder
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		content.Write(b)
	}
	for _, tok := range []string{first.LeaseToken, second.LeaseToken} {
		if strings.Contains(content.String(), tok) {
			t.Fatalf("the database holds the plain lease token %s", tok)
		}
	}
	if !strings.Contains(content.String(), store.HashLeaseToken(second.LeaseToken)) {
		t.Fatal("the database does not hold the hash of the live lease's token")
	}
	if !strings.Contains(content.String(), store.HashLeaseToken(first.LeaseToken)) {
		t.Fatal("the database does not hold the hash of the aborted lease's token")
	}
}

// TestUpgradeHashesPlainLeaseTokens opens a database in the shape of a
// release that kept lease tokens in plain text (lease_token in
// cks_outbox_tasks and cks_task_aborts, indexed) and did not bind principals
// to leases: the tokens are hashed, the plain columns dropped, the old claim
// credentials bound, and the live lease and pending abort keep working.
func TestUpgradeHashesPlainLeaseTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s := open(t, path)
	old := storetest.SetUpOldLeases(t, s)
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{q: `DROP INDEX idx_task_aborts_lease`},
		{q: `ALTER TABLE cks_task_aborts DROP COLUMN lease_token_hash`},
		{q: `ALTER TABLE cks_task_aborts ADD COLUMN lease_token TEXT NOT NULL DEFAULT ''`},
		{q: `UPDATE cks_task_aborts SET lease_token = ? WHERE abort_id = ?`, args: []any{old.AbortToken, old.AbortID}},
		{q: `CREATE INDEX idx_task_aborts_task ON cks_task_aborts(task_id, lease_token)`},
		{q: `ALTER TABLE cks_outbox_tasks DROP COLUMN lease_token_hash`},
		{q: `ALTER TABLE cks_outbox_tasks ADD COLUMN lease_token TEXT NOT NULL DEFAULT ''`},
		{q: `UPDATE cks_outbox_tasks SET lease_token = ? WHERE task_id = ?`, args: []any{old.LiveToken, old.Live}},
		{q: `DROP INDEX idx_principals_lease`},
		{q: `ALTER TABLE cks_principals DROP COLUMN task_id`},
		{q: `ALTER TABLE cks_principals DROP COLUMN lease_token_hash`},
	} {
		if _, err := db.Exec(stmt.q, stmt.args...); err != nil {
			db.Close()
			t.Fatalf("%s: %v", stmt.q, err)
		}
	}
	db.Close()

	s = open(t, path)
	storetest.CheckUpgradedLeases(t, s, old)
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"cks_outbox_tasks", "cks_task_aborts"} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name = 'lease_token'`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s still has lease_token after the upgrade (%d, %v)", table, n, err)
		}
	}
	var idx int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'idx_task_aborts_task'`).Scan(&idx); err != nil || idx != 0 {
		t.Errorf("the index on the plain tokens is still there (%d, %v)", idx, err)
	}
	// Opening again changes nothing more.
	s.Close()
	s = open(t, path)
	if n, err := s.DeleteEndedLeasePrincipals(t.Context()); err != nil || n != 1 {
		t.Fatalf("cleanup after reopening = %d, %v; want 1 (the completed task's credential)", n, err)
	}
}

// TestClaimUsesIndexes: a claim finds its candidates in claim order from the
// claim indexes (no sort, no scan), and updates them by primary key — never
// walking every OPEN task — before and after ANALYZE.
func TestClaimUsesIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	s := open(t, path)
	for i := range 200 {
		typ := "a"
		if i%2 == 1 {
			typ = "b"
		}
		storetest.MustEnqueue(t, s, store.NewTask{Type: typ, Priority: i % 7})
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
		for _, types := range [][]string{{"a"}, nil, {"a", "b"}} {
			cand, cargs, update, uargs := sqlite.ClaimStatements("w", types, 3, storetest.T0, []int64{3, 5, 7})
			plan := queryPlan(t, db, cand, cargs...)
			if !strings.Contains(plan, "idx_outbox_tasks_claim") || strings.Contains(plan, "SCAN c") {
				t.Errorf("claim candidates of %v (analyzed %v) do not come from a claim index:\n%s", types, analyzed, plan)
			}
			plan = queryPlan(t, db, update, uargs...)
			if strings.Count(plan, "USING INTEGER PRIMARY KEY") != 2 || strings.Contains(plan, "idx_outbox_tasks") ||
				strings.Contains(plan, "SCAN c") || strings.Contains(plan, "SCAN cks_outbox_tasks") {
				t.Errorf("the claim's update (analyzed %v) does not go by primary key:\n%s", analyzed, plan)
			}
		}
	}
}
