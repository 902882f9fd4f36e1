package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/datadir"
)

// TestStoppedPostgresAnswers503 (issue 38.9): while the hub's Postgres is
// down, every surface says the database is unavailable and to come back —
// the HTTP API 503 storage_unavailable with Retry-After, for a read and a
// write alike (on main: 500 internal); an MCP tool, through the proxy or
// embedded, a tool error saying unavailable — and once the server is back
// the same calls succeed. A real server, stopped with pg_ctl.
func TestStoppedPostgresAnswers503(t *testing.T) {
	pg := startPGCluster(t)
	if pg == nil {
		t.Skip("no PostgreSQL server binaries to start and stop a server of the test's own")
	}
	h := startHubDir(t, "serve", datadir.Dir(t.TempDir()), nil, "--database", pg.url())
	proxy := connectProxy(t, nil, "--url", h.url, "--token", h.token)
	embedded := connectProxy(t, nil, "--embedded", "--database", pg.url(), "--data-dir", t.TempDir())
	call := func(method, path, body string) (*http.Response, string) { return h.do(t, method, path, body) }
	if resp, body := call("GET", "/v1/tasks", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("list tasks with the database up: %d %s", resp.StatusCode, body)
	}
	if err := pg.stop(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/tasks", ""},
		{"POST", "/v1/tasks", `{"type":"build"}`},
		{"GET", "/v1/processes", ""},
	} {
		resp, body := call(c.method, c.path, c.body)
		var e cks.ErrorBody
		json.Unmarshal([]byte(body), &e) //nolint:errcheck // checked below
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			e.Error.Code != cks.CodeStorageUnavailable || !strings.Contains(e.Error.Message, "unavailable") {
			t.Errorf("%s %s with the database down: %d, Retry-After %q, %s; want 503 storage_unavailable with Retry-After",
				c.method, c.path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	for name, sess := range map[string]*mcp.ClientSession{"proxy": proxy, "embedded": embedded} {
		res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_tasks", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(toolText(res), "unavailable") {
			t.Errorf("%s list_tasks with the database down: %v, %+v %q; want a tool error saying unavailable", name, err, res, toolTextOf(res))
		}
	}
	if err := pg.start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hub to list tasks again once the database is back", func() bool {
		resp, _ := call("GET", "/v1/tasks", "")
		return resp.StatusCode == http.StatusOK
	})
	waitFor(t, "the embedded MCP server to list tasks again", func() bool {
		res, err := embedded.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_tasks", Arguments: map[string]any{}})
		return err == nil && !res.IsError
	})
}

// toolTextOf is toolText of a result that may be nil.
func toolTextOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	return toolText(res)
}
