package mcpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// sessionHub is /mcp of a real api.API over a real store, its sessions
// timed by the env's fake clock.
type sessionHub struct {
	e   *env
	h   *mcpserver.HTTP
	svc *ops.Services
	url string
}

func newSessionHub(t *testing.T, o mcpserver.HTTPOptions) *sessionHub {
	t.Helper()
	e := newEnv(t)
	svc := &ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Tasks: e.store.Tasks, Objects: e.store.Objects,
		Principals: e.store.Principals, Schedules: e.store.Schedules, Bus: &events.Bus{}, Clock: e.clock}
	o.Clock = e.clock
	h := mcpserver.NewHTTP(mcpserver.NewServerWith("v", svc, mcpserver.ServerOptions{ProgressEvery: time.Second}), o)
	a := api.New(api.Config{Services: svc, MCP: h})
	hs := httptest.NewServer(a)
	t.Cleanup(func() { h.Close(); a.CloseStreams(); hs.Close() })
	return &sessionHub{e: e, h: h, svc: svc, url: hs.URL}
}

// principal creates a principal holding grants and returns its id and token.
func (sh *sessionHub) principal(t testing.TB, grants ...cks.Grant) (string, string) {
	t.Helper()
	p, tok, err := auth.CreateToken(ctx(t), sh.e.store.Principals, nil, "p", grants)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID, tok
}

// post sends one JSON-RPC message to /mcp with token on session id ("":
// none) and returns the status and the body.
func (sh *sessionHub) post(t testing.TB, token, id, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, sh.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id == "" && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	return resp.StatusCode, string(b)
}

// open opens a session of token (initialize, initialized) and returns its
// id; nothing ends it.
func (sh *sessionHub) open(t testing.TB, token string) string {
	t.Helper()
	code, id := sh.post(t, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q", code, id)
	}
	if code, body := sh.post(t, token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return id
}

// ping pings session id and returns the status.
func (sh *sessionHub) ping(t testing.TB, token, id string) int {
	t.Helper()
	code, _ := sh.post(t, token, id, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	return code
}

// stream opens the GET stream of session id and returns its lines as they
// come (closed at its end) and a function closing it.
func (sh *sessionHub) stream(t testing.TB, token, id string) (<-chan string, func()) {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(c, http.MethodGet, sh.url+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	lines := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); l != "" {
				lines <- l
			}
		}
	}()
	// The stream is open once its first comment arrives.
	if l := <-lines; l != ": ok" {
		t.Fatalf("GET stream opened with %q, want \": ok\"", l)
	}
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return lines, stop
}

// within waits for cond until a deadline, failing t with what.
func within(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not waiting for state
	}
}

// TestSessionIdleTimeouts: a session idle (no request in flight, no GET
// stream open) longer than UnsubscribedIdleTimeout ends when it holds no
// subscription, and lives on to IdleTimeout when it holds one; a session
// whose GET stream is open is never idle (a desktop client listening for
// a day); a request on an ended session is a 404 saying to initialize
// again. The reaper ends idle sessions without a request too.
func TestSessionIdleTimeouts(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{IdleTimeout: 30 * time.Minute, UnsubscribedIdleTimeout: 5 * time.Minute})
	pid, tok := sh.principal(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
	task, _, err := sh.e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "t", Title: "watched"})
	if err != nil {
		t.Fatal(err)
	}
	plain, subscribed, listening := sh.open(t, tok), sh.open(t, tok), sh.open(t, tok)
	if code, body := sh.post(t, tok, subscribed, fmt.Sprintf(
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"cks://tasks/%d"}}`, task.ID)); code != http.StatusOK ||
		strings.Contains(body, `"error"`) {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	sh.stream(t, tok, listening)

	sh.e.clock.Advance(5 * time.Minute)
	code, body := sh.post(t, tok, plain, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if code != http.StatusNotFound || !strings.Contains(body, "initialize a new session") {
		t.Fatalf("a session without subscriptions idle 5m: %d %s, want 404 saying to initialize again", code, body)
	}
	if code := sh.ping(t, tok, subscribed); code != http.StatusOK {
		t.Fatalf("a subscribed session idle 5m: %d, want alive", code)
	}
	sh.e.clock.Advance(30 * time.Minute)
	if code := sh.ping(t, tok, subscribed); code != http.StatusNotFound {
		t.Fatalf("a subscribed session idle 30m: %d, want 404", code)
	}
	sh.e.clock.Advance(24 * time.Hour)
	if code := sh.ping(t, tok, listening); code != http.StatusOK {
		t.Fatalf("a session with its GET stream open, a day later: %d, want alive", code)
	}

	// Without a request: the reaper ends an idle session.
	idle := sh.open(t, tok)
	if n := sh.h.SessionsByToken()[pid]; n != 2 {
		t.Fatalf("open sessions %d, want 2 (listening, idle)", n)
	}
	sh.e.clock.Advance(6 * time.Minute)
	within(t, "the reaper to end the idle session", func() bool { return sh.h.SessionsByToken()[pid] == 1 })
	if code := sh.ping(t, tok, idle); code != http.StatusNotFound {
		t.Fatalf("the reaped session: %d, want 404", code)
	}
}

// TestStreamKeepAlive: an open GET stream carries a keep-alive comment
// every KeepAlive, so a client's idle-body timeout (Node's fetch: 300 s)
// never cuts it.
func TestStreamKeepAlive(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{KeepAlive: 15 * time.Second})
	_, tok := sh.principal(t, cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead})
	id := sh.open(t, tok)
	lines, _ := sh.stream(t, tok, id)
	deadline := time.Now().Add(20 * time.Second)
	for {
		sh.e.clock.Advance(15 * time.Second)
		select {
		case l := <-lines:
			if l != ": keep-alive" {
				t.Fatalf("the GET stream said %q, want a keep-alive comment", l)
			}
			return
		case <-time.After(10 * time.Millisecond): // the ticker may not be armed yet: advance again
		}
		if time.Now().After(deadline) {
			t.Fatal("no keep-alive on the GET stream")
		}
	}
}

// TestRevokedStreamsEnd: an MCP session's GET stream opened before its
// token is revoked ends at the revocation — this hub's at once, another
// hub's (a second service on the same database, which tells this one
// nothing) at the stream's next keep-alive — and its session is closed
// with it: its subscriptions deliver nothing more.
func TestRevokedStreamsEnd(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{KeepAlive: 15 * time.Second})
	for _, tc := range []struct {
		name   string
		revoke func(id string) error
	}{
		{"revoked on this hub", func(id string) error { return sh.e.store.Principals.DeletePrincipal(ctx(t), id) }},
		{"revoked on another hub", func(id string) error {
			return auth.NewService(sh.e.store.Driver()).DeletePrincipal(ctx(t), id)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, tok := sh.principal(t, cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead})
			id := sh.open(t, tok)
			lines, _ := sh.stream(t, tok, id)
			if err := tc.revoke(pid); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for ended := false; !ended; {
				select {
				case l, open := <-lines:
					ended = !open
					if open && l != ": keep-alive" {
						t.Fatalf("the revoked token's stream delivered %q", l)
					}
				case <-time.After(10 * time.Millisecond):
					sh.e.clock.Advance(15 * time.Second) // another hub's revocation is seen at a keep-alive
				}
				if time.Now().After(deadline) {
					t.Fatal("the revoked token's GET stream is still open")
				}
			}
			within(t, "the revoked token's session to close", func() bool { return sh.h.SessionsByToken()[pid] == 0 })
		})
	}
}
