package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
	"github.com/cks-dev/cks/internal/surface/studio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	srv   *httptest.Server
	api   *api.API
	store *backend.Backend
	clock *clock.Fake
	bus   *events.Bus
	token string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	return newFixtureOn(t, func(t testing.TB, opts ...driver.Option) *backend.Backend {
		t.Helper()
		s, err := backend.Open(context.Background(), filepath.Join(dir, "cks.db"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// newFixtureOn is newFixture on a store of open (backendtest.ForEach's
// opener, for tests that run on both backends).
func newFixtureOn(t testing.TB, open backendtest.Opener) *fixture {
	return buildFixture(t, open, false)
}

// newHubFixture is newFixtureOn serving what a hub serves: the real studio
// and every MCP tool at /mcp.
func newHubFixture(t testing.TB, open backendtest.Opener) *fixture {
	return buildFixture(t, open, true)
}

func buildFixture(t testing.TB, open backendtest.Opener, full bool) *fixture {
	t.Helper()
	dir := datadir.Dir(t.TempDir())
	c := clock.NewFake(backendtest.T0)
	return fixtureOn(t, dir, open(t, driver.WithClock(c)), c, full)
}

// fixtureOn serves the API from s (closed with the fixture), with its
// admin token in dir; full as in buildFixture.
func fixtureOn(t testing.TB, dir datadir.Dir, s *backend.Backend, c *clock.Fake, full bool) *fixture {
	t.Helper()
	if _, err := auth.EnsureAdminToken(context.Background(), s.Principals, dir, c); err != nil {
		t.Fatal(err)
	}
	tok, err := dir.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hub.NewRuntime(s, hub.RuntimeConfig{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	// The sweepers' passes run on the maintenance leader: this fixture's
	// runtime, which is not started as a whole, takes part in the election.
	if err := rt.Leader.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	bus := &events.Bus{}
	svc := &ops.Services{Liveness: liveness.NewService(s.Driver(), c), Tasks: s.Tasks, Objects: s.Objects, Sweepers: rt.Sweepers,
		Clock: c, Principals: s.Principals, Schedules: s.Schedules, Bus: bus, Changes: s.Changes}
	cfg := api.Config{Services: svc, Version: "test",
		Studio: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "studio "+r.URL.Path) })}
	if full {
		cfg.Studio = studio.New(svc, studio.Options{Version: "test"})
		cfg.MCP = mcpserver.HTTPHandler(mcpserver.NewServer("test", svc))
	}
	a := api.New(cfg)
	srv := httptest.NewServer(a)
	t.Cleanup(func() {
		rt.Stop(context.Background())
		a.CloseStreams()
		srv.Close()
		s.Close()
	})
	return &fixture{srv: srv, api: a, store: s, clock: c, bus: bus, token: tok}
}

func (f *fixture) get(t testing.TB, path, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func decodeError(t testing.TB, body string) api.ErrorBody {
	t.Helper()
	var e api.ErrorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("body is not a JSON error {\"error\":{\"code\",\"message\"}}: %s", body)
	}
	return e
}

func TestAuthRequired(t *testing.T) {
	f := newFixture(t)
	unknown, _ := auth.NewToken()
	cases := []struct {
		name, path, token, wantMsg string
	}{
		{"missing", "/v1/processes", "", "missing token"},
		{"malformed", "/v1/processes", "not-a-token", "malformed token"},
		{"unknown", "/v1/processes", unknown, "unknown token"},
		{"metrics", "/metrics", "", "missing token"},
		{"events", "/v1/events", "", "missing token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := f.get(t, c.path, c.token)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			if e := decodeError(t, body); e.Error.Code != "unauthenticated" || !strings.Contains(e.Error.Message, c.wantMsg) {
				t.Fatalf("error = %+v, want unauthenticated / %q", e, c.wantMsg)
			}
		})
	}
	resp, _ := f.get(t, "/healthz", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz without token: %d, want 200", resp.StatusCode)
	}
	resp, _ = f.get(t, "/", "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("studio without token: %d %s, want a redirect to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestProcesses(t *testing.T) {
	f := newFixture(t)
	task := int64(12)
	r := backendtest.Liveness("inst-1", "critic", 0)
	r.CurrentTaskID, r.CurrentTaskType = &task, "critique"
	backendtest.MustUpsert(t, f.store, r)
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("inst-0", "pipeline", -time.Hour))

	list := func() map[string]cks.Process {
		t.Helper()
		resp, body := f.get(t, "/v1/processes", f.token)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /v1/processes: %d %s", resp.StatusCode, body)
		}
		var pl cks.ProcessList
		if err := json.Unmarshal([]byte(body), &pl); err != nil {
			t.Fatal(err)
		}
		out := map[string]cks.Process{}
		for _, p := range pl.Processes {
			out[p.InstanceID] = p
		}
		return out
	}
	f.clock.Set(backendtest.T0.Add(90 * time.Second))
	got := list()
	if p := got["inst-1"]; p.Status != cks.ProcessAlive || p.ProcessKind != "critic" || p.CurrentTaskID == nil || *p.CurrentTaskID != 12 {
		t.Fatalf("inst-1 = %+v, want alive critic on task 12", p)
	}
	if p := got["inst-0"]; p.Status != cks.ProcessStopped {
		t.Fatalf("inst-0 = %+v, want stopped", p)
	}
	f.clock.Advance(time.Microsecond)
	if p := list()["inst-1"]; p.Status != cks.ProcessStopped {
		t.Fatalf("past 3x the interval inst-1 = %s, want stopped", p.Status)
	}

	cases := []struct {
		kind       string
		status     int
		wantStatus cks.ProcessStatus
		wantCode   string
	}{
		{"critic", 200, cks.ProcessStopped, ""},
		{"enrichment", 200, cks.ProcessNotFound, ""},
		{"bogus", 200, cks.ProcessNotFound, ""}, // any kind may report
		{"bo%20gus", 400, "", "invalid_argument"},
	}
	for _, c := range cases {
		resp, body := f.get(t, "/v1/processes/"+c.kind, f.token)
		if resp.StatusCode != c.status {
			t.Fatalf("GET /v1/processes/%s: %d %s, want %d", c.kind, resp.StatusCode, body, c.status)
		}
		if c.wantCode != "" {
			if e := decodeError(t, body); e.Error.Code != c.wantCode || !strings.Contains(e.Error.Message, "process_kind") {
				t.Fatalf("no kind's error = %+v, want process_kind named", e)
			}
			continue
		}
		var p cks.Process
		json.Unmarshal([]byte(body), &p)
		if p.Status != c.wantStatus || p.ProcessKind != c.kind {
			t.Fatalf("GET /v1/processes/%s = %+v, want %s", c.kind, p, c.wantStatus)
		}
	}

	resp, body := f.get(t, "/v1/nope", f.token)
	if resp.StatusCode != 404 || decodeError(t, body).Error.Code != "not_found" {
		t.Fatalf("unknown endpoint: %d %s", resp.StatusCode, body)
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("a", "critic", 0))
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("b", "critic", time.Second))
	backendtest.MustUpsert(t, f.store, backendtest.Liveness("c", "pipeline", -time.Hour))
	f.clock.Set(backendtest.T0.Add(time.Second))
	resp, body := f.get(t, "/metrics", f.token)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`cks_processes_alive{process_kind="critic"} 2`,
		`cks_processes_alive{process_kind="pipeline"} 0`,
		`cks_processes_alive{process_kind="enrichment"} 0`,
		`cks_process_instances{process_kind="pipeline",status="stopped"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestEventsStream(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || lines.Text() != ": connected" {
		t.Fatalf("first line %q, want the connected comment", lines.Text())
	}
	// The handler subscribed before writing ": connected", so this is not lost.
	f.bus.Publish(events.Event{Type: events.ProcessesChanged, At: backendtest.T0})
	for lines.Scan() {
		if lines.Text() == "event: processes" {
			if !lines.Scan() || !strings.HasPrefix(lines.Text(), `data: {"type":"processes"`) {
				t.Fatalf("data line %q", lines.Text())
			}
			return
		}
	}
	t.Fatalf("stream ended without the event: %v", lines.Err())
}

func TestStreamsCloseOnShutdown(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.srv.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	f.api.CloseStreams()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stream ended with %v, want a clean end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("event stream still open after CloseStreams")
	}
}

func TestLoginCookie(t *testing.T) {
	f := newFixture(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(tok string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", f.srv.URL+"/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin") // as the browser posts the studio's form
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("wrong"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?error=1" {
		t.Fatalf("bad login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp := post(f.token)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("good login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == api.CookieName {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login cookie = %+v, want HttpOnly SameSite=Strict", cookie)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/", nil)
	req.AddCookie(cookie)
	page, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || string(body) != "studio /" {
		t.Fatalf("studio with cookie: %d %q", page.StatusCode, body)
	}
}

// TestOpenAPIDocument: GET /v1/openapi.json is valid JSON in the OpenAPI
// shape and lists every route the API serves under its path and method,
// with the operation's name as operationId and its permission.
func TestOpenAPIDocument(t *testing.T) {
	f := newFixture(t)
	resp, body := f.get(t, "/v1/openapi.json", f.token)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Permission  string `json:"x-cks-permission"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("not an OpenAPI 3.1 document: %v %.200s", err, body)
	}
	routes := f.api.Routes()
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		o, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok || o.OperationID != rt.Operation || o.Permission != rt.Permission {
			t.Errorf("%s (%s) is not in the document as served: %+v", rt.Pattern, rt.Operation, o)
		}
	}
	n := 0
	for _, methods := range doc.Paths {
		n += len(methods)
	}
	if n != len(routes) {
		t.Errorf("the document has %d operations, the API serves %d", n, len(routes))
	}
}
