package mcpserver_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/mcpserver"
	"github.com/cks-dev/cks/ops"
)

// TestProxy: the proxy relays the hub's tools; a hub that stops answering
// mid-session is a tool error saying so (and that the call may have
// landed), and once it answers again the next call goes through on a new
// session; a hub that refuses the token, or none at the URL, is an error at
// start naming which.
func TestProxy(t *testing.T) {
	e := newEnv(t)
	svc := &ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Tasks: e.store.Tasks,
		Principals: e.store.Principals, Clock: e.clock}
	hubMCP := mcpserver.HTTPHandler(mcpserver.NewServer("hub", svc))
	t.Cleanup(hubMCP.Close) // the sessions of the proxy's dropped connections
	a := api.New(api.Config{Services: svc, MCP: hubMCP})
	var down atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() { // the connection dropped, as by a hub that died
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		a.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { a.CloseStreams(); hs.Close() })
	admin := token(t, e.store.Principals, cks.Grant{Resource: "/", Permission: auth.PermAdmin})

	p, err := mcpserver.NewProxy(ctx(t), mcpserver.ProxyConfig{URL: hs.URL, Token: admin, Version: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.Server().Connect(ctx(t), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClient().Connect(ctx(t), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })

	var created cks.CreatedTask
	decode(t, call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "relayed"}), &created)
	if got, err := e.store.Tasks.GetTask(ctx(t), created.Task.ID); err != nil || got.Type != "relayed" || got.CreatedBy != "p" {
		t.Fatalf("the hub's task: %+v %v, want type relayed created by the token's principal p", got, err)
	}
	down.Store(true)
	res := call(t, cs, mcpserver.ToolListTasks, nil)
	if msg := text(t, res); !res.IsError || !strings.Contains(msg, "did not answer") || !strings.Contains(msg, "may or may not have reached") {
		t.Fatalf("a call while the hub is down: IsError %v %q", res.IsError, msg)
	}
	down.Store(false)
	var page cks.TaskPage
	decode(t, call(t, cs, mcpserver.ToolListTasks, nil), &page)
	if len(page.Tasks) != 1 || page.Tasks[0].ID != created.Task.ID {
		t.Fatalf("list_tasks once the hub answers again: %+v", page.Tasks)
	}

	_, err = mcpserver.NewProxy(ctx(t), mcpserver.ProxyConfig{URL: hs.URL, Token: "cks_unknown"})
	if !errors.Is(err, mcpserver.ErrHubRefused) || !strings.Contains(err.Error(), "401") {
		t.Errorf("a refused token: %v, want ErrHubRefused naming the 401", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + ln.Addr().String()
	ln.Close()
	if _, err = mcpserver.NewProxy(ctx(t), mcpserver.ProxyConfig{URL: nobody, Token: admin}); !errors.Is(err, mcpserver.ErrHubUnreachable) {
		t.Errorf("no hub at %s: %v, want ErrHubUnreachable", nobody, err)
	}
}
