package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cks-dev/cks/client"
)

// TestStreamEvents: the client reads Server-Sent Events (type and data,
// skipping comments) with the bearer token, calls ready once the stream is
// open, and returns nil when its context ends.
func TestStreamEvents(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/events" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"error":{"code":"unauthenticated","message":"no"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(": connected\n\nevent: agent_step_completed\ndata: {\"type\":\"agent_step_completed\",\"data\":{\"object_id\":7}}\n\n: keep-alive\n\nevent: processes\ndata: {}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type ev struct{ typ, data string }
	got := make(chan ev, 4)
	ready := false
	done := make(chan error, 1)
	go func() {
		done <- client.New(srv.URL, "tok").StreamEvents(ctx, func() { ready = true }, func(typ string, data []byte) { got <- ev{typ, string(data)} })
	}()
	first, second := <-got, <-got
	if first.typ != "agent_step_completed" || first.data != `{"type":"agent_step_completed","data":{"object_id":7}}` || second.typ != "processes" {
		t.Fatalf("events %+v %+v", first, second)
	}
	cancel()
	if err := <-done; err != nil || !ready {
		t.Fatalf("StreamEvents = %v, ready %v", err, ready)
	}
	if err := client.New(srv.URL, "wrong").StreamEvents(context.Background(), nil, func(string, []byte) {}); err == nil {
		t.Fatal("a refused stream is no error")
	}
}
