package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/service/auth"
)

// updates records the notifications/resources/updated a client received.
type updates struct {
	mu   sync.Mutex
	uris []string
}

func (u *updates) handler(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.uris = append(u.uris, req.Params.URI)
}

// count returns how many notifications named uri.
func (u *updates) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, got := range u.uris {
		if got == uri {
			n++
		}
	}
	return n
}

func (u *updates) all() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.uris)
}

// await waits until uri was notified at least n times, failing t at the
// deadline.
func (u *updates) await(t testing.TB, uri string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for u.count(uri) < n {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %d notifications of %s, got %v", n, uri, u.all())
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not waiting for state
	}
}

// notifiedClient connects an SDK client recording its resource updates.
func notifiedClient(t testing.TB, tr mcp.Transport, protocol string) (*mcp.ClientSession, *updates) {
	t.Helper()
	u := &updates{}
	c := mcp.NewClient(&mcp.Implementation{Name: "cks-test", Version: "0"}, &mcp.ClientOptions{ResourceUpdatedHandler: u.handler})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, u
}

// subscriptionTransports are the ways a client subscribes: through the
// stdio proxy, and over streamable HTTP with a session (the initialize
// handshake, notifications on the session's GET stream). Both speak
// 2025-11-25, whose resources/subscribe is answered once the subscription
// is held: the SDK's client sends the session-less protocol's
// (subscriptions/listen) without waiting for it, nor for its refusal.
var subscriptionTransports = []struct {
	name    string
	connect func(t testing.TB, h *hubProc, token string) (*mcp.ClientSession, *updates)
}{
	{"stdio proxy", func(t testing.TB, h *hubProc, token string) (*mcp.ClientSession, *updates) {
		cmd := exec.Command(cksBin, "mcp", "--url", h.url, "--token", token)
		cmd.Env = cleanEnv()
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("cks mcp stderr:\n%s", stderr.String())
			}
		})
		return notifiedClient(t, &mcp.CommandTransport{Command: cmd}, "2025-11-25")
	}},
	{"streamable HTTP session", func(t testing.TB, h *hubProc, token string) (*mcp.ClientSession, *updates) {
		return notifiedClient(t, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token}}}, "2025-11-25")
	}},
}

