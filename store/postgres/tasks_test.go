package postgres_test

import (
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestTaskEventsAppendOnly checks that the database itself refuses UPDATE,
// DELETE and TRUNCATE on cks_task_events, whoever connects.
func TestTaskEventsAppendOnly(t *testing.T) {
	_, u := freshSchema(t)
	s := open(t, u)
	task := storetest.MustEnqueue(t, s, store.NewTask{Title: "x"})
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`UPDATE cks_task_events SET reason = 'rewritten'`,
		`DELETE FROM cks_task_events`,
		`TRUNCATE cks_task_events`,
	} {
		_, err := conn.Exec(ctx, stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO cks_task_events (task_id, at, to_state) VALUES ($1, now(), 'OPEN')`, task.ID); err != nil {
		t.Errorf("insert refused: %v", err)
	}
	got := storetest.MustGet(t, s, task.ID)
	if len(got.Events) != 2 || got.Events[0].Reason != "enqueued" {
		t.Fatalf("events after refused writes: %+v", got.Events)
	}
}
