package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestSubscriptionReadsPerChange (issue 38, finding 5): 25 sessions of 25
// tokens, each subscribed to 20 tasks, then 20 task changes. A change made
// by a call of the hub names its task: it reads that task's resource only,
// once, however many subscriptions there are. A change that names no task
// (another process's) reads every subscribed task resource — at most once
// per interval: a burst of 20 is one pass, and one more change within the
// interval a second pass at its end. One token's sessions hold at most
// MaxSubscriptionsPerToken. It logs the reads per change.
func TestSubscriptionReadsPerChange(t *testing.T) {
	e := newEnv(t)
	bus := &events.Bus{}
	svc := &ops.Services{Tasks: e.store.Tasks, Principals: e.store.Principals, Bus: bus, Clock: e.clock}
	srv := mcpserver.NewServer("v", svc)
	const sessions, each = 25, 20
	var ids []int64
	for len(ids) < mcpserver.MaxSubscriptionsPerToken+mcpserver.MaxSubscriptions {
		var batch []cks.NewTask
		for range 250 {
			batch = append(batch, cks.NewTask{Type: "watched", Title: fmt.Sprint(len(ids) + len(batch))})
		}
		created, err := e.store.Tasks.EnqueueMany(ctx(t), batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range created {
			ids = append(ids, c.Task.ID)
		}
	}
	got := &notes{}
	connect := func(p cks.Principal) *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(auth.WithPrincipal(ctx(t), e.store.Principals, p), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "sub", Version: "0"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { got.add(r.Params.URI) },
		}).Connect(ctx(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); ss.Wait() })
		return cs
	}
	reader := func(name string) cks.Principal {
		p, _, err := auth.CreateToken(ctx(t), e.store.Principals, nil, name, []cks.Grant{{Resource: auth.ResourceTasks, Permission: auth.PermRead}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	uri := func(id int64) string { return fmt.Sprintf("cks://tasks/%d", id) }
	for s := range sessions {
		cs := connect(reader(fmt.Sprint("reader-", s)))
		for _, id := range ids[s*each : (s+1)*each] {
			if err := cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: uri(id)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// 20 changes made by calls of the hub: each names its task.
	admin := connectInMemory(t, srv)
	before := mcpserver.SubscriptionReads(srv)
	for _, id := range ids[:20] {
		if res := call(t, admin, mcpserver.ToolCancelTask, map[string]any{"task_id": id, "reason": "changed"}); res.IsError {
			t.Fatal(text(t, res))
		}
	}
	within(t, "20 notifications", func() bool { return got.count(uri(ids[19])) == 1 && got.len() >= 20 })
	named := mcpserver.SubscriptionReads(srv) - before
	if named != 20 {
		t.Fatalf("20 changes naming their tasks read %d resources, want 20", named)
	}

	// 20 changes that name no task, at once, then one more within the
	// interval.
	armed := e.clock.Armed()
	before = mcpserver.SubscriptionReads(srv)
	for range 20 {
		bus.Publish(events.Event{Type: events.TasksChanged})
	}
	all := int64(sessions * each)
	within(t, "the first full pass", func() bool { return mcpserver.SubscriptionReads(srv)-before >= all })
	bus.Publish(events.Event{Type: events.TasksChanged})
	if err := e.clock.WaitArmed(ctx(t), armed+1); err != nil { // the pass the last change waits for
		t.Fatal(err)
	}
	if n := mcpserver.SubscriptionReads(srv) - before; n != all {
		t.Fatalf("21 changes read %d resources before the interval passed, want one pass of %d", n, all)
	}
	e.clock.Advance(max(mcpserver.DefaultSubscriptionPass, time.Duration(all)*time.Millisecond)) // a millisecond per resource the pass read
	within(t, "the second full pass", func() bool { return mcpserver.SubscriptionReads(srv)-before >= 2*all })
	unnamed := mcpserver.SubscriptionReads(srv) - before
	if unnamed != 2*all {
		t.Fatalf("21 changes naming no task read %d resources, want two passes of %d", unnamed, all)
	}
	t.Logf("reads per change: %d for a change naming its task, %d for one naming none (in a burst; %d subscriptions)",
		named/20, unnamed/21, all)

	// One token's sessions hold at most MaxSubscriptionsPerToken.
	heavy := reader("heavy")
	var refused error
	const most = mcpserver.MaxSubscriptions
	for s := 0; refused == nil && (s+1)*most <= len(ids); s++ {
		cs := connect(heavy)
		for _, id := range ids[s*most : (s+1)*most] {
			if refused = cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: uri(id)}); refused != nil {
				if n := s*most + (int(id) - int(ids[s*most])); n != mcpserver.MaxSubscriptionsPerToken {
					t.Fatalf("subscription %d of one token refused, want the %d+1st", n+1, mcpserver.MaxSubscriptionsPerToken)
				}
				break
			}
		}
	}
	if refused == nil || !strings.Contains(refused.Error(), "the most one token may") {
		t.Fatalf("subscriptions of one token over %d: %v, want refused naming the cap", mcpserver.MaxSubscriptionsPerToken, refused)
	}
}