// TestMCPSubscriptions subscribes to cks://tasks/{id} with the Go SDK's
// client, through the stdio proxy and over streamable HTTP, against a real
// hub on both backends, and changes the task over HTTP: the subscriber is
// notified of that URI; a URI subscribed to whose task did not change, and
// a session that subscribed to nothing, are not; after resources/unsubscribe
// the task's changes notify no more. The capability is declared; a task
// that does not exist cannot be subscribed to, nor one the token may not
// read. A subscription to an object's versions is notified of a version
// written over HTTP. A client of the session-less protocol is notified too.
func TestMCPSubscriptions(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		h := startHub(t, "serve", "--database", db.url)
		op := client.New(h.url, h.token)
		for _, tr := range subscriptionTransports {
			t.Run(tr.name, func(t *testing.T) {
				newTask := func(title string) string {
					t.Helper()
					c, _, err := op.CreateTask(ctx, cks.NewTask{Type: "sub-" + strings.ReplaceAll(tr.name, " ", "-"), Title: title})
					if err != nil {
						t.Fatal(err)
					}
					return fmt.Sprintf("cks://tasks/%d", c.ID)
				}
				idOf := func(uri string) int64 {
					var id int64
					fmt.Sscanf(uri, "cks://tasks/%d", &id)
					return id
				}
				stop := func(uri string) {
					t.Helper()
					if _, err := op.StopTask(ctx, idOf(uri), client.StopRequest{Reason: "hold"}); err != nil {
						t.Fatal(err)
					}
				}
				start := func(uri string) {
					t.Helper()
					if _, err := op.StartTask(ctx, idOf(uri), "go on"); err != nil {
						t.Fatal(err)
					}
				}
				watched, still, other := newTask("watched"), newTask("still"), newTask("other")

				cs, got := tr.connect(t, h, h.token)
				_, idle := tr.connect(t, h, h.token)
				if c := cs.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe {
					t.Fatalf("capabilities %+v: resources.subscribe not declared", c.Resources)
				}
				for _, uri := range []string{watched, still} {
					if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
						t.Fatalf("subscribe %s: %v", uri, err)
					}
				}
				stop(watched)
				got.await(t, watched, 1)
				stop(other)
				start(watched)
				got.await(t, watched, 2)
				if n := got.count(still); n != 0 {
					t.Errorf("%s (unchanged) notified %d times: %v", still, n, got.all())
				}
				if n := got.count(other); n != 0 {
					t.Errorf("%s (not subscribed) notified %d times: %v", other, n, got.all())
				}

				if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: watched}); err != nil {
					t.Fatalf("unsubscribe: %v", err)
				}
				stop(watched)
				stop(still) // a change the subscription still held sees, after the one it no longer does
				got.await(t, still, 1)
				if n := got.count(watched); n != 2 {
					t.Errorf("%s notified %d times after its unsubscribe, want the 2 before: %v", watched, n, got.all())
				}
				if all := idle.all(); len(all) != 0 {
					t.Errorf("a session that subscribed to nothing was notified: %v", all)
				}

				// An object's versions: a write over HTTP that forks it.
				obj, err := op.SubmitResearch(ctx, cks.SubmitResearchInput{Question: "which parser, " + tr.name + "?"})
				if err != nil {
					t.Fatal(err)
				}
				versions := fmt.Sprintf("cks://objects/%d/versions", obj.ID)
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: versions}); err != nil {
					t.Fatalf("subscribe %s: %v", versions, err)
				}
				if _, err := op.WriteVersion(ctx, obj.ID, obj.HeadVersion, json.RawMessage(`{"note":"a second head"}`)); err != nil {
					t.Fatal(err)
				}
				got.await(t, versions, 1)

				err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "cks://tasks/999999"})
				if err == nil || !strings.Contains(err.Error(), "not found") {
					t.Errorf("subscribe to a missing task: %v, want resource not found", err)
				}
				objectsOnly := newToken(t, h, "objects-reader-"+strings.ReplaceAll(tr.name, " ", "-"),
					cks.Grant{Resource: auth.ResourceObjects, Permission: auth.PermRead})
				reader, _ := tr.connect(t, h, objectsOnly)
				if err := reader.Subscribe(ctx, &mcp.SubscribeParams{URI: watched}); err == nil || !strings.Contains(err.Error(), "forbidden") {
					t.Errorf("subscribe without read on the task: %v, want forbidden", err)
				}
			})
		}

		// The session-less protocol subscribes with subscriptions/listen,
		// which the SDK's client sends without waiting for the hub to hold
		// it: the task is changed until the notification comes.
		t.Run("streamable HTTP session-less", func(t *testing.T) {
			c, _, err := op.CreateTask(ctx, cks.NewTask{Type: "sub-sessionless", Title: "watched"})
			if err != nil {
				t.Fatal(err)
			}
			uri := fmt.Sprintf("cks://tasks/%d", c.ID)
			cs, got := notifiedClient(t, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1,
				HTTPClient: &http.Client{Transport: bearer{h.token}}}, "")
			if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
				t.Fatalf("negotiated %s, want the session-less protocol", v)
			}
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for stopped := false; got.count(uri) == 0; stopped = !stopped {
				if time.Now().After(deadline) {
					t.Fatalf("no notification of %s on the session-less protocol: %v", uri, got.all())
				}
				var err error
				if stopped {
					_, err = op.StartTask(ctx, c.ID, "go on")
				} else {
					_, err = op.StopTask(ctx, c.ID, client.StopRequest{Reason: "hold"})
				}
				if err != nil {
					t.Fatal(err)
				}
				for wait := time.Now().Add(250 * time.Millisecond); got.count(uri) == 0 && time.Now().Before(wait); {
					time.Sleep(5 * time.Millisecond) // polling a condition
				}
			}
		})
	})
}

