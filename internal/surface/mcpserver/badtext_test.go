package mcpserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestToolsRefuseBadText: a tool argument that reaches the store with text
// Postgres cannot store (a NUL byte: raw invalid UTF-8 cannot arrive in
// the JSON of a call) is a tool error naming the argument, on both
// backends, and nothing is written (Postgres failed with a database error,
// SQLite stored it).
func TestToolsRefuseBadText(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		clk := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(clk))
		srv := mcpserver.NewServer("v-test", &ops.Services{Liveness: liveness.NewService(s.Driver(), clk)})
		mcpserver.Register(srv, &ops.Services{Tasks: s.Tasks})
		mcpserver.Register(srv, &ops.Services{Objects: s.Objects})
		cs := connectInMemory(t, srv)

		open1, _ := backendtest.Into(t, s, cks.TaskOpen, "mcp-open")
		running, _ := backendtest.Into(t, s, cks.TaskRunning, "mcp-run")
		asking, _ := backendtest.Into(t, s, cks.TaskNeedsInput, "mcp-input")
		stopped, _ := backendtest.Into(t, s, cks.TaskStopped, "mcp-stopped")

		const bad = "nul\x00byte"
		cases := []struct {
			tool, field string
			args        map[string]any
		}{
			{mcpserver.ToolCreateTask, "type", map[string]any{"type": bad}},
			{mcpserver.ToolCreateTask, "title", map[string]any{"type": "t", "title": bad}},
			{mcpserver.ToolCreateTask, "description", map[string]any{"type": "t", "description": bad}},
			{mcpserver.ToolCreateTask, "dedupe_key", map[string]any{"type": "t", "dedupe_key": bad}},
			{mcpserver.ToolCreateTask, "payload", map[string]any{"type": "t", "payload": map[string]any{"q": bad}}},
			{mcpserver.ToolCreateTask, "payload", map[string]any{"type": "t", "payload": map[string]any{bad: 1}}},
			{mcpserver.ToolListTasks, "type", map[string]any{"type": []string{"x", bad}}},
			{mcpserver.ToolAnswerTask, "text", map[string]any{"task_id": asking.ID, "text": bad}},
			{mcpserver.ToolCancelTask, "reason", map[string]any{"task_id": open1.ID, "reason": bad}},
			{mcpserver.ToolStopTask, "reason", map[string]any{"task_id": running.ID, "reason": bad}},
			{mcpserver.ToolStartTask, "reason", map[string]any{"task_id": stopped.ID, "reason": bad}},
			{mcpserver.ToolUpdateTask, "title", map[string]any{"task_id": open1.ID, "title": bad}},
			{mcpserver.ToolUpdateTask, "acceptance_criteria", map[string]any{"task_id": running.ID, "acceptance_criteria": bad}},
			{mcpserver.ToolUpdateTask, "metadata", map[string]any{"task_id": open1.ID, "metadata": map[string]any{"owner": bad}}},
			{mcpserver.ToolUpdateTask, "payload", map[string]any{"task_id": running.ID, "payload": []any{bad}}},
			{mcpserver.ToolUpdateTask, "add_children[0].title", map[string]any{"task_id": open1.ID,
				"add_children": []any{map[string]any{"type": "c", "title": bad}}}},
			{mcpserver.ToolSubmitResearch, "question", map[string]any{"question": "why " + bad}},
			{mcpserver.ToolSubmitResearch, "corpus", map[string]any{"question": "why?", "corpus": "/data/" + bad}},
		}
		before := backendtest.State(t, s)
		for _, c := range cases {
			what := fmt.Sprintf("%s with a bad %s", c.tool, c.field)
			res := call(t, cs, c.tool, c.args)
			if !res.IsError {
				t.Errorf("%s: succeeded, want a tool error", what)
			} else if got := toolText(t, res); !strings.HasPrefix(got, "invalid "+c.field+": expected ") {
				t.Errorf("%.200s: tool error %.300q, want one naming %s", what, got, c.field)
			}
			after := backendtest.State(t, s)
			backendtest.DiffState(t, what, before, after)
			before = after
		}
	})
}
