package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// mcpAs connects an MCP client to the fixture's /mcp with token.
func (f *fixture) mcpAs(t testing.TB, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "api-test", Version: "v0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token: token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolText calls tool with args and returns the text of its answer and
// whether it is a tool error.
func toolText(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("%s %v: %v %+v", tool, args, err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// TestPermissionBeforeInput: a caller without an operation's permission is
// refused as forbidden whatever its input — an unknown field, a wrong type,
// a malformed path id, text no store takes, an unknown query parameter —
// over HTTP and MCP alike, so it learns nothing of the input's rules; a
// caller holding the permission gets the 400 naming the field, and nothing
// changes either way.
func TestPermissionBeforeInput(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newHubFixture(t, open)
		task := f.enqueue(t)
		id := itoa(task.ID)
		reader := f.tokenWith(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermRead})
		creator := f.tokenWith(t, cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermCreate})
		child := f.tokenWith(t, cks.Grant{Resource: auth.TaskResource(task.ID), Permission: auth.PermCreate})
		for _, c := range []struct {
			name, method, path, body string
			denied                   string // a token without the permission
			perm, res                string // what the refusal names
			allowed                  string // a token with it
			field                    string // what its 400 names
		}{
			{"unknown body field", "POST", "/v1/tasks/" + id + "/stop", `{"reason":"x","bogus":1}`,
				reader, "stop", "/tasks/" + id, f.token, "bogus"},
			{"wrong type", "POST", "/v1/tasks", `{"type":"t","priority":"high"}`,
				reader, "create", "/tasks", f.token, "priority"},
			{"malformed path id", "POST", "/v1/tasks/abc/stop", `{"reason":"x"}`,
				reader, "stop", "/tasks/{task_id}", f.token, "task_id"},
			{"NUL in a field", "POST", "/v1/tasks/" + id + "/cancel", `{"reason":"a\u0000b"}`,
				reader, "cancel", "/tasks/" + id, f.token, "reason"},
			{"unknown query parameter", "GET", "/v1/tasks?bogus=1", "",
				creator, "read", "/tasks", f.token, "bogus"},
			{"body not JSON", "POST", "/v1/tasks/" + id + "/start", `{"reason":`,
				reader, "start", "/tasks/" + id, f.token, "JSON"},
			// A child's creator holds create on its parent: it is told what
			// is wrong with its input.
			{"child with an unknown field", "POST", "/v1/tasks", `{"type":"t","parent_id":` + id + `,"bogus":1}`,
				reader, "create", "/tasks/" + id, child, "bogus"},
		} {
			t.Run(c.name, func(t *testing.T) {
				status, body := f.do(t, c.denied, c.method, c.path, c.body)
				wantForbidden(t, status, body, c.perm, c.res)
				status, body = f.do(t, c.allowed, c.method, c.path, c.body)
				if e := decodeError(t, body); status != http.StatusBadRequest || !strings.Contains(e.Error.Message, c.field) {
					t.Fatalf("with the permission: %d %s, want 400 naming %s", status, body, c.field)
				}
				if st, n := f.stateOf(t, task.ID), f.taskCount(t); st != "OPEN" || n != 1 {
					t.Fatalf("after refused calls: task %s, %d tasks; want OPEN, 1", st, n)
				}
			})
		}

		readerMCP, adminMCP := f.mcpAs(t, reader), f.mcpAs(t, f.token)
		for _, c := range []struct {
			name, tool string
			args       map[string]any
			refusal    string // the reader's tool error
			field      string // what the admin's names
		}{
			{"unknown argument", mcpserver.ToolStopTask, map[string]any{"task_id": task.ID, "reason": "x", "bogus": 1},
				"needs stop on /tasks/" + id, "bogus"},
			{"wrong type of id", mcpserver.ToolStopTask, map[string]any{"task_id": "x"},
				"needs stop on /tasks/{task_id}", "task_id"},
			{"wrong type", mcpserver.ToolCreateTask, map[string]any{"type": "t", "priority": "high"},
				"needs create on /tasks", "priority"},
			{"NUL in an argument", mcpserver.ToolCancelTask, map[string]any{"task_id": task.ID, "reason": "a\x00b"},
				"needs cancel on /tasks/" + id, "reason"},
		} {
			t.Run("mcp "+c.name, func(t *testing.T) {
				text, isErr := toolText(t, readerMCP, c.tool, c.args)
				if !isErr || !strings.HasPrefix(text, "forbidden: ") || !strings.Contains(text, c.refusal) {
					t.Fatalf("%s as a reader: %q (error %v), want forbidden, %s", c.tool, text, isErr, c.refusal)
				}
				text, isErr = toolText(t, adminMCP, c.tool, c.args)
				if !isErr || !strings.Contains(text, c.field) || strings.Contains(text, "forbidden") {
					t.Fatalf("%s as the admin: %q (error %v), want the error naming %s", c.tool, text, isErr, c.field)
				}
				if st, n := f.stateOf(t, task.ID), f.taskCount(t); st != "OPEN" || n != 1 {
					t.Fatalf("after refused calls: task %s, %d tasks; want OPEN, 1", st, n)
				}
			})
		}
	})
}
