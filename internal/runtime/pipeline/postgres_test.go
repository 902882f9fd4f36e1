package pipeline_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/service/llm"
)

// TestListenConnectionKilled: with the fallback poll at an hour, only the
// notification can wake the steps; after the LISTEN connection is killed
// (pg_terminate_backend), questions still progress because the listener
// reconnects (and re-queries on reconnecting).
func TestListenConnectionKilled(t *testing.T) {
	scratch := backendtest.PostgresURL(t)
	ctx := context.Background()
	// A distinct application_name marks this test's connections, so only
	// they are killed (other packages' tests share the server).
	app := "cks-listen-kill-" + liveness.NewInstanceID()[:8]
	u, err := url.Parse(scratch)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	st, err := backend.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	start(t, pipeline.Config{Store: st.Objects, Changes: st.Changes, Model: llm.NewOffline(), Corpus: corpus(t), Poll: time.Hour})
	if o := settle(t, st.Objects, submit(t, st.Objects, questions[0]).ID)[0]; o.Status != cks.StatusResolved {
		t.Fatalf("before the kill: %s", o.Status)
	}

	admin, err := pgx.Connect(ctx, scratch)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// The listener's last statement is the driver's generated LISTEN (after
	// sqlc's name comment).
	var killed int
	deadline := time.Now().Add(time.Minute)
	for killed == 0 {
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name = $1 AND query LIKE '%LISTEN cks_changes%') k`, app).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no LISTEN connection of the orchestrator found")
		}
	}
	if o := settle(t, st.Objects, submit(t, st.Objects, questions[1]).ID)[0]; o.Status != cks.StatusResolved {
		t.Fatalf("after the kill: %s", o.Status)
	}
}
