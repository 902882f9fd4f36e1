package api_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestReadOnlyStorageIs503: over an API whose SQLite file this process may
// not write, every write is 503 storage_read_only (over MCP a tool error
// with the same message) and changes nothing, reads keep working, and /healthz
// says the hub is degraded.
func TestReadOnlyStorageIs503(t *testing.T) {
	dir := datadir.Dir(t.TempDir())
	path := filepath.Join(string(dir), "cks.db")
	c := clock.NewFake(backendtest.T0)
	s, err := backend.Open(context.Background(), path, driver.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.EnsureAdminToken(context.Background(), s.Principals, dir, c); err != nil {
		t.Fatal(err)
	}
	task, _, err := s.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "before"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	tok, err := dir.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	backendtest.ReadOnlyFile(t, path)
	s, err = backend.Open(context.Background(), path, driver.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	srv := mcpserver.NewServer("test", &ops.Services{Liveness: liveness.NewService(s.Driver(), c)})
	mcpserver.Register(srv, &ops.Services{Tasks: s.Tasks})
	a := api.New(api.Config{Services: &ops.Services{Liveness: liveness.NewService(s.Driver(), c), Tasks: s.Tasks, Objects: s.Objects, Principals: s.Principals, Clock: c}, Health: s.StorageHealth, MCP: mcpserver.HTTPHandler(srv)})
	hs := httptest.NewServer(a)
	t.Cleanup(func() { a.CloseStreams(); hs.Close() })
	f := &fixture{srv: hs, api: a, store: s, clock: c, token: tok}

	for _, w := range []struct{ method, path, body string }{
		{"POST", "/v1/tasks", `{"type":"t","title":"refused"}`},
		{"POST", "/v1/tasks/" + itoa(task.ID) + "/stop", `{"reason":"hold"}`},
		{"POST", "/v1/tasks/claim", `{}`},
		{"POST", "/v1/objects", `{"question":"why?"}`},
	} {
		resp, body := f.send(t, request{method: w.method, path: w.path, bearer: tok, contentType: "application/json", body: strings.NewReader(w.body)})
		wantError(t, resp, body, http.StatusServiceUnavailable, "storage_read_only", "read-only", "nothing was written")
	}
	if st, n := f.stateOf(t, task.ID), f.taskCount(t); st != "OPEN" || n != 1 {
		t.Fatalf("after refused writes: task %s, %d tasks; want OPEN, 1", st, n)
	}
	if resp, body := f.get(t, "/v1/tasks/"+itoa(task.ID), tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("a read on a read-only database: %d %s", resp.StatusCode, body)
	}

	resp, body := f.get(t, "/healthz", "")
	var h api.Health
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &h) != nil || h.Status != "degraded" || h.Storage != "read_only" {
		t.Fatalf("/healthz on a read-only database: %d %s, want 503 degraded read_only", resp.StatusCode, body)
	}
	if strings.Contains(body, path) {
		t.Fatalf("/healthz, which anyone may read, discloses the database path: %s", body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "api-test", Version: "v0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token: tok}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolCreateTask, Arguments: map[string]any{"type": "t", "title": "refused"}})
	// The tool error says what the HTTP answer's message says (one
	// operation, one message).
	if err != nil || !res.IsError || len(res.Content) != 1 ||
		res.Content[0].(*mcp.TextContent).Text != "the hub's database refuses writes (it is read-only); nothing was written (see the hub log)" {
		t.Fatalf("create_task over MCP on a read-only database: %v %+v, want the tool error of storage_read_only", err, res)
	}
	if n := f.taskCount(t); n != 1 {
		t.Fatalf("%d tasks after the refused MCP write, want 1", n)
	}
}

// TestHealthzCachesTheStorageCheck: /healthz asks the store once per
// HealthTTL however often it is polled, and follows a change after it.
func TestHealthzCachesTheStorageCheck(t *testing.T) {
	f := newFixture(t)
	calls := 0
	var fault error
	a := api.New(api.Config{Services: &ops.Services{Liveness: liveness.NewService(f.store.Driver(), f.clock), Principals: f.store.Principals, Clock: f.clock}, Health: func(context.Context) error { calls++; return fault }})
	get := func() (int, api.Health) { return healthz(t, a) }
	for range 5 {
		if code, h := get(); code != http.StatusOK || h.Status != "ok" || h.Storage != "ok" {
			t.Fatalf("healthy: %d %+v", code, h)
		}
	}
	if calls != 1 {
		t.Fatalf("%d storage checks for 5 polls within HealthTTL, want 1", calls)
	}
	fault = driver.StorageFault(cks.ErrStorageFull, context.DeadlineExceeded)
	f.clock.Advance(api.HealthTTL)
	if code, h := get(); code != http.StatusServiceUnavailable || h.Status != "degraded" || h.Storage != "full" || calls != 2 {
		t.Fatalf("after a full disk: %d %+v (%d checks), want 503 degraded full", code, h, calls)
	}
}

// postgresDatabase creates a database of its own on the test server
// (dropped when t ends) and returns its URL, its name and a function running
// SQL on the server: for a test that changes a database's settings, which
// no other test may share.
func postgresDatabase(t *testing.T) (dbURL, name string, exec func(sql string)) {
	t.Helper()
	base := backendtest.PostgresURL(t) // skips without a server; its scratch schema goes unused
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	admin := u.String()
	exec = func(sql string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	b := make([]byte, 6)
	rand.Read(b)
	name = "cks_health_" + hex.EncodeToString(b)
	exec("CREATE DATABASE " + name)
	t.Cleanup(func() { exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u.Path = "/" + name
	return u.String(), name, exec
}

// TestHealthzFollowsPostgresReadOnly: on a Postgres database made read-only
// (ALTER DATABASE … SET default_transaction_read_only) /healthz says
// degraded read_only, and once the setting is reset the next probe says ok
// — not a minute later, when the read-only fault a refused write left would
// be forgotten, nor after the pool's sessions (which keep the setting they
// started with) are recycled — and writes go through again.
func TestHealthzFollowsPostgresReadOnly(t *testing.T) {
	dbURL, name, exec := postgresDatabase(t)
	s, err := backend.Open(context.Background(), dbURL) // creates the schema
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	exec("ALTER DATABASE " + name + " SET default_transaction_read_only = on")
	c := clock.NewFake(backendtest.T0)
	s, err = backend.Open(context.Background(), dbURL, driver.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a := api.New(api.Config{Services: &ops.Services{Liveness: liveness.NewService(s.Driver(), c), Principals: s.Principals, Clock: c}, Health: s.StorageHealth})
	probe := func() (int, api.Health) {
		c.Advance(api.HealthTTL) // a fresh check, not the cached answer
		return healthz(t, a)
	}

	if code, h := probe(); code != http.StatusServiceUnavailable || h.Storage != "read_only" {
		t.Fatalf("/healthz on a read-only database: %d %+v, want 503 read_only", code, h)
	}
	// A refused write: the fault the driver remembers.
	if _, _, err := s.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "refused"}); !errors.Is(err, cks.ErrStorageReadOnly) {
		t.Fatalf("a write on the read-only database: %v, want ErrStorageReadOnly", err)
	}
	if code, h := probe(); code != http.StatusServiceUnavailable || h.Storage != "read_only" {
		t.Fatalf("/healthz after a refused write: %d %+v, want 503 read_only", code, h)
	}

	exec("ALTER DATABASE " + name + " RESET default_transaction_read_only")
	if code, h := probe(); code != http.StatusOK || h.Status != "ok" || h.Storage != "ok" {
		t.Fatalf("/healthz on the first probe after the database takes writes again: %d %+v, want 200 ok", code, h)
	}
	// And what it says holds: every session of the pool takes writes (a
	// few, so that more than one pooled connection is used).
	for i := range 4 {
		if _, _, err := s.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "after"}); err != nil {
			t.Fatalf("write %d after /healthz said ok: %v", i, err)
		}
	}
}

// healthz asks a's /healthz and returns its status and body.
func healthz(t testing.TB, a *api.API) (int, api.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	var h api.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	return rec.Code, h
}
