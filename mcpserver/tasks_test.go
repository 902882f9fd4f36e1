package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/mcpserver"
)

// toolText returns the text content of a tool result.
func toolText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("tool result has no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func structured[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", toolText(t, res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

type taskOut struct {
	ID      int64           `json:"task_id"`
	State   string          `json:"state"`
	Payload json.RawMessage `json:"payload"`
	Answer  string          `json:"answer"`
	Events  []struct {
		To    string `json:"to"`
		Actor string `json:"actor"`
	} `json:"events"`
}

func TestTaskTools(t *testing.T) {
	e := newEnv(t)
	mcpserver.AddTaskTools(e.srv, e.store)
	cs := connectInMemory(t, e.srv)

	created := structured[struct {
		Task    taskOut `json:"task"`
		Created bool    `json:"created"`
	}](t, call(t, cs, mcpserver.ToolCreateTask, map[string]any{
		"type": "research", "title": "t", "priority": 7, "payload": map[string]any{"q": []int{1, 2}}, "dedupe_key": "k",
	}))
	if !created.Created || created.Task.State != "OPEN" || !strings.Contains(string(created.Task.Payload), `"q"`) {
		t.Fatalf("create_task = %+v", created)
	}
	id := created.Task.ID
	dup := structured[struct {
		Task    taskOut `json:"task"`
		Created bool    `json:"created"`
	}](t, call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "research", "dedupe_key": "k"}))
	if dup.Created || dup.Task.ID != id {
		t.Fatalf("dedupe create_task = %+v, want task %d back", dup, id)
	}

	page := structured[struct {
		Tasks []taskOut `json:"tasks"`
	}](t, call(t, cs, mcpserver.ToolListTasks, map[string]any{"state": []string{"open"}}))
	if len(page.Tasks) != 1 || page.Tasks[0].ID != id {
		t.Fatalf("list_tasks = %+v", page)
	}

	got := structured[taskOut](t, call(t, cs, mcpserver.ToolGetTask, map[string]any{"task_id": id}))
	if got.ID != id || len(got.Events) != 1 || got.Events[0].Actor != "mcp" {
		t.Fatalf("get_task = %+v, want the creation event by mcp", got)
	}

	cancelled := structured[taskOut](t, call(t, cs, mcpserver.ToolCancelTask, map[string]any{"task_id": id, "reason": "dup"}))
	if cancelled.State != "CANCELLED" {
		t.Fatalf("cancel_task = %+v", cancelled)
	}

	errorsCases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{mcpserver.ToolGetTask, map[string]any{"task_id": 999}, "999"},
		{mcpserver.ToolAnswerTask, map[string]any{"task_id": id, "text": "x"}, "CANCELLED"},
		{mcpserver.ToolAnswerTask, map[string]any{"task_id": id, "text": ""}, "text"},
		{mcpserver.ToolListTasks, map[string]any{"state": []string{"DONE"}}, "unknown state"},
		{mcpserver.ToolCreateTask, map[string]any{"type": ""}, "type"},
		{mcpserver.ToolCreateTask, map[string]any{"type": "t", "depends_on": []int{424242}}, "depends_on"},
	}
	for _, c := range errorsCases {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(toolText(t, res), c.want) {
			t.Errorf("%s(%v): IsError=%v %q, want a tool error mentioning %q", c.tool, c.args, res.IsError, toolText(t, res), c.want)
		}
	}
}
