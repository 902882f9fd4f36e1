package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
	"github.com/cks-dev/cks/internal/waitfor"
)

// TestOutputResource (both backends): cks://tasks/ID/output reads the
// task's output as get_output answers it; subscribed, it is notified when
// a chunk is appended and when the attempt ends (woken by the ledger's
// output feed, no bus event needed), and no more once unsubscribed.
func TestOutputResource(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		store := open(t)
		srv := mcpserver.NewServer("v", &ops.Services{Tasks: store.Tasks, Bus: &events.Bus{}})
		var mu sync.Mutex
		n := 0
		notified := func() int { mu.Lock(); defer mu.Unlock(); return n }
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(auth.WithLocalOperator(ctx(t)), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
				mu.Lock()
				n++
				mu.Unlock()
			}}).Connect(ctx(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); ss.Wait() })
		s := store.Tasks
		task, _, err := s.Enqueue(ctx(t), cks.NewTask{Type: "logs"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx(t), ledger.ClaimParams{Worker: "w", Types: []string{"logs"}, N: 1, Lease: time.Minute})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim: %v %v", c, err)
		}
		add := func(text string) {
			t.Helper()
			if _, err := s.AppendOutput(ctx(t), task.ID, c[0].LeaseToken, "", text); err != nil {
				t.Fatal(err)
			}
		}
		uri := fmt.Sprintf("cks://tasks/%d/output", task.ID)
		read := func() cks.OutputPage {
			t.Helper()
			res, err := cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			var p cks.OutputPage
			if err := json.Unmarshal([]byte(res.Contents[0].Text), &p); err != nil {
				t.Fatal(err)
			}
			return p
		}
		add("first\n")
		if p := read(); len(p.Chunks) != 1 || p.Chunks[0].Text != "first\n" || !p.Live {
			t.Fatalf("read = %+v", p)
		}
		if err := cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		// The watch's first wake (the listener connected) may notify once:
		// count from what has come once it settled on a chunk.
		add("second\n")
		waitfor.Until(t, "a notification of the appended chunk", func() bool { return notified() >= 1 })
		if p := read(); len(p.Chunks) != 2 || p.Chunks[1].Text != "second\n" {
			t.Fatalf("read after the notification = %+v", p)
		}
		before := notified()
		if _, err := s.Complete(ctx(t), task.ID, c[0].LeaseToken, false, "ok"); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, "a notification of the attempt's end", func() bool { return notified() > before })
		if p := read(); p.Live || p.State != cks.TaskCompleted {
			t.Fatalf("read after the end = %+v", p)
		}
		if err := cs.Unsubscribe(ctx(t), &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: fmt.Sprintf("cks://tasks/%d/output", task.ID+100)}); err == nil {
			t.Fatal("the output of an unknown task was read")
		}
	})
}
