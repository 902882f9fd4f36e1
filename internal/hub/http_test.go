package hub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// testHub is a hub.Run serving in this process on a fresh data directory.
type testHub struct {
	url, token string
	dir        datadir.Dir
	addr       string // host:port
	// stop stops the hub (as the test's end does) and reports hub.Run's
	// error; once, however often it is called.
	stop func() error
}

// runHub starts hub.Run with cfg (its data directory, listen address and
// logger filled in when empty) and stops it when the test ends.
func runHub(t testing.TB, cfg hub.Config) testHub {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = datadir.Dir(t.TempDir())
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan hub.Ready, 1)
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx, cfg, func(r hub.Ready) { ready <- r }) }()
	stop := sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("hub.Run: %v", err)
		}
	})
	select {
	case r := <-ready:
		tok, err := cfg.DataDir.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(r.URL)
		return testHub{url: r.URL, token: tok, dir: cfg.DataDir, addr: u.Host, stop: stop}
	case err := <-done:
		t.Fatalf("hub.Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("hub did not become ready")
	}
	return testHub{}
}

func (h testHub) dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", h.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call sends one API request as the admin and decodes the JSON answer into out.
func (h testHub) call(t testing.TB, method, path, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, h.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+h.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// claimedTask enqueues a task and claims it through a handle of its own on
// the hub's SQLite file (as an agent would), so that the setup does not pass
// through the short timeouts a test gives the hub's HTTP server.
func (h testHub) claimedTask(t testing.TB) int64 {
	t.Helper()
	st, err := backend.Open(context.Background(), h.dir.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	task, _, err := st.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := st.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "w", Types: []string{"t"}, N: 1, Lease: time.Hour}); err != nil || len(ts) != 1 {
		t.Fatalf("claim: %v %v", ts, err)
	}
	return task.ID
}

// waitClosed reads c until the hub closes it and returns how long that
// took; it fails the test if c is still open after limit.
func waitClosed(t testing.TB, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("connection still open after %s", limit)
	}
	return time.Since(start)
}

// TestSlowBodyIsCutAtReadTimeout: a client that trickles its body (a byte
// every 50 ms, as a slowloris does) is disconnected once the read timeout
// has passed, and its request does nothing.
func TestSlowBodyIsCutAtReadTimeout(t *testing.T) {
	const readTimeout = time.Second
	h := runHub(t, hub.Config{HTTP: config.HTTP{ReadTimeout: readTimeout}})
	c := h.dial(t)
	fmt.Fprintf(c, "POST /v1/tasks HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
		h.addr, h.token)
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	took := waitClosed(t, c, 10*time.Second)
	close(stop)
	<-trickled
	if took > readTimeout+5*time.Second {
		t.Fatalf("slow client held its connection %s, read timeout %s", took, readTimeout)
	}
	var page struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if h.call(t, "GET", "/v1/tasks", "", &page); len(page.Tasks) != 0 {
		t.Fatalf("the cut request created %d tasks", len(page.Tasks))
	}
}

// TestIdleConnectionIsClosed: a keep-alive connection that sends no further
// request is closed after the idle timeout.
func TestIdleConnectionIsClosed(t *testing.T) {
	h := runHub(t, hub.Config{HTTP: config.HTTP{IdleTimeout: 300 * time.Millisecond}})
	c := h.dial(t)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", h.addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	waitClosed(t, c, 10*time.Second)
}

// TestEventStreamOutlivesWriteTimeout: /v1/events is exempt from the write
// timeout: it still delivers keep-alives long after the timeout has passed.
func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	const writeTimeout = 200 * time.Millisecond
	h := runHub(t, hub.Config{HTTP: config.HTTP{WriteTimeout: writeTimeout, EventKeepAlive: 20 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if lines.Text() == ": keep-alive" && time.Since(start) > 5*writeTimeout {
			return // open and writing well past the write timeout
		}
	}
	t.Fatalf("event stream ended after %s (write timeout %s): %v", time.Since(start), writeTimeout, lines.Err())
}

// TestStopWaitOutlivesWriteTimeout: a stop that waits for an abort
// confirmation longer than the write timeout gets its answer (the
// unconfirmed abort), not a cut connection.
func TestStopWaitOutlivesWriteTimeout(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	h := runHub(t, hub.Config{HTTP: config.HTTP{WriteTimeout: writeTimeout}})
	id := h.claimedTask(t)
	var out struct {
		Abort struct {
			Outcome string `json:"outcome"`
		} `json:"abort"`
	}
	start := time.Now()
	st := h.call(t, "POST", fmt.Sprintf("/v1/tasks/%d/stop", id), `{"reason":"hold","deadline":"2s"}`, &out)
	if st != http.StatusOK || out.Abort.Outcome != "abort_unconfirmed" {
		t.Fatalf("stop waiting 2s: %d %+v", st, out)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("stop answered after %s, before its 2s wait", took)
	}
}

// bearerTransport signs every request of an MCP client with a token.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPCallOutlivesWriteTimeout: /mcp is exempt from the write timeout: a
// stop_task that waits 2 s for an abort confirmation answers over MCP
// although the write timeout is far shorter.
func TestMCPCallOutlivesWriteTimeout(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	h := runHub(t, hub.Config{HTTP: config.HTTP{WriteTimeout: writeTimeout}})
	id := h.claimedTask(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hub-test", Version: "v0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport(h.token)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stop_task",
		Arguments: map[string]any{"task_id": id, "reason": "hold", "deadline": "2s"}})
	if err != nil || res.IsError {
		t.Fatalf("stop_task waiting 2s over MCP: %v %+v", err, res)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("stop_task answered after %s, before its 2s wait", took)
	}
}

// TestConnectionCapPerClient: a client holding the cap of connections gets
// its next one answered 503 too_many_connections and closed; once one of its
// connections closes, it may open another.
func TestConnectionCapPerClient(t *testing.T) {
	const cap = 3
	h := runHub(t, hub.Config{HTTP: config.HTTP{MaxConnsPerIP: cap}})
	var held []net.Conn
	for range cap {
		c := h.dial(t)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", h.addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d within the cap: %v %v", len(held)+1, resp, err)
		}
		resp.Body.Close()
		held = append(held, c)
	}
	healthz := func() (int, string) {
		c := h.dial(t)
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", h.addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := healthz(); st != http.StatusServiceUnavailable || !strings.Contains(body, `"too_many_connections"`) {
		t.Fatalf("connection %d: %d %s, want 503 too_many_connections", cap+1, st, body)
	}
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, body := healthz()
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after closing a connection: %d %s, want 200", st, body)
		}
	}
}
