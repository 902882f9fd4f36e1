package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/postgres"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/jackc/pgx/v5"
)

func controlStore(t *testing.T) (*postgres.Store, string) {
	t.Helper()
	_, u := freshSchema(t)
	return open(t, u), u
}

func claimOne(t *testing.T, s *postgres.Store, worker string) store.ClaimedTask {
	t.Helper()
	ts, err := s.Claim(testCtx(t), worker, nil, 1, time.Minute)
	if err != nil || len(ts) != 1 {
		t.Fatalf("claim: %v, %v", ts, err)
	}
	return ts[0]
}

// TestTaskDecisionsAppendOnly checks that the database refuses changes to
// cks_task_decisions.
func TestTaskDecisionsAppendOnly(t *testing.T) {
	s, u := controlStore(t)
	ctx := testCtx(t)
	task := storetest.MustEnqueue(t, s, store.NewTask{Type: "a"})
	c := claimOne(t, s, "w")
	if _, err := s.RecordDecision(ctx, task.ID, c.LeaseToken, "k", "t", 1); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`UPDATE cks_task_decisions SET text = 'rewritten'`,
		`DELETE FROM cks_task_decisions`,
		`TRUNCATE cks_task_decisions`,
	} {
		if _, err := conn.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
}

// TestUpgradesOlderEvidenceSchema opens a schema whose evidence table lacks
// restart and whose task table lacks metadata.
func TestUpgradesOlderEvidenceSchema(t *testing.T) {
	schema, u := freshSchema(t)
	s := open(t, u)
	task := storetest.MustEnqueue(t, s, store.NewTask{Type: "a"})
	c := claimOne(t, s, "w")
	if _, err := s.AddEvidence(testCtx(t), task.ID, c.LeaseToken, "log", "x"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	admin(t, baseURL(t), `ALTER TABLE `+schema+`.cks_task_evidence DROP COLUMN restart;
	ALTER TABLE `+schema+`.cks_outbox_tasks DROP COLUMN metadata;
	DROP TABLE `+schema+`.cks_task_aborts; DROP TABLE `+schema+`.cks_task_decisions;`)
	s = open(t, u)
	got := storetest.MustGet(t, s, task.ID)
	if string(got.Metadata) != `{}` || got.Current == nil || len(got.Current.Evidence) != 1 || got.Current.Evidence[0].Restart != 0 {
		t.Fatalf("upgraded task %+v / %+v", got, got.Current)
	}
}
