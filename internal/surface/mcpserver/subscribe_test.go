package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestSubscriptions (in memory, over a real store): a server with an event
// bus declares resources.subscribe and one without does not; a change
// published on the bus notifies the URI whose task changed and not the one
// whose task did not; a session holds at most MaxSubscriptions URIs.
func TestSubscriptions(t *testing.T) {
	e := newEnv(t)
	if c := connectInMemory(t, mcpserver.NewServer("v", &ops.Services{Tasks: e.store.Tasks})).InitializeResult().Capabilities; c.Resources == nil || c.Resources.Subscribe {
		t.Fatalf("without a bus: resources %+v, want resources without subscribe", c.Resources)
	}
	bus := &events.Bus{}
	srv := mcpserver.NewServer("v", &ops.Services{Tasks: e.store.Tasks, Bus: bus, Clock: e.clock})
	var mu sync.Mutex
	var got []string
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(auth.WithLocalOperator(ctx(t)), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			got = append(got, r.Params.URI)
			mu.Unlock()
		}}).Connect(ctx(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	if c := cs.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe {
		t.Fatalf("with a bus: resources %+v, want subscribe", c.Resources)
	}

	var uris []string
	var ids []int64
	for i := range mcpserver.MaxSubscriptions + 1 {
		task, _, err := e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "t", Title: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
		uris = append(uris, fmt.Sprintf("cks://tasks/%d", task.ID))
	}
	for _, uri := range uris[:mcpserver.MaxSubscriptions] {
		if err := cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	err = cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: uris[mcpserver.MaxSubscriptions]})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("holds %d subscriptions", mcpserver.MaxSubscriptions)) {
		t.Fatalf("subscription %d: %v, want refused naming the cap", mcpserver.MaxSubscriptions+1, err)
	}

	// Each change is one pass over every subscribed URI, one after the
	// other: a URI notified wrongly in the first pass would come before the
	// second pass's.
	for n, id := range ids[1:3] {
		if _, err := e.store.Tasks.Cancel(ctx(t), id, "test", "gone"); err != nil {
			t.Fatal(err)
		}
		// A change that names no task is a pass over every task resource,
		// at most one per interval: the clock moves it on.
		e.clock.Advance(mcpserver.DefaultSubscriptionPass)
		bus.Publish(events.Event{Type: events.TasksChanged, At: e.clock.Now()})
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			k := len(got)
			mu.Unlock()
			if k > n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no notification of cancelled task %d", id)
			}
			time.Sleep(5 * time.Millisecond) // polling a condition
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := uris[1:3]; !slices.Equal(got, want) {
		t.Fatalf("notified %v, want exactly %v", got, want)
	}
}
