package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
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

	cs, _ := proxied(t, hs.URL, admin)

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

	_, err := mcpserver.NewProxy(ctx(t), mcpserver.ProxyConfig{URL: hs.URL, Token: "cks_unknown"})
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

// proxied connects a client to a proxy of the hub at url with token, and
// returns the client session with the notifications it received.
func proxied(t *testing.T, url, token string) (*mcp.ClientSession, *notes) {
	t.Helper()
	p, err := mcpserver.NewProxy(ctx(t), mcpserver.ProxyConfig{URL: url, Token: token, Version: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.Server().Connect(ctx(t), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := &notes{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { n.add(r.Params.URI) },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			n.add(fmt.Sprintf("progress %v", r.Params.ProgressToken))
		}}).Connect(ctx(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a desktop client's; its subscribe is answered once held
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs, n
}

// notes are the notifications a client received.
type notes struct {
	mu  sync.Mutex
	got []string
}

func (n *notes) add(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, s)
}

func (n *notes) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.got)
}

func (n *notes) count(s string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, g := range n.got {
		if g == s {
			k++
		}
	}
	return k
}

// TestProxyOutlivesItsHubSession (issue 37, finding 2): a desktop client of
// the stdio proxy idle for 31 minutes calls on — its hub session is kept
// busy by the proxy's GET stream — and once the hub ends that session
// anyway (here: closed to make room for a newer one of the token, as a hub
// restart or an idle timeout would end it) the next call still works,
// without a tool error: the proxy opened a new session and subscribed it
// again, so a change of a subscribed task notifies the client as before.
func TestProxyOutlivesItsHubSession(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{MaxSessionsPerToken: 1, IdleTimeout: 30 * time.Minute,
		UnsubscribedIdleTimeout: 5 * time.Minute})
	pid, admin := sh.principal(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
	task, _, err := sh.e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "t", Title: "watched"})
	if err != nil {
		t.Fatal(err)
	}
	uri := fmt.Sprintf("cks://tasks/%d", task.ID)
	cs, got := proxied(t, sh.url, admin)
	if err := cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	changed := func(n int) {
		t.Helper()
		var err error
		if n%2 == 1 {
			_, err = sh.e.store.Tasks.StopTask(ctx(t), ledger.StopParams{ID: task.ID, Actor: "test", Reason: "flip"})
		} else {
			_, err = sh.e.store.Tasks.Start(ctx(t), task.ID, "test", "flip")
		}
		if err != nil {
			t.Fatal(err)
		}
		sh.svc.Bus.Publish(events.Event{Type: events.TasksChanged, TaskIDs: []int64{task.ID}})
		within(t, fmt.Sprintf("notification %d of %s", n, uri), func() bool { return got.count(uri) >= n })
	}
	changed(1)

	sh.e.clock.Advance(31 * time.Minute)
	var page cks.TaskPage
	decode(t, call(t, cs, mcpserver.ToolListTasks, nil), &page)

	// The hub ends the proxy's session: a newer one of the token takes
	// its place.
	sh.open(t, admin)
	if n := sh.h.SessionsByToken()[pid]; n != 1 {
		t.Fatalf("sessions of the token: %d, want 1", n)
	}
	res := call(t, cs, mcpserver.ToolGetTask, map[string]any{"task_id": task.ID})
	if res.IsError {
		t.Fatalf("the first call after the hub ended the proxy's session: %s", text(t, res))
	}
	changed(2)
}

// TestProxyQuotesHubErrors (issue 37, finding 5): a request the hub refuses
// whole — a body over 1 MiB (413), a hub that cannot serve it (503) — is
// a tool error quoting the hub's status, code and message, not "hub
// unreachable … start a hub"; the session stays usable.
func TestProxyQuotesHubErrors(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{})
	_, admin := sh.principal(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
	var busy atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if busy.Load() && r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"unavailable","message":"the database is down: try again"}}`)
			return
		}
		proxyTo(w, r, sh.url)
	}))
	t.Cleanup(front.Close)
	cs, _ := proxied(t, front.URL, admin)

	big := strings.Repeat("x", 1<<20)
	res := call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "t", "title": big})
	if msg := toolText(t, res); !res.IsError || !strings.Contains(msg, "413") || strings.Contains(msg, "unreachable") ||
		strings.Contains(msg, "start a hub") {
		t.Fatalf("a 1 MiB call: IsError %v %q, want the hub's 413", res.IsError, msg)
	}
	busy.Store(true)
	res = call(t, cs, mcpserver.ToolListTasks, nil)
	if msg := toolText(t, res); !res.IsError || !strings.Contains(msg, "503") || !strings.Contains(msg, "unavailable") ||
		!strings.Contains(msg, "the database is down: try again") || strings.Contains(msg, "start a hub") {
		t.Fatalf("a 503: IsError %v %q, want the hub's 503 with its code and message", res.IsError, msg)
	}
	busy.Store(false)
	var page cks.TaskPage
	decode(t, call(t, cs, mcpserver.ToolListTasks, nil), &page)
}

// proxyTo forwards r to the server at base, streaming its answer.
func proxyTo(w http.ResponseWriter, r *http.Request, base string) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n]) //nolint:errcheck // the client went away
			http.NewResponseController(w).Flush()
		}
		if err != nil {
			return
		}
	}
}

// TestProxyFallsBackToSessionless (issue 37, finding 2): a hub that opens
// no session (its initialize answered 503) is spoken to in the session-less
// protocol: the proxy starts, lists the tools and relays calls.
func TestProxyFallsBackToSessionless(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{})
	_, admin := sh.principal(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
	var refused atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Protocol-Version") < "2026-07-28" && r.Header.Get("Mcp-Session-Id") == "" {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"initialize"`) {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":"unavailable","message":"no sessions here"}}`)
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		proxyTo(w, r, sh.url)
	}))
	t.Cleanup(front.Close)
	cs, _ := proxied(t, front.URL, admin)
	var page cks.TaskPage
	decode(t, call(t, cs, mcpserver.ToolListTasks, nil), &page)
	if refused.Load() == 0 {
		t.Fatal("the front refused no initialize: the test tests nothing")
	}
	if n := sh.h.Open(); n != 0 {
		t.Fatalf("%d sessions open at the hub, want none (session-less)", n)
	}
}