// TestMCPSessionsBounded opens sessions of /mcp on a real hub, on both
// backends: a session is bound to the token that opened it (a request of
// another token on its id is a 403, GET or POST, and the session still
// works for its own). No token can lock another out: a loop of one
// read-only token opening sessions and never ending them (as the
// TypeScript SDK's close does) is never refused and holds at most
// CKS_MCP_MAX_SESSIONS_PER_TOKEN of them, its own oldest closed for each
// new one; the other tokens' sessions go on working and new tokens open
// theirs; on a full hub (CKS_MCP_MAX_SESSIONS) a new token's initialize
// closes the longest-idle session — the loop's, not the busy ones — and
// a request on a closed session is a 404 saying to initialize again. The
// session-less protocol is served regardless.
func TestMCPSessionsBounded(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHubEnv(t, "serve", []string{"CKS_MCP_MAX_SESSIONS=4", "CKS_MCP_MAX_SESSIONS_PER_TOKEN=2"}, "--database", db.url)
		other := newToken(t, h, "other", cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
		looper := newToken(t, h, "looper", cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead})
		late := newToken(t, h, "late", cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead})
		session := func(token string) (*mcp.ClientSession, error) {
			c := mcp.NewClient(&mcp.Implementation{Name: "cks-test", Version: "0"}, nil)
			return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1,
				HTTPClient: &http.Client{Transport: bearer{token}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		}
		first, err := session(h.token)
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		if first.ID() == "" {
			t.Fatal("the initialize handshake opened no session (no Mcp-Session-Id)")
		}

		for _, method := range []string{http.MethodPost, http.MethodGet} {
			code, body := rawMCP(t, h, method, other, first.ID(), `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`)
			if code != http.StatusForbidden || !strings.Contains(body, "belongs to another token") {
				t.Errorf("%s with another token on the session: %d %s, want 403 naming it", method, code, body)
			}
		}
		if _, err := first.ListTools(context.Background(), nil); err != nil {
			t.Fatalf("the session's own token after the refusals: %v", err)
		}

		// The loop: 20 sessions opened and abandoned (no DELETE), each
		// with a call, by a read-only token.
		var looped []string
		for i := range 20 {
			id := rawInitialize(t, h, looper)
			if code, body := rawMCP(t, h, http.MethodPost, looper, id,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_tasks","arguments":{}}}`); code != http.StatusOK {
				t.Fatalf("round %d of the loop: tools/call %d %s", i, code, body)
			}
			looped = append(looped, id)
		}
		for _, id := range looped[:18] {
			if code, body := rawMCP(t, h, http.MethodPost, looper, id, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); code != http.StatusNotFound ||
				!strings.Contains(body, "initialize a new session") {
				t.Fatalf("a session the loop's newer ones closed: %d %s, want 404 saying to initialize again", code, body)
			}
		}
		second, err := session(other)
		if err != nil {
			t.Fatalf("another token's session after the loop: %v", err)
		}
		defer second.Close()
		for _, cs := range []*mcp.ClientSession{first, second} {
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatalf("a session of another token after the loop: %v", err)
			}
		}
		// The hub is full (2 of the loop's, first, second): a new token
		// gets in, and the loop's older session, the longest idle, made
		// room — not first or second, whose GET streams are open.
		third, err := session(late)
		if err != nil {
			t.Fatalf("a new token on a full hub: %v", err)
		}
		defer third.Close()
		if code, _ := rawMCP(t, h, http.MethodPost, looper, looped[18], `{"jsonrpc":"2.0","id":4,"method":"ping"}`); code != http.StatusNotFound {
			t.Fatalf("the loop's longest-idle session on a full hub: %d, want 404 (closed to make room)", code)
		}
		for _, cs := range []*mcp.ClientSession{first, second, third} {
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatalf("a busy session after the hub made room: %v", err)
			}
		}
		sessionless := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{h.token}}})
		if _, err := sessionless.ListTools(context.Background(), nil); err != nil {
			t.Fatalf("the session-less protocol while the sessions are full: %v", err)
		}
	})
}

// rawInitialize opens a session of /mcp with a bare initialize of token
// and returns its id; nothing ends it.
func rawInitialize(t testing.TB, h *hubProc, token string) string {
	t.Helper()
	code, b, header := rawMCPHeader(t, h, http.MethodPost, token, "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	id := header.Get("Mcp-Session-Id")
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s (session %q)", code, b, id)
	}
	notified := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	if code, b := rawMCP(t, h, http.MethodPost, token, id, notified); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", code, b)
	}
	return id
}

// rawMCP sends one request to the hub's /mcp with token (and the session
// id, if any) and returns its status and the start of its body.
func rawMCP(t testing.TB, h *hubProc, method, token, session, body string) (int, string) {
	t.Helper()
	code, b, _ := rawMCPHeader(t, h, method, token, session, body)
	return code, b
}

// rawMCPHeader is rawMCP with the answer's header.
func rawMCPHeader(t testing.TB, h *hubProc, method, token, session, body string) (int, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if method == http.MethodPost {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+"/mcp", rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
	return resp.StatusCode, string(b), resp.Header
}
