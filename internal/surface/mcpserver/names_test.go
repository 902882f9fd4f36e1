package mcpserver_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestStateIsOneOrAList: list_tasks takes what a model naturally sends for
// state — one state (any case) or a list — and its schema says so, with
// the ledger's states as an enum on both; a state that is none is a tool
// error naming the field, as is a value that is neither.
func TestStateIsOneOrAList(t *testing.T) {
	e := newEnv(t)
	mcpserver.Register(e.srv, &ops.Services{Tasks: e.store.Tasks})
	cs := connectInMemory(t, e.srv)
	open, _, err := e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "names"})
	if err != nil {
		t.Fatal(err)
	}
	for _, state := range []any{"OPEN", "open", []string{"OPEN"}, []string{"RUNNING", "OPEN"}} {
		page := structured[cks.TaskPage](t, call(t, cs, mcpserver.ToolListTasks, map[string]any{"state": state}))
		if len(page.Tasks) != 1 || page.Tasks[0].ID != open.ID {
			t.Errorf("list_tasks state %v: %+v, want the OPEN task", state, page.Tasks)
		}
	}
	page := structured[cks.TaskPage](t, call(t, cs, mcpserver.ToolListTasks, map[string]any{"state": "STOPPED"}))
	if len(page.Tasks) != 0 {
		t.Errorf("list_tasks state STOPPED: %+v, want none", page.Tasks)
	}
	for _, bad := range []any{"DONE", 5, map[string]any{"state": "OPEN"}} {
		res := call(t, cs, mcpserver.ToolListTasks, map[string]any{"state": bad})
		if msg := text(t, res); !res.IsError || !strings.Contains(msg, "state") {
			t.Errorf("list_tasks state %v: IsError %v %q, want a tool error naming state", bad, res.IsError, msg)
		}
	}

	tools, err := cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == mcpserver.ToolListTasks })
	state := schemaOf(t, tools.Tools[i].InputSchema).Properties["state"]
	var want []any
	for _, st := range ledger.All {
		want = append(want, string(st))
	}
	if state == nil || len(state.AnyOf) != 2 || state.AnyOf[0].Type != "string" || !slices.Equal(state.AnyOf[0].Enum, want) ||
		state.AnyOf[1].Type != "array" || !slices.Equal(state.AnyOf[1].Items.Enum, want) {
		t.Fatalf("list_tasks' state schema %+v, want a state or a list of states, each an enum of %v", state, want)
	}
}
