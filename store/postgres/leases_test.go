package postgres_test

import (
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestLeaseTokensStoredHashed: no row of the schema holds a plain lease
// token — not of a live lease, not of an aborted one — only its hash.
func TestLeaseTokensStoredHashed(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	ctx := testCtx(t)
	storetest.MustEnqueue(t, s, store.NewTask{Type: "t"})
	first := storetest.MustClaimOne(t, s, "w1")
	if _, _, err := s.Stop(ctx, first.ID, "op", "hold", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx, first.ID, "op", ""); err != nil {
		t.Fatal(err)
	}
	second := storetest.MustClaimOne(t, s, "w2")
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(text string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM cks_outbox_tasks r WHERE r::text LIKE '%' || $1 || '%')
	+ (SELECT count(*) FROM cks_task_aborts r WHERE r::text LIKE '%' || $1 || '%')
	+ (SELECT count(*) FROM cks_task_events r WHERE r::text LIKE '%' || $1 || '%')`, text).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tok := range []string{first.LeaseToken, second.LeaseToken} {
		if n := count(tok); n != 0 {
			t.Fatalf("%d rows hold the plain lease token %s", n, tok)
		}
		if n := count(store.HashLeaseToken(tok)); n != 1 {
			t.Fatalf("%d rows hold the hash of lease token %s, want 1", n, tok)
		}
	}
}

// TestUpgradeHashesPlainLeaseTokens opens a schema in the shape of a release
// that kept lease tokens in plain text (lease_token in cks_outbox_tasks and
// cks_task_aborts, indexed) and did not bind principals to leases: the
// tokens are hashed, the plain columns dropped, the old claim credentials
// bound, and the live lease and pending abort keep working.
func TestUpgradeHashesPlainLeaseTokens(t *testing.T) {
	schema, u := freshSchema(t)
	s := open(t, u)
	old := storetest.SetUpOldLeases(t, s)
	s.Close()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{q: `ALTER TABLE cks_task_aborts DROP COLUMN lease_token_hash`},
		{q: `ALTER TABLE cks_task_aborts ADD COLUMN lease_token TEXT NOT NULL DEFAULT ''`},
		{q: `UPDATE cks_task_aborts SET lease_token = $1 WHERE abort_id = $2`, args: []any{old.AbortToken, old.AbortID}},
		{q: `CREATE INDEX idx_task_aborts_token ON cks_task_aborts(task_id, lease_token)`},
		{q: `ALTER TABLE cks_outbox_tasks DROP COLUMN lease_token_hash`},
		{q: `ALTER TABLE cks_outbox_tasks ADD COLUMN lease_token TEXT NOT NULL DEFAULT ''`},
		{q: `UPDATE cks_outbox_tasks SET lease_token = $1 WHERE task_id = $2`, args: []any{old.LiveToken, old.Live}},
		{q: `ALTER TABLE cks_principals DROP COLUMN task_id`},
		{q: `ALTER TABLE cks_principals DROP COLUMN lease_token_hash`},
	} {
		if _, err := conn.Exec(ctx, stmt.q, stmt.args...); err != nil {
			t.Fatalf("%s: %v", stmt.q, err)
		}
	}

	s = open(t, u)
	storetest.CheckUpgradedLeases(t, s, old)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
WHERE table_schema = $1 AND column_name = 'lease_token'`, schema).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tables still have lease_token after the upgrade (%v)", n, err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'idx_task_aborts_token'`,
		schema).Scan(&n); err != nil || n != 0 {
		t.Errorf("the index on the plain tokens is still there (%d, %v)", n, err)
	}
	s.Close()
	s = open(t, u)
	if n, err := s.DeleteEndedLeasePrincipals(ctx); err != nil || n != 1 {
		t.Fatalf("cleanup after reopening = %d, %v; want 1 (the completed task's credential)", n, err)
	}
}
