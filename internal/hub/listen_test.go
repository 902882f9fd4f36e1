package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestFiftyStopWaitsShareOneListen: fifty concurrent `stop --wait`s against
// one hub on Postgres wait over the hub's one LISTEN connection (DESIGN: one
// notifier per process), not one connection each.
func TestFiftyStopWaitsShareOneListen(t *testing.T) {
	const waiters = 50
	u, err := url.Parse(backendtest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "hub-listen-test")
	u.RawQuery = q.Encode()
	dbURL := u.String()

	ctx := context.Background()
	st, err := backend.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []int64
	for i := range waiters {
		task, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: "t", Title: fmt.Sprint("task ", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	if ts, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"t"}, N: waiters, Lease: time.Hour}); err != nil || len(ts) != waiters {
		t.Fatalf("claim: %d tasks, %v", len(ts), err)
	}

	h := runHub(t, hub.Config{DataDir: datadir.Dir(t.TempDir()), DatabaseURL: dbURL})
	reqCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, id := range ids {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(reqCtx, "POST", fmt.Sprintf("%s/v1/tasks/%d/stop", h.url, id),
				strings.NewReader(`{"reason":"hold","deadline":"10m"}`))
			req.Header.Set("Authorization", "Bearer "+h.token)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("stop of task %d answered %d before its wait ended", id, resp.StatusCode)
			}
		})
	}

	admin, err := pgx.Connect(ctx, os.Getenv("CKS_TEST_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	listeners := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE application_name = 'hub-listen-test' AND query LIKE '%LISTEN %'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Every stop has recorded its abort (the task is STOPPED, its abort pending) before it
	// waits; wait for all fifty, then count while they wait.
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := st.Tasks.CountTasks(ctx, cks.TaskFilter{States: []cks.TaskState{cks.TaskStopped}})
		if err != nil {
			t.Fatal(err)
		}
		if n == waiters && listeners() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d of %d stops are waiting", n, waiters)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := listeners(); n != 1 {
		t.Fatalf("%d LISTEN connections for %d waiting stops, want 1", n, waiters)
	}
}
