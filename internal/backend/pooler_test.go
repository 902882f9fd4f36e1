package backend_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// openPooled opens a backend on url (through PgBouncer), closed with t.
func openPooled(t testing.TB, url string) *backend.Backend {
	t.Helper()
	st, err := backend.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestBehindTransactionPooler: two handles — two hubs — on one database
// through PgBouncer in transaction mode, each with more clients than the
// pooler has server connections, so that one handle's statements run on
// the server connections the other's just left: tasks are created, claimed
// once each, run and completed by workers of both; a change one handle
// publishes wakes the other's watcher (LISTEN past the pooler, cks_listen);
// objects and liveness rows are written and read. With server-side
// prepared statements (pgx's default) the statements fail on a server
// connection that has not prepared them.
func TestBehindTransactionPooler(t *testing.T) {
	url := drivertest.PoolerURL(t, true)
	a, b := openPooled(t, url), openPooled(t, url)
	ctx := drivertest.Ctx(t)

	woke := make(chan struct{}, 1)
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Go(func() {
		err := a.Changes.WatchChanges(wctx, []string{cks.TopicTasksReady}, func(string) {
			select {
			case woke <- struct{}{}:
			default:
			}
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("watch through the pooler: %v", err)
		}
	})
	defer func() { stop(); wg.Wait() }()
	// The watcher is connected once a notification it should see arrives;
	// until then publish again.
	go func() {
		defer close(ready)
		for i := 0; ; i++ {
			if _, _, err := b.Tasks.Enqueue(ctx, cks.NewTask{Type: "warmup", Title: fmt.Sprint(i)}); err != nil {
				t.Errorf("enqueue: %v", err)
				return
			}
			select {
			case <-woke:
				return
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				t.Error("no notification through the pooler's LISTEN server")
				return
			}
		}
	}()
	<-ready

	const tasks, workers = 200, 12
	for i := range tasks {
		st := a
		if i%2 == 1 {
			st = b
		}
		if _, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: "build", Title: fmt.Sprint("t", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	done := map[int64]int{}
	var ww sync.WaitGroup
	for w := range workers {
		st := a
		if w%2 == 1 {
			st = b
		}
		ww.Go(func() {
			for {
				claimed, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: fmt.Sprint("w", w), Types: []string{"build"}, N: 3, Lease: time.Minute})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(claimed) == 0 {
					return
				}
				for _, c := range claimed {
					if _, err := st.Tasks.MarkRunning(ctx, c.ID, c.LeaseToken); err != nil {
						t.Errorf("mark running %d: %v", c.ID, err)
						return
					}
					if _, err := st.Tasks.Complete(ctx, c.ID, c.LeaseToken, false, "ok"); err != nil {
						t.Errorf("complete %d: %v", c.ID, err)
						return
					}
					mu.Lock()
					done[c.ID]++
					mu.Unlock()
				}
			}
		})
	}
	ww.Wait()
	if len(done) != tasks {
		t.Fatalf("%d tasks completed, want %d", len(done), tasks)
	}
	for id, n := range done {
		if n != 1 {
			t.Fatalf("task %d completed %d times", id, n)
		}
	}

	o, err := a.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "claim", Content: []byte(`{"k":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Objects.GetObject(ctx, o.ID); err != nil || got.ID != o.ID {
		t.Fatalf("object through the other handle: %+v, %v", got, err)
	}
	r := backendtest.Liveness("pooled-1", "critic", 0)
	backendtest.MustUpsert(t, a, r)
	if ps, err := b.Liveness.ListProcesses(ctx); err != nil || len(ps) != 1 {
		t.Fatalf("processes through the other handle: %d, %v", len(ps), err)
	}
}

// TestPollsOnlyBehindAPooler: behind a transaction pooler with no
// cks_listen server the listener connects and never delivers (a LISTEN
// there would be lost with its server connection), so watchers move on
// their polls; the ledger works as before.
func TestPollsOnlyBehindAPooler(t *testing.T) {
	st := openPooled(t, drivertest.PoolerURL(t, false))
	ctx := drivertest.Ctx(t)
	l := st.Driver().Listener()
	if err := l.Connect(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer l.Close(ctx)
	if _, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: "build"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if topics, err := l.WaitForTopics(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait = %v, %v; want the context's end and no topic", topics, err)
	}
	if c := backendtest.ClaimType(t, st, "w", "build"); c.ID == 0 {
		t.Fatal("nothing claimed")
	}
}

// TestPoolerRefusesURLSearchPath: a search_path in the URL is session
// state a transaction pooler does not keep; the driver says where to set it.
func TestPoolerRefusesURLSearchPath(t *testing.T) {
	url := drivertest.WithParam(drivertest.PoolerURL(t, true), "search_path", "elsewhere")
	_, err := backend.Open(context.Background(), url)
	if err == nil || !strings.Contains(err.Error(), "ALTER ROLE") {
		t.Fatalf("open with a search_path behind a pooler: %v", err)
	}
}
